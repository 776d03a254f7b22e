"""`schedule simulate`: the real scheduler, in a process of its own, against the simulator, in simulated time.

The harness (this process) serves D simulated devices behind one fake ADB server and keeps the virtual clock in a
file (FileClock: the time and a hold, mapped by both processes). It starts `python -m engine schedule run` with the
clock's file in ENGINE_SCHEDULE_VCLOCK: that process keeps time with VirtualTime, where a worker's waits between due
times last no wall time (when every worker waits, the clock jumps to the earliest wake-up) and the game's timers (its
lists' `timer`s, engine.config.simstate) advance with the same clock. With --hosts H it starts H such processes, each
with its own host id (ENGINE_HOST_ID) and its share of the devices, on one database (--db: a PostgreSQL URL for a
fleet); the clock then jumps only when every worker of every host waits (each process keeps its slot in the clock's
file). With --kills K the harness kills a host's scheduler (SIGKILL) K times, every other kill while one of its
runs holds a claim (so the claim must be taken over), lets the clock run on for up to ten simulated minutes (the
machine was down), and starts it again on the same database.

What it reports is measured against the simulator's truth, not the scheduler's word:
    runs                 runs in the history
    missed_days          (device, server day, task due at the reset) without a verified run that day
    double_claims        due times run to success twice, or run by two owners at once
    false_successes      verified runs of a task visiting a list's page that left an item of that list ready (its
                         timer ended before the run began) still there after the run
    collect_delay_p95_s  from an item's timer ending to its collection (items never collected count to the end)
    restarts             game restarts; scheduler_restarts: the kills; kills_mid_run: those that hit a claimed run
    takeovers            claims taken over from a dead owner (history rows of a second or later attempt)
"""

from __future__ import annotations

import fcntl
import mmap
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

START = 1_767_600_000.0  # 2026-01-05 08:00 UTC: a Monday, away from any reset
ENV_CLOCK = "ENGINE_SCHEDULE_VCLOCK"
ENV_UNTIL = "ENGINE_SCHEDULE_UNTIL"
ENV_SLOT = "ENGINE_SCHEDULE_VSLOT"
SLOTS = 8
"""Processes that can share one virtual clock (hosts in `simulate --hosts`)."""
AIM_BOUND_S = 60.0
"""How long (wall seconds) an aimed kill waits for a run to be claimed before it kills anyway."""
DOWNTIME_S = 600.0
LIFE_BOUND_S = 3600.0
"""A simulation still running after this many wall seconds (times the kills, or three times the days, whichever is
more: two days on three hosts take about two and a half hours on a busy 2-core machine) is stopped and fails."""


