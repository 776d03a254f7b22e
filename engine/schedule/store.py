"""The schedule's state: next runs, claims, the history of every run, per device, in SQLite or PostgreSQL.

    tasks     (device, task) -> next_run, state, last result, failures in a row, why it waits
    claims    (device, task, due) -> who runs it (owner), since when, attempt: one row per due time, ever
    history   every run: device, task, due, started, finished, status, ok, text, who ran it (scheduler or a tool)
    devices   device -> which scheduler drives it (owner, host, heartbeat, lease), paused
    events    what a person should know: missed runs, restarts, lost devices, clock jumps, puts-off
    requests  run-now requests from `schedule run-now`
    migrations  the schema versions applied; meta holds the current one

Claiming a run is one transaction that locks the device's row (BEGIN IMMEDIATE on SQLite; SELECT ... FOR UPDATE,
and SKIP LOCKED for the task's row, on PostgreSQL): it succeeds only while the task's next_run is still that due
time and no live owner holds the claim, so a due time is run at most once to success, by one process, whatever
crashes or how many hosts share the database. An owner is alive while its process instance runs, when it is of
this host (engine.schedule.hosts), else while its lease holds: its last heartbeat on the DATABASE's clock is
younger than LEASE_S, so no host's clock, however skewed, decides it (on PostgreSQL a lease counts from the
server's start at the earliest: a server down for minutes cut every owner off alike and hands no device away). A
claim of a dead owner is taken over as the next attempt of the same due time. Due times are the scheduler's clock
(epoch seconds; virtual in `simulate`). Which database it is stays below this module (engine.schedule.backends).
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core.errors import ScheduleError
from engine.schedule.backends import database_exists, database_url, default_path, open_backend, read_url_file
from engine.schedule.hosts import alive_here, host_id, new_owner, owner_host

__all__ = ["Claim", "Store", "database_exists", "database_url", "default_path", "new_owner", "open_backend",
           "read_url_file", "LEASE_S"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
LEASE_S = 120.0
"""A scheduler renews its device's lease at least this often; an owner of another host silent for longer is dead."""

_MIGRATIONS: dict[int, str] = {
    1: """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
    device TEXT NOT NULL, task TEXT NOT NULL, next_run {float} NOT NULL, state TEXT NOT NULL DEFAULT 'waiting',
    last_run {float}, last_status TEXT, last_text TEXT, failures INTEGER NOT NULL DEFAULT 0, reason TEXT,
    PRIMARY KEY (device, task));
CREATE TABLE IF NOT EXISTS claims (
    device TEXT NOT NULL, task TEXT NOT NULL, due {float} NOT NULL, owner TEXT NOT NULL, claimed {float} NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 1, finished {float}, PRIMARY KEY (device, task, due));
CREATE TABLE IF NOT EXISTS history (
    id {serial}, device TEXT NOT NULL, task TEXT NOT NULL, due {float}, started {float} NOT NULL,
    finished {float} NOT NULL, status TEXT NOT NULL, ok INTEGER NOT NULL, text TEXT, attempt INTEGER NOT NULL,
    owner TEXT NOT NULL, via TEXT NOT NULL, data TEXT);
CREATE INDEX IF NOT EXISTS history_by_task ON history (device, task, finished);
CREATE TABLE IF NOT EXISTS devices (
    device TEXT PRIMARY KEY, owner TEXT, pid INTEGER, host TEXT, heartbeat {float},
    paused INTEGER NOT NULL DEFAULT 0, state TEXT, running TEXT);
CREATE TABLE IF NOT EXISTS events (
    id {serial}, at {float} NOT NULL, device TEXT, kind TEXT NOT NULL, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS requests (id {serial}, device TEXT, task TEXT NOT NULL, at {float} NOT NULL)
""",
    # 2: leases on the database's clock (a fleet of hosts), and the record of migrations.
    2: """
CREATE TABLE IF NOT EXISTS migrations (version INTEGER PRIMARY KEY, applied {float} NOT NULL);
ALTER TABLE devices ADD COLUMN lease {float};
ALTER TABLE claims ADD COLUMN lease {float}
""",
}


