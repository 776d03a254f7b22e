"""The schedule's state in SQLite (stdlib sqlite3, WAL): next runs, claims, the history of every run, per device.

    tasks     (device, task) -> next_run, state, last result, failures in a row, why it waits
    claims    (device, task, due) -> who runs it (owner), since when, attempt: one row per due time, ever
    history   every run: device, task, due, started, finished, status, ok, text, who ran it (scheduler or a tool)
    devices   device -> which scheduler drives it (owner, pid, host, heartbeat), paused
    events    what a person should know: missed runs, restarts, lost devices, clock jumps, puts-off
    requests  run-now requests from `schedule run-now`

Claiming a run is one transaction (BEGIN IMMEDIATE): it succeeds only while the task's next_run is still that due
time and no live owner holds the claim, so a due time is run at most once to success, by one process, whatever
crashes or how many processes share the file. A claim whose owner died (kill -9: its pid is gone from this host,
or its heartbeat is older than the lease) is taken over as the next attempt of the same due time. Times are the
scheduler's clock (epoch seconds; a virtual clock in `schedule simulate`).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core.errors import ScheduleError

log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 5000
LEASE_S = 120.0
"""A scheduler renews its device's heartbeat at least this often; a claim of an owner silent for longer is stale."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
    device TEXT NOT NULL, task TEXT NOT NULL, next_run REAL NOT NULL, state TEXT NOT NULL DEFAULT 'waiting',
    last_run REAL, last_status TEXT, last_text TEXT, failures INTEGER NOT NULL DEFAULT 0, reason TEXT,
    PRIMARY KEY (device, task));
CREATE TABLE IF NOT EXISTS claims (
    device TEXT NOT NULL, task TEXT NOT NULL, due REAL NOT NULL, owner TEXT NOT NULL, claimed REAL NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 1, finished REAL, PRIMARY KEY (device, task, due));
CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY AUTOINCREMENT, device TEXT NOT NULL, task TEXT NOT NULL, due REAL, started REAL NOT NULL,
    finished REAL NOT NULL, status TEXT NOT NULL, ok INTEGER NOT NULL, text TEXT, attempt INTEGER NOT NULL,
    owner TEXT NOT NULL, via TEXT NOT NULL, data TEXT);
CREATE INDEX IF NOT EXISTS history_by_task ON history (device, task, finished);
CREATE TABLE IF NOT EXISTS devices (
    device TEXT PRIMARY KEY, owner TEXT, pid INTEGER, host TEXT, heartbeat REAL, paused INTEGER NOT NULL DEFAULT 0,
    state TEXT, running TEXT);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, device TEXT, kind TEXT NOT NULL, text TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS requests (
    id INTEGER PRIMARY KEY AUTOINCREMENT, device TEXT, task TEXT NOT NULL, at REAL NOT NULL);