class FileClock:
    """A virtual clock in a small file mapped by every process that shares it; writes take a file lock.

    Beside the time it holds a `hold`: idle waits never jump the clock past it (a run's own sleeps still do), so
    the harness can stop the scheduler at the moment it chose, even when the scheduler has nothing to do."""

    SIZE = 16 + 16 * SLOTS

    def __init__(self, path: str | Path, start: float | None = None) -> None:
        self.path = Path(path)
        if start is not None:
            self.path.write_bytes(struct.pack("dd", start, float("inf")) + struct.pack("dd", 0, float("inf")) * SLOTS)
        self._fd = os.open(self.path, os.O_RDWR)
        self._map = mmap.mmap(self._fd, self.SIZE)

    def publish(self, slot: int, busy: int, wake: float) -> None:
        """Process `slot` has `busy` workers that do not wait, and its earliest wake-up is `wake`."""
        self._map[16 + 16 * slot:32 + 16 * slot] = struct.pack("dd", float(busy), wake)

    def fleet(self) -> tuple[float, float]:
        """(workers busy in every process, the earliest wake-up of any process)."""
        slots = [struct.unpack("dd", self._map[16 + 16 * i:32 + 16 * i]) for i in range(SLOTS)]
        return sum(b for b, _ in slots), min(w for _, w in slots)

    def now(self) -> float:
        return struct.unpack("d", self._map[:8])[0]

    @property
    def hold(self) -> float:
        return struct.unpack("d", self._map[8:16])[0]

    @hold.setter
    def hold(self, when: float) -> None:
        self._map[8:16] = struct.pack("d", when)

    def advance_to(self, when: float) -> float:
        """Jump to `when` (never back, never past the hold)."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            now = max(self.now(), min(when, self.hold))
            self._map[:8] = struct.pack("d", now)
            return now
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def sleep(self, seconds: float) -> None:
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            self._map[:8] = struct.pack("d", self.now() + max(0.0, seconds))
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        self._map.close()
        os.close(self._fd)


class VirtualTime:
    """The scheduler's time in `simulate`: runs sleep by moving the clock; idle waits block until every worker
    waits, then the clock jumps to the earliest wake-up. Past `until` every wait sets its stop event."""

    def __init__(self, clock: FileClock, until: float, slot: int = 0) -> None:
        self.clock, self.until, self.slot = clock, until, slot
        self.now = self.monotonic = clock.now
        self.sleep = clock.sleep
        self._cond = threading.Condition()
        self._waiting: dict[int, float] = {}
        self.workers = 0

    def _publish(self) -> None:
        self.clock.publish(self.slot, self.workers - len(self._waiting), min(self._waiting.values(),
                                                                              default=float("inf")))

    def join(self) -> None:
        with self._cond:
            self.workers += 1
            self._publish()

    def leave(self) -> None:
        with self._cond:
            self.workers -= 1
            self._publish()
            self._cond.notify_all()

    def wait(self, seconds: float, stop: threading.Event) -> None:
        me = threading.get_ident()
        with self._cond:
            self._waiting[me] = self.now() + max(0.0, seconds)
            self._publish()
            try:
                while not stop.is_set() and self.now() < self._waiting[me]:
                    if self.now() >= self.until:
                        stop.set()
                        break
                    busy, wake = self.clock.fleet()
                    if busy <= 0:  # every worker of every host waits: on to the earliest wake-up
                        self.clock.advance_to(min(wake, self.until))
                        self._cond.notify_all()
                    if self.now() < self._waiting[me]:
                        self._cond.wait(0.02)  # releases the lock; a running worker's sleeps move the clock
            finally:
                del self._waiting[me]
                self._publish()
        if self.now() >= self.until:
            stop.set()


def virtual_time_from_env() -> VirtualTime | None:
    path = os.environ.get(ENV_CLOCK)
    if not path:
        return None
    return VirtualTime(FileClock(path), float(os.environ.get(ENV_UNTIL, "inf")), int(os.environ.get(ENV_SLOT, "0")))


def simulate(*, days: float, seed: int, scenario: str | None = None, kills: int = 0, devices: int = 1,
             hosts: int = 1, db: str | None = None, graph: str | None = None, server: str | None = None,
             log_to: Any = None, keep: bool = False) -> dict[str, Any]:
    """Run the simulation and report it (the module's docstring); the work folder (database, clock, pack) is
    removed at the end, whatever happened, unless `keep`, when the report names it. `db`: the database (default: a
    SQLite file in the work folder); device i is driven by host i mod `hosts`."""
    from engine.config.loader import load_graph
    from engine.config.simstate import state_beside
    from engine.schedule.store import Store
    from engine.sim import FakeAdbServer, Scenario, SimGame, SyntheticAssets

    if not (0 < days <= 30) or not (1 <= devices <= 8) or not (0 <= kills <= 100) or not (1 <= hosts <= devices):
        from engine.core.errors import ConfigError

        raise ConfigError("simulate: --days in (0, 30], --devices in 1..8, --kills in 0..100, --hosts in "
                          "1..devices")
    work = Path(tempfile.mkdtemp(prefix="schedule-sim-"))
    adb = clock = store = None
    children: dict[int, subprocess.Popen] = {}
    try:
        clock = FileClock(work / "clock", START)
        resolved = load_graph(graph).resolve(server)
        faults = Scenario.from_file(scenario) if scenario else None
        games = {f"sim-{i}": SimGame(resolved, scenario=faults, seed=seed + i, clock=clock.now, sleep=clock.sleep,
                                     state=state_beside(graph, resolved)) for i in range(devices)}
        pack = _export_pack(SyntheticAssets(resolved), work / "assets")  # the pack a phone user passes (--assets)
        adb = FakeAdbServer(games).start()
        until = START + days * 86400
        rng = random.Random(seed)
        kill_at = sorted(rng.uniform(START + 600, until - 600) for _ in range(kills))
        clock.hold = kill_at[0] if kill_at else float("inf")
        url = db or str(work / "schedule.sqlite3")
        store = Store(url)  # the schema exists before any host starts
        if db and (store.devices() or store.history(limit=1)):
            from engine.core.errors import ConfigError

            raise ConfigError(f"simulate: {store.where} already holds a schedule; simulate on a new, empty database "
                              "(never the fleet's own: its hosts would see the simulated devices)")
        serials = list(games)

        def spawn(host: int) -> subprocess.Popen:
            clock.publish(host, 1, float("inf"))  # starting: no other host jumps the clock past its first look
            env = {**os.environ, ENV_CLOCK: str(work / "clock"), ENV_UNTIL: repr(until), ENV_SLOT: str(host),
                   "ENGINE_HOME": str(work / "home"), "ENGINE_DB_URL": url, "ENGINE_HOST_ID": f"sim-host-{host}"}
            command = [sys.executable, "-m", "engine", "schedule", "run", "--adb-host", adb.host, "--adb-port",
                       str(adb.port), "--assets", str(pack),
                       *(a for s in serials[host::hosts] for a in ("--device", s)),
                       *(["--graph", graph] if graph else []), *(["--server", server] if server else [])]
            return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,
                                    stderr=log_to if log_to is not None else subprocess.DEVNULL)

        children = {h: spawn(h) for h in range(hosts)}
        down: dict[int, float] = {}  # a killed host -> when (virtual time) it comes back
        lives, aimed, done, wall, born = hosts, 0, 0, time.monotonic(), time.monotonic()
        while any(c.poll() is None for c in children.values()) or down:
            clock.hold = min([*kill_at[:1], *down.values()], default=float("inf"))
            for h, child in children.items():
                if h not in down and child.poll() not in (None, 0) and clock.now() < until:
                    raise RuntimeError(f"the scheduler exited with {child.returncode} before the end")
            if down and all(c.poll() is not None for c in children.values()):
                clock.advance_to(min(down.values()))  # no host runs: the clock runs on through the downtime
            for h, back in list(down.items()):
                if clock.now() >= back:
                    del down[h]
                    if clock.now() < until:
                        children[h] = spawn(h)
                        lives += 1
            if kill_at and clock.now() >= kill_at[0]:
                kill_at.pop(0)
                live = [h for h in range(hosts) if h not in down]
                if not live:
                    continue
                victim = rng.choice(live)
                clock.hold = float("inf")
                if done % 2 == 0:  # every other kill waits for a run of that host to hold its claim
                    aimed += _await_run(store, f"sim-host-{victim}", children[victim])
                done += 1
                children[victim].kill()
                children[victim].wait()
                clock.publish(victim, 0, float("inf"))
                down[victim] = clock.now() + rng.uniform(0, DOWNTIME_S)  # its machine is down a while
                continue
            if time.monotonic() - born > LIFE_BOUND_S * max(1, kills, 3 * days):
                raise TimeoutError(f"the schedulers did not reach the end of the simulation in "
                                   f"{LIFE_BOUND_S * max(1, kills, 3 * days):.0f} s")
            time.sleep(0.05)
        report = _report(store, games, resolved, graph, START, until, lives - hosts + 1, time.monotonic() - wall)
        report.update(hosts=hosts, kills_mid_run=aimed)
        if keep:
            report["kept"] = str(work)
        return report
    finally:
        for child in children.values():
            if child.poll() is None:
                child.kill()
                child.wait()
        if store is not None:
            store.close()
        if adb is not None:
            adb.stop()
        if clock is not None:
            clock.close()
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def _await_run(store: Any, host: str, child: subprocess.Popen) -> int:
    """Wait (bounded) until a run of `host` holds its claim: 1 when one does, 0 when the bound passed first."""
    deadline = time.monotonic() + AIM_BOUND_S
    while time.monotonic() < deadline and child.poll() is None:
        if any(d["running"] and d["alive"] and d["host"] == host for d in store.devices()):
            return 1
        time.sleep(0.01)
    return 0


def _export_pack(pack: Any, root: Path) -> Path:
    from engine.config.assetpacks import INDEX_FORMAT, save_index, write_template

    index: dict = {"format": INDEX_FORMAT, "server": pack.server, "templates": {}}
    for name in pack.names():
        write_template(root, pack.get(name), index)
    save_index(root, index)
    return root


def _report(store: Any, games: dict, graph: Any, graph_dir: Any, start: float, until: float, lives: int,
            wall_s: float) -> dict[str, Any]:
    from engine.config.schedule import load_schedule
    from engine.config.tasks import GotoStep, walk_steps
    from engine.runtime.session import load_task_book
    from engine.schedule.rules import next_reset

    book = load_task_book(graph_dir, graph)
    schedule = load_schedule(graph_dir, graph, set(book.names()))
    history = [dict(r) for r in store.history()]
    ok_runs = [r for r in history if r["ok"]]

    pages: dict[str, set[str]] = {}
    def visits(task: str, seen: frozenset = frozenset()) -> set[str]:
        if task in seen or task not in book.names():
            return set()
        out = set()
        for step, _ in walk_steps(book.get(task).steps):
            if isinstance(step, GotoStep):
                out.add(step.page)
            elif getattr(step, "type", None) == "run":
                out |= visits(step.task, seen | {task})
        return out
    for task in schedule.names():
        pages[task] = visits(task)

    missed = 0
    day = next_reset(start, schedule.reset_times, schedule.zone)
    while True:
        end = next_reset(day, schedule.reset_times, schedule.zone)
        if end > until:
            break
        for device in games:
            for entry in schedule.entries:
                if entry.due.reset and not any(r["device"] == device and r["task"] == entry.task
                                               and day <= r["finished"] < end for r in ok_runs):
                    missed += 1
        day = end

    groups: dict[tuple, list[dict]] = {}
    for r in history:
        if r["due"] is not None:
            groups.setdefault((r["device"], r["task"], r["due"]), []).append(r)
    double = 0
    for rows in groups.values():
        oks = [r for r in rows if r["ok"]]
        overlap = any(a["owner"] != b["owner"] and a["started"] < b["finished"] and b["started"] < a["finished"]
                      for i, a in enumerate(rows) for b in rows[i + 1:])
        double += (len(oks) > 1) or overlap

    false_ok, delays = 0, []
    for device, game in games.items():
        state = game.state
        if state is None:
            continue
        timed = {x.name: x for x in state.spec.lists if x.timer is not None}
        taken = [e for e in state.removed if e["list"] in timed and e["state"] == timed[e["list"]].timer.to]
        left = [{"list": name, **it, "at": None} for name in timed for it in state.items[name]
                if it["state"] == timed[name].timer.to or (it["state"] == timed[name].timer.from_
                                                           and it["ends"] <= until)]
        delays += [e["at"] - e["ends"] for e in taken] + [until - it["ends"] for it in left if it["ends"] < until]
        if os.environ.get("SCHEDSIM_DEBUG"):
            print([(e["name"], round(e["ends"] - start), round(e["at"] - start)) for e in taken],
                  [(it["name"], it["state"], round(it["ends"] - start)) for it in left], file=sys.stderr)
        for r in ok_runs:
            if r["device"] != device:
                continue
            for item in [*taken, *left]:
                page = timed[item["list"]].page
                if page in pages.get(r["task"], ()) and item["ends"] < r["started"] \
                        and (item["at"] is None or item["at"] > r["finished"]):
                    false_ok += 1
    delays.sort()
    p95 = delays[min(len(delays) - 1, int(0.95 * len(delays)))] if delays else 0.0
    events = [dict(e) for e in store.events(limit=100000)]
    report = {
        "days": round((until - start) / 86400, 3), "devices": len(games), "runs": len(history),
        "verified_runs": len(ok_runs), "missed_days": missed, "double_claims": double, "false_successes": false_ok,
        "collected": len(delays), "collect_delay_p95_s": round(p95, 1),
        "restarts": sum(e["kind"] == "restart" for e in events), "scheduler_restarts": lives - 1,
        "takeovers": sum(r["attempt"] > 1 for r in history),
        "missed_runs_reported": sum(e["kind"] == "missed" for e in events),
        "device_lost": sum(e["kind"] == "device_lost" for e in events), "wall_s": round(wall_s, 1),
    }
    report["ok"] = (missed == 0 and double == 0 and false_ok == 0 and p95 <= 600.0)
    return report