@dataclass(frozen=True)
class Claim:
    device: str
    task: str
    due: float
    owner: str
    attempt: int


def _version(value: Any, where: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ScheduleError(f"{where}: its schema version {str(value)[:40]!r} is not a number, so it is no schedule "
                            "database of this engine (or it was damaged); it is left as it is: move it aside or "
                            "use another --db", path=where) from None


class Store:
    """One database shared by every scheduler process, on every host, and the tools; thread-safe (one connection
    per thread). `url`: a path, sqlite:///PATH or postgresql://...; `create=False` refuses to make a new one (the
    controls: a command that only reads or asks must not leave a database behind)."""

    def __init__(self, url: str | Path | None = None, *, create: bool = True) -> None:
        self.backend = open_backend(url if url is not None else default_path())
        self.path = self.backend.path
        self.where = self.backend.where
        self.NOW = self.backend.NOW
        if self.path is not None and self.path.is_dir():
            raise ScheduleError(f"{self.path} is a folder: name the schedule's database file (for example "
                                f"{self.path / 'schedule.sqlite3'})", path=str(self.path))
        found = self._found_version()
        if found is None and not create:
            raise ScheduleError(f"no schedule database at {self.where} yet: start `python -m engine schedule` "
                                "first (or name another --db)", path=self.where)
        if found is not None and found > SCHEMA_VERSION:
            raise ScheduleError(f"{self.where} was written by a newer version (schema {found}); "
                                f"upgrade the engine or use another --db", path=self.where)
        if found is None or found < SCHEMA_VERSION:
            self._migrate()

    # --------------------------------------------------------------------------------------------- schema

    def _found_version(self) -> int | None:
        """The schema version of an existing database, read before anything is written; None when it is new."""
        backend = self.backend
        if backend.kind == "sqlite":
            rows = backend.peek("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'meta'")
            if not rows:
                return None
            rows = backend.peek("SELECT value FROM meta WHERE key = 'schema'")
            return _version(rows[0][0], self.where) if rows else None
        rows = backend.read("SELECT to_regclass('meta') IS NOT NULL AS here")
        if not rows[0]["here"]:
            return None
        rows = backend.read("SELECT value FROM meta WHERE key = 'schema'")
        return _version(rows[0]["value"], self.where) if rows else None

    def _migrate(self) -> None:
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ScheduleError(f"cannot make the folder of the schedule database {self.path}: "
                                    f"{exc.strerror or exc}; point ENGINE_HOME or --db at a writable place",
                                    path=str(self.path)) from None
        with self.backend.tx() as db:
            if self.backend.kind == "postgresql":
                db.run("SELECT pg_advisory_xact_lock(738201)")  # hosts starting together migrate one at a time
            have = 0
            if self._has(db, "meta"):
                row = db.one("SELECT value FROM meta WHERE key = 'schema'")
                have = _version(row[0], self.where) if row else 0
            if have > SCHEMA_VERSION:
                raise ScheduleError(f"{self.where} was written by a newer version (schema {have})", path=self.where)
            for version in range(have + 1, SCHEMA_VERSION + 1):
                ddl = _MIGRATIONS[version].format(float="DOUBLE PRECISION", serial=self.backend.SERIAL)
                for statement in filter(str.strip, ddl.split(";")):
                    db.run(statement)
                if version >= 2:  # the table of migrations itself came with version 2
                    db.run(f"INSERT INTO migrations (version, applied) VALUES (?, {self.NOW}) ON CONFLICT (version) "
                           "DO NOTHING", (version,))
                db.run("INSERT INTO meta (key, value) VALUES ('schema', ?) ON CONFLICT (key) DO UPDATE SET "
                       "value = excluded.value", (str(version),))

    def _has(self, db: Any, table: str) -> bool:
        if self.backend.kind == "sqlite":
            return db.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)) is not None
        return db.one("SELECT to_regclass(?) IS NOT NULL", (table,))[0]

    def close(self) -> None:
        """Close every connection of this store, whichever thread opened it."""
        self.backend.close_all()

    def close_thread(self) -> None:
        """Close the calling thread's connection only (a thread that ends while the store goes on)."""
        self.backend.close()

    def _read(self, sql: str, args: tuple = ()) -> list[dict[str, Any]]:
        return self.backend.read(sql, args)

    # --------------------------------------------------------------------------------------------- liveness

    def _owner_alive(self, db: Any, device: str, holder: str | None) -> bool:
        """Whether `holder` lives: its process instance, when of this host; else its lease on the database's clock
        (its device's heartbeat, or the claim it holds)."""
        here = alive_here(holder)
        if here is not None:
            return here
        held = self.backend.held
        age = db.one(f"SELECT {held('lease')} FROM devices WHERE device = ? AND owner = ?", (device, holder))
        if age and age[0] is not None and age[0] < LEASE_S:
            return True
        age = db.one(f"SELECT {held('MAX(lease)')} FROM claims WHERE device = ? AND owner = ? "
                     "AND finished IS NULL", (device, holder))
        return bool(age and age[0] is not None and age[0] < LEASE_S)

    # --------------------------------------------------------------------------------------------- devices

    def take_device(self, device: str, owner: str, now: float) -> None:
        """Make `owner` the one scheduler of `device`.

        Raises:
            ScheduleError: another scheduler that is alive drives it (its process runs on this host, or its lease
                holds when it is of another host).
        """
        with self.backend.tx() as db:
            db.run("INSERT INTO devices (device) VALUES (?) ON CONFLICT (device) DO NOTHING", (device,))
            row = db.one(f"SELECT owner FROM devices WHERE device = ?{self.backend.LOCK}", (device,))
            if row and row[0] and row[0] != owner and self._owner_alive(db, device, row[0]):
                raise ScheduleError(f"device {device} is already driven by another scheduler ({row[0]}, host "
                                    f"{owner_host(row[0])}); stop it first: one scheduler per device", device=device,
                                    owner=row[0])
            db.run(f"UPDATE devices SET owner = ?, pid = ?, host = ?, heartbeat = ?, lease = {self.NOW}, "
                   "running = NULL, state = 'starting' WHERE device = ?", (owner, os.getpid(), owner_host(owner), now,
                                                                        device))

    def release_device(self, device: str, owner: str) -> None:
        with self.backend.tx() as db:
            db.run("UPDATE devices SET owner = NULL, running = NULL, state = 'stopped' "
                   "WHERE device = ? AND owner = ?", (device, owner))

    def beat(self, device: str, owner: str, now: float, state: str | None = None) -> bool:
        """Renew `owner`'s lease of `device`; False when it is no longer its owner (another scheduler took it over
        after the lease ran out)."""
        with self.backend.tx() as db:
            db.run(f"UPDATE devices SET heartbeat = ?, lease = {self.NOW}, state = COALESCE(?, state) "
                   "WHERE device = ? AND owner = ?", (now, state, device, owner))
            return db.one("SELECT 1 FROM devices WHERE device = ? AND owner = ?", (device, owner)) is not None

    def set_paused(self, device: str | None, paused: bool, host: str | None = None) -> list[str]:
        """Pause or resume one device, the devices last driven by `host`, or (both None) every device known; the
        devices changed."""
        with self.backend.tx() as db:
            if device is not None:
                db.run("INSERT INTO devices (device) VALUES (?) ON CONFLICT (device) DO NOTHING", (device,))
            where, args = self._which(device, host)
            names = [r[0] for r in db.all(f"SELECT device FROM devices {where} ORDER BY device", args)]
            db.run(f"UPDATE devices SET paused = ? {where}", (int(paused), *args))
        return names

    @staticmethod
    def _which(device: str | None, host: str | None) -> tuple[str, tuple]:
        if device is not None:
            return "WHERE device = ?", (device,)
        if host is not None:
            return "WHERE host = ?", (host,)
        return "", ()

    def paused(self, device: str) -> bool:
        rows = self._read("SELECT paused FROM devices WHERE device = ?", (device,))
        return bool(rows and rows[0]["paused"])

    # --------------------------------------------------------------------------------------------- tasks

    def ensure_tasks(self, device: str, tasks: list[str], now: float) -> list[str]:
        """Add the scheduled tasks this device has no row for, due at once; the rows of tasks no longer scheduled
        stay (their history is kept) but are not run. The tasks added."""
        with self.backend.tx() as db:
            db.run("INSERT INTO devices (device) VALUES (?) ON CONFLICT (device) DO NOTHING", (device,))
            known = {r[0] for r in db.all("SELECT task FROM tasks WHERE device = ?", (device,))}
            added = [t for t in tasks if t not in known]
            db.many("INSERT INTO tasks (device, task, next_run) VALUES (?, ?, ?) ON CONFLICT (device, task) "
                    "DO NOTHING", [(device, t, now) for t in added])
        return added

    def tasks(self, device: str) -> dict[str, dict[str, Any]]:
        return {r["task"]: r for r in self._read("SELECT * FROM tasks WHERE device = ?", (device,))}

    def set_next(self, device: str, task: str, next_run: float, reason: str | None = None) -> None:
        with self.backend.tx() as db:
            db.run("UPDATE tasks SET next_run = ?, reason = ? WHERE device = ? AND task = ?",
                   (next_run, reason, device, task))

    # --------------------------------------------------------------------------------------------- claims

    def _lock_device(self, db: Any, device: str) -> None:
        """Lock the device's row first: every transaction that writes a device's claims takes it before any other
        row, so two of them wait in line instead of deadlocking (PostgreSQL; SQLite's BEGIN IMMEDIATE already did)."""
        db.run("INSERT INTO devices (device) VALUES (?) ON CONFLICT (device) DO NOTHING", (device,))
        db.one(f"SELECT device FROM devices WHERE device = ?{self.backend.LOCK}", (device,))

    def claim(self, device: str, task: str, due: float, owner: str, now: float) -> Claim | None:
        """Claim the run of `task` for due time `due`, in one transaction; None when it is not (or no longer) due at
        `due`, another claim of this device is being made, or a live owner holds it. A stale claim (its owner died)
        is taken over as the next attempt."""
        lock, skip = self.backend.LOCK, self.backend.SKIP  # locks in one order: device, task, claim
        with self.backend.tx() as db:
            self._lock_device(db, device)
            row = db.one(f"SELECT next_run FROM tasks WHERE device = ? AND task = ?{skip}", (device, task))
            if row is None or row[0] != due or due > now or self._busy(db, device, owner, task):
                return None
            held = db.one(f"SELECT owner, attempt, finished FROM claims WHERE device = ? AND task = ? AND due = ?"
                          f"{lock}", (device, task, due))
            attempt = 1
            if held is not None:
                holder, attempt, finished = held
                if finished is not None:
                    return None
                if holder != owner and self._owner_alive(db, device, holder):
                    return None
                attempt += 1
                db.run(f"UPDATE claims SET owner = ?, claimed = ?, attempt = ?, lease = {self.NOW} WHERE device = ? "
                       "AND task = ? AND due = ?", (owner, now, attempt, device, task, due))
            else:
                db.run(f"INSERT INTO claims (device, task, due, owner, claimed, lease) VALUES (?, ?, ?, ?, ?, "
                       f"{self.NOW})", (device, task, due, owner, now))
            db.run("UPDATE tasks SET state = 'running' WHERE device = ? AND task = ?", (device, task))
            db.run("UPDATE devices SET running = ? WHERE device = ?", (task, device))
        return Claim(device, task, due, owner, attempt)

    def renew(self, claim: Claim) -> None:
        """Renew the lease of a claim while its run goes on (a run may outlast LEASE_S)."""
        with self.backend.tx() as db:
            self._lock_device(db, claim.device)
            db.run(f"UPDATE claims SET lease = {self.NOW} WHERE device = ? AND task = ? AND due = ? AND owner = ?",
                   (claim.device, claim.task, claim.due, claim.owner))
            db.run(f"UPDATE devices SET lease = {self.NOW} WHERE device = ? AND owner = ?", (claim.device, claim.owner))

    def busy(self, device: str, owner: str, now: float) -> str | None:
        """The task another live owner runs on `device` now (one device runs one task at a time), or None."""
        with self.backend.tx() as db:
            return self._busy(db, device, owner)

    def _busy(self, db: Any, device: str, owner: str, other_than: str = "") -> str | None:
        for task, holder in db.all("SELECT task, owner FROM claims WHERE device = ? AND finished IS NULL "
                                   "AND owner != ? AND task != ?", (device, owner, other_than)):
            if self._owner_alive(db, device, holder):
                return task
        return None

    def finish(self, claim: Claim, *, started: float, now: float, status: str, ok: bool, text: str,
               next_run: float, failures: int, reason: str | None, via: str = "scheduler",
               data: dict[str, Any] | None = None) -> bool:
        """Record the end of a claimed run and the task's next due time, in one transaction. False (nothing written)
        when the claim is no longer this owner's: another process took it over."""
        with self.backend.tx() as db:
            self._lock_device(db, claim.device)
            held = db.one(f"SELECT owner, finished FROM claims WHERE device = ? AND task = ? AND due = ?"
                          f"{self.backend.LOCK}", (claim.device, claim.task, claim.due))
            if held is None or held[0] != claim.owner or held[1] is not None:
                return False
            if ok or next_run != claim.due:
                db.run("UPDATE claims SET finished = ? WHERE device = ? AND task = ? AND due = ?",
                       (now, claim.device, claim.task, claim.due))
            db.run("INSERT INTO history (device, task, due, started, finished, status, ok, text, attempt, owner, "
                   "via, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (claim.device, claim.task, claim.due, started, now, status, int(ok), text[:2000],
                    claim.attempt, claim.owner, via, json.dumps(data, default=str)[:4000] if data else None))
            db.run("UPDATE tasks SET next_run = ?, state = 'waiting', last_run = ?, last_status = ?, "
                   "last_text = ?, failures = ?, reason = ? WHERE device = ? AND task = ?",
                   (next_run, now, status, text[:500], failures, reason, claim.device, claim.task))
            db.run("UPDATE devices SET running = NULL WHERE device = ?", (claim.device,))
        return True

    def record_off_schedule(self, device: str, task: str, *, started: float, now: float, status: str, ok: bool,
                            text: str, owner: str, via: str) -> None:
        """A run of a task that was not due (a tool called it between due times): history only."""
        with self.backend.tx() as db:
            db.run("INSERT INTO history (device, task, due, started, finished, status, ok, text, attempt, owner, "
                   "via) VALUES (?, ?, NULL, ?, ?, ?, ?, ?, 1, ?, ?)",
                   (device, task, started, now, status, int(ok), text[:2000], owner, via))

    # --------------------------------------------------------------------------------------------- events

    def event(self, now: float, device: str | None, kind: str, text: str) -> None:
        with self.backend.tx() as db:
            db.run("INSERT INTO events (at, device, kind, text) VALUES (?, ?, ?, ?)", (now, device, kind, text))

    def request_run(self, device: str | None, task: str, now: float, host: str | None = None) -> list[str]:
        """Ask the scheduler of `device` (or of every device last driven by `host`; both None: of every device the
        database knows) to run `task` at once; the devices asked."""
        with self.backend.tx() as db:
            if device is not None:
                devices = [device]
            elif host is not None:
                devices = [r[0] for r in db.all("SELECT device FROM devices WHERE host = ? ORDER BY device", (host,))]
            else:
                devices = sorted({r[0] for r in db.all("SELECT device FROM devices UNION SELECT device FROM tasks")})
            db.many("INSERT INTO requests (device, task, at) VALUES (?, ?, ?)", [(n, task, now) for n in devices])
        return devices

    def take_requests(self, device: str) -> list[str]:
        """The run-now requests for `device`, removed as they are taken."""
        with self.backend.tx() as db:
            rows = db.all("SELECT task FROM requests WHERE device = ? ORDER BY id", (device,))
            db.run("DELETE FROM requests WHERE device = ?", (device,))
        return [r[0] for r in rows]

    # --------------------------------------------------------------------------------------------- reading

    def history(self, device: str | None = None, limit: int = 100000) -> list[dict[str, Any]]:
        where, args = ("WHERE device = ?", (device,)) if device else ("", ())
        return self._read(f"SELECT * FROM history {where} ORDER BY id LIMIT ?", (*args, limit))

    def events(self, device: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        where, args = ("WHERE device = ? OR device IS NULL", (device,)) if device else ("", ())
        return list(reversed(self._read(f"SELECT * FROM events {where} ORDER BY id DESC LIMIT ?", (*args, limit))))

    def devices(self) -> list[dict[str, Any]]:
        """Each device with `alive` (its scheduler lives) and `lease_age_s` (seconds since its last heartbeat, on
        the database's clock)."""
        rows = self._read(f"SELECT *, {self.NOW} - lease AS lease_age_s, {self.backend.held('lease')} AS held_s "
                          "FROM devices ORDER BY device")
        for row in rows:
            here = alive_here(row["owner"])
            age = row.pop("held_s")
            row["alive"] = bool(row["owner"]) and (here if here is not None else age is not None and age < LEASE_S)
        return rows

    def status(self, now: float, failures: int = 10) -> dict[str, Any]:
        """Everything `schedule status` shows, per device: its host, whether its scheduler lives and when it last
        beat, next runs, what runs, recent failures and events."""
        out: dict[str, Any] = {"database": self.where, "host": host_id(), "devices": []}
        devices = {r["device"]: r for r in self.devices()}
        names = [*devices, *sorted({r["device"] for r in self._read("SELECT DISTINCT device FROM tasks")} - set(devices))]
        for name in names:
            dev = devices.get(name) or {}
            alive = bool(dev.get("alive"))
            tasks = sorted(self.tasks(name).values(), key=lambda r: r["next_run"])
            age = dev.get("lease_age_s")
            state = dev.get("state") if alive else (
                None if not dev.get("heartbeat") else
                f"no scheduler (the last one{' on ' + dev['host'] if dev.get('host') else ''} stopped"
                + (f", last heartbeat {age:.0f} s ago)" if age is not None else ")"))
            out["devices"].append({
                "device": name, "host": dev.get("host"), "paused": bool(dev.get("paused")),
                "scheduler": dev.get("owner") if alive else None, "alive": alive,
                "state": state, "running": dev.get("running") if alive else None,
                "last_heartbeat": dev.get("heartbeat"), "lease_age_s": None if age is None else round(age, 1),
                "tasks": [{"task": r["task"], "next_run": r["next_run"], "due_in_s": round(r["next_run"] - now, 1),
                           "state": r["state"] if alive or r["state"] != "running" else "waiting",
                           "last_status": r["last_status"], "last_run": r["last_run"], "failures": r["failures"],
                           "reason": r["reason"]} for r in tasks],
                "recent_failures": self._read(
                    "SELECT task, due, finished, status, text, attempt FROM history WHERE device = ? AND ok = 0 "
                    "ORDER BY id DESC LIMIT ?", (name, failures)),
                "events": self.events(name, 10),
            })
        return out