"""


@dataclass(frozen=True)
class Claim:
    device: str
    task: str
    due: float
    owner: str
    attempt: int


def default_path() -> Path:
    from engine.core.paths import agent_home

    return agent_home() / "schedule.sqlite3"


def new_owner() -> str:
    """An owner id for this process: host, pid and a random part (a pid reused after a reboot is another owner)."""
    return f"{socket.gethostname()}:{os.getpid()}:{os.urandom(4).hex()}"


def _alive(owner: str | None) -> bool | None:
    """True/False when `owner` is a process of this host that is (not) running; None when it is on another host."""
    if not owner:
        return False
    host, _, rest = owner.partition(":")
    if host != socket.gethostname():
        return None
    try:
        os.kill(int(rest.split(":", 1)[0]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


class Store:
    """One SQLite file shared by every scheduler process and the tools; thread-safe (one connection per thread)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self._local = threading.local()
        if self.path.is_dir():
            raise ScheduleError(f"{self.path} is a folder: name the schedule's database file (for example "
                                f"{self.path / 'schedule.sqlite3'})", path=str(self.path))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = self._conn()
            conn.executescript(_SCHEMA)
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None:
                conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
            elif int(row[0]) > SCHEMA_VERSION:
                raise ScheduleError(f"{self.path} was written by a newer version (schema {row[0]}); "
                                    f"upgrade the engine or use another --db", path=str(self.path))
        except sqlite3.DatabaseError as exc:
            raise self._explain(exc) from None
        except OSError as exc:
            raise ScheduleError(f"cannot open the schedule database {self.path}: {exc.strerror or exc}",
                                path=str(self.path)) from None

    # --------------------------------------------------------------------------------------------- plumbing

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                   check_same_thread=True)
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                log.warning("schedule database %s: journal mode %s (WAL refused)", self.path, mode)
            conn.execute("PRAGMA synchronous = NORMAL")
            self._local.conn = conn
        return conn

    def _explain(self, exc: sqlite3.Error) -> ScheduleError:
        text = str(exc)
        if "locked" in text or "busy" in text:
            why = (f"the schedule database {self.path} stayed locked for {BUSY_TIMEOUT_MS / 1000:.0f} s "
                   "(another process holds a write): try again, or stop the other process")
        else:
            why = (f"the schedule database {self.path} cannot be read ({text}); it is left as it is: move it aside "
                   "to start a new schedule, or restore a copy")
        return ScheduleError(why, path=str(self.path))

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (BEGIN IMMEDIATE), committed or rolled back whole."""
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._explain(exc) from None
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        else:
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                conn.execute("ROLLBACK")
                raise self._explain(exc) from None

    def _read(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        conn = self._conn()
        conn.row_factory = sqlite3.Row
        try:
            return conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise self._explain(exc) from None
        finally:
            conn.row_factory = None

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # --------------------------------------------------------------------------------------------- devices

    def take_device(self, device: str, owner: str, now: float) -> None:
        """Make `owner` the one scheduler of `device`.

        Raises:
            ScheduleError: another scheduler that is alive drives it (its pid runs on this host, or it beat within
                the lease when it is on another host).
        """
        with self._tx() as db:
            row = db.execute("SELECT owner, heartbeat FROM devices WHERE device = ?", (device,)).fetchone()
            if row and row[0] and row[0] != owner:
                alive = _alive(row[0])
                if alive or (alive is None and row[1] is not None and now - row[1] < LEASE_S):
                    raise ScheduleError(f"device {device} is already driven by another scheduler ({row[0]}); "
                                        "stop it first: one scheduler per device", device=device)
            db.execute("INSERT INTO devices (device, owner, pid, host, heartbeat) VALUES (?, ?, ?, ?, ?) "
                       "ON CONFLICT (device) DO UPDATE SET owner = excluded.owner, pid = excluded.pid, "
                       "host = excluded.host, heartbeat = excluded.heartbeat, running = NULL",
                       (device, owner, os.getpid(), socket.gethostname(), now))

    def release_device(self, device: str, owner: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE devices SET owner = NULL, running = NULL, state = 'stopped' "
                       "WHERE device = ? AND owner = ?", (device, owner))

    def beat(self, device: str, owner: str, now: float, state: str | None = None) -> None:
        with self._tx() as db:
            db.execute("UPDATE devices SET heartbeat = ?, state = COALESCE(?, state) WHERE device = ? AND owner = ?",
                       (now, state, device, owner))

    def set_paused(self, device: str | None, paused: bool) -> list[str]:
        """Pause or resume one device (None: every device known); the devices changed."""
        with self._tx() as db:
            if device is not None:
                db.execute("INSERT OR IGNORE INTO devices (device) VALUES (?)", (device,))
            where, args = ("WHERE device = ?", (device,)) if device is not None else ("", ())
            names = [r[0] for r in db.execute(f"SELECT device FROM devices {where}", args)]
            db.execute(f"UPDATE devices SET paused = ? {where}", (int(paused), *args))
        return names

    def paused(self, device: str) -> bool:
        rows = self._read("SELECT paused FROM devices WHERE device = ?", (device,))
        return bool(rows and rows[0]["paused"])

    # --------------------------------------------------------------------------------------------- tasks

    def ensure_tasks(self, device: str, tasks: list[str], now: float) -> list[str]:
        """Add the scheduled tasks this device has no row for, due at once; the rows of tasks no longer scheduled
        stay (their history is kept) but are not run. The tasks added."""
        with self._tx() as db:
            known = {r[0] for r in db.execute("SELECT task FROM tasks WHERE device = ?", (device,))}
            added = [t for t in tasks if t not in known]
            db.executemany("INSERT INTO tasks (device, task, next_run) VALUES (?, ?, ?)",
                           [(device, t, now) for t in added])
        return added

    def tasks(self, device: str) -> dict[str, sqlite3.Row]:
        return {r["task"]: r for r in self._read("SELECT * FROM tasks WHERE device = ?", (device,))}

    def set_next(self, device: str, task: str, next_run: float, reason: str | None = None) -> None:
        with self._tx() as db:
            db.execute("UPDATE tasks SET next_run = ?, reason = ? WHERE device = ? AND task = ?",
                       (next_run, reason, device, task))

    # --------------------------------------------------------------------------------------------- claims

    def claim(self, device: str, task: str, due: float, owner: str, now: float) -> Claim | None:
        """Claim the run of `task` for due time `due`, in one transaction; None when it is not (or no longer) due at
        `due`, or a live owner holds it. A stale claim (its owner died) is taken over as the next attempt."""
        with self._tx() as db:
            row = db.execute("SELECT next_run FROM tasks WHERE device = ? AND task = ?", (device, task)).fetchone()
            if row is None or row[0] != due or due > now or self._busy(db, device, owner, now, task):
                return None
            held = db.execute("SELECT owner, attempt, finished FROM claims WHERE device = ? AND task = ? AND due = ?",
                              (device, task, due)).fetchone()
            attempt = 1
            if held is not None:
                holder, attempt, finished = held
                if finished is not None:
                    return None
                if holder != owner and self._owner_alive(db, device, holder, now):
                    return None
                attempt += 1
                db.execute("UPDATE claims SET owner = ?, claimed = ?, attempt = ? WHERE device = ? AND task = ? "
                           "AND due = ?", (owner, now, attempt, device, task, due))
            else:
                db.execute("INSERT INTO claims (device, task, due, owner, claimed) VALUES (?, ?, ?, ?, ?)",
                           (device, task, due, owner, now))
            db.execute("UPDATE tasks SET state = 'running' WHERE device = ? AND task = ?", (device, task))
            db.execute("UPDATE devices SET running = ? WHERE device = ?", (task, device))
        return Claim(device, task, due, owner, attempt)

    def busy(self, device: str, owner: str, now: float) -> str | None:
        """The task another live owner runs on `device` now (one device runs one task at a time), or None."""
        conn = self._conn()
        try:
            return self._busy(conn, device, owner, now)
        except sqlite3.Error as exc:
            raise self._explain(exc) from None

    def _busy(self, db: sqlite3.Connection, device: str, owner: str, now: float, other_than: str = "") -> str | None:
        for task, holder in db.execute("SELECT task, owner FROM claims WHERE device = ? AND finished IS NULL "
                                       "AND owner != ? AND task != ?", (device, owner, other_than)).fetchall():
            if self._owner_alive(db, device, holder, now):
                return task
        return None

    @staticmethod
    def _owner_alive(db: sqlite3.Connection, device: str, holder: str, now: float) -> bool:
        alive = _alive(holder)
        if alive is not None:
            return alive
        beat = db.execute("SELECT heartbeat FROM devices WHERE device = ? AND owner = ?", (device, holder)).fetchone()
        return bool(beat and beat[0] is not None and now - beat[0] < LEASE_S)

    def finish(self, claim: Claim, *, started: float, now: float, status: str, ok: bool, text: str,
               next_run: float, failures: int, reason: str | None, via: str = "scheduler",
               data: dict[str, Any] | None = None) -> bool:
        """Record the end of a claimed run and the task's next due time, in one transaction. False (nothing written)
        when the claim is no longer this owner's: another process took it over."""
        with self._tx() as db:
            held = db.execute("SELECT owner, finished FROM claims WHERE device = ? AND task = ? AND due = ?",
                              (claim.device, claim.task, claim.due)).fetchone()
            if held is None or held[0] != claim.owner or held[1] is not None:
                return False
            if ok or next_run != claim.due:
                db.execute("UPDATE claims SET finished = ? WHERE device = ? AND task = ? AND due = ?",
                           (now, claim.device, claim.task, claim.due))
            db.execute("INSERT INTO history (device, task, due, started, finished, status, ok, text, attempt, owner, "
                       "via, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                       (claim.device, claim.task, claim.due, started, now, status, int(ok), text[:2000],
                        claim.attempt, claim.owner, via, json.dumps(data, default=str)[:4000] if data else None))
            db.execute("UPDATE tasks SET next_run = ?, state = 'waiting', last_run = ?, last_status = ?, "
                       "last_text = ?, failures = ?, reason = ? WHERE device = ? AND task = ?",
                       (next_run, now, status, text[:500], failures, reason, claim.device, claim.task))
            db.execute("UPDATE devices SET running = NULL WHERE device = ?", (claim.device,))
        return True

    def record_off_schedule(self, device: str, task: str, *, started: float, now: float, status: str, ok: bool,
                            text: str, owner: str, via: str) -> None:
        """A run of a task that was not due (a tool called it between due times): history only."""
        with self._tx() as db:
            db.execute("INSERT INTO history (device, task, due, started, finished, status, ok, text, attempt, owner, "
                       "via) VALUES (?, ?, NULL, ?, ?, ?, ?, ?, 1, ?, ?)",
                       (device, task, started, now, status, int(ok), text[:2000], owner, via))

    # --------------------------------------------------------------------------------------------- events

    def event(self, now: float, device: str | None, kind: str, text: str) -> None:
        with self._tx() as db:
            db.execute("INSERT INTO events (at, device, kind, text) VALUES (?, ?, ?, ?)", (now, device, kind, text))

    def request_run(self, device: str | None, task: str, now: float) -> list[str]:
        """Ask the scheduler of `device` (None: of every device the database knows) to run `task` at once; the
        devices asked."""
        with self._tx() as db:
            devices = [device] if device is not None else sorted(
                {r[0] for r in db.execute("SELECT device FROM devices UNION SELECT device FROM tasks")})
            db.executemany("INSERT INTO requests (device, task, at) VALUES (?, ?, ?)",
                           [(name, task, now) for name in devices])
        return devices

    def take_requests(self, device: str) -> list[str]:
        """The run-now requests for `device`, removed as they are taken."""
        with self._tx() as db:
            rows = db.execute("SELECT task FROM requests WHERE device = ? ORDER BY id", (device,)).fetchall()
            db.execute("DELETE FROM requests WHERE device = ?", (device,))
        return [r[0] for r in rows]

    # --------------------------------------------------------------------------------------------- reading

    def history(self, device: str | None = None, limit: int = 100000) -> list[sqlite3.Row]:
        where, args = ("WHERE device = ?", (device,)) if device else ("", ())
        return self._read(f"SELECT * FROM history {where} ORDER BY id LIMIT ?", (*args, limit))

    def events(self, device: str | None = None, limit: int = 50) -> list[sqlite3.Row]:
        where, args = ("WHERE device = ? OR device IS NULL", (device,)) if device else ("", ())
        return list(reversed(self._read(f"SELECT * FROM events {where} ORDER BY id DESC LIMIT ?", (*args, limit))))

    def devices(self) -> list[sqlite3.Row]:
        return self._read("SELECT * FROM devices ORDER BY device")

    def status(self, now: float, failures: int = 10) -> dict[str, Any]:
        """Everything `schedule status` shows, per device: next runs, what runs, recent failures and events."""
        out: dict[str, Any] = {"database": str(self.path), "devices": []}
        devices = {r["device"]: r for r in self.devices()}
        names = [*devices, *sorted({r["device"] for r in self._read("SELECT DISTINCT device FROM tasks")} - set(devices))]
        for name in names:
            dev = devices.get(name)
            alive = _alive(dev["owner"]) if dev is not None and dev["owner"] else False
            tasks = sorted(self.tasks(name).values(), key=lambda r: r["next_run"])
            out["devices"].append({
                "device": name,
                "paused": bool(dev and dev["paused"]),
                "scheduler": dev["owner"] if dev is not None and alive is not False else None,
                "state": dev["state"] if dev is not None else None,
                "running": dev["running"] if dev is not None and alive is not False else None,
                "tasks": [{"task": r["task"], "next_run": r["next_run"], "due_in_s": round(r["next_run"] - now, 1),
                           "state": r["state"], "last_status": r["last_status"], "last_run": r["last_run"],
                           "failures": r["failures"], "reason": r["reason"]} for r in tasks],
                "recent_failures": [dict(r) for r in self._read(
                    "SELECT task, due, finished, status, text, attempt FROM history WHERE device = ? AND ok = 0 "
                    "ORDER BY id DESC LIMIT ?", (name, failures))],
                "events": [dict(r) for r in self.events(name, 10)],
            })
        return out
