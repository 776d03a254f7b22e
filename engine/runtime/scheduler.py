"""The scheduler: the graph's scheduled tasks around the clock, one worker and one session per device.

Each worker loops: take the device (one scheduler per device), then, until told to stop, run the due task with the
best priority (claimed in the shared database first: engine.schedule.store), record it and its next due time
(engine.schedule.runs), and otherwise sleep until the next due time. It never polls the device while nothing is due;
it wakes every CONTROL_POLL_S to read pause, resume and run-now from the database (a read of a few rows).

Faults escalate and are never silent: a failed run is retried with backoff; after `restart_after` failures in a row
the game is restarted (force-stop, launch, the schedule's start task); a lost device goes up the repair ladder
(engine.device.repair: reconnect, the engine's own ADB server, the emulator's restart commands from the devices file)
and is then probed and waited for before anything else runs; a game restart that does not help is followed by the
emulator's restart when the devices file declares one; after `give_up_after` failures the task is put off with the
reason recorded, and a person is told (engine.schedule.notify). A run whose due time passed more than
MISSED_GRACE_S ago (the machine slept, the scheduler was stopped) is reported as missed and run once, at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from engine.config.schedule import Schedule
from engine.core.errors import EngineError, ScheduleError, ScheduleUnreachable
from engine.core.results import STATUSES
from engine.schedule.notify import Notifier
from engine.schedule.runs import claim_due, record
from engine.schedule.hosts import host_id, owner_host
from engine.schedule.store import LEASE_S, Claim, Store, new_owner

log = logging.getLogger(__name__)

CONTROL_POLL_S = 30.0
"""How often an idle worker reads pause, resume and run-now from the database."""
MISSED_GRACE_S = 600.0
"""A run that starts this much after its due time is reported as missed (it still runs, once)."""
CLOCK_JUMP_S = 120.0
"""Wall time moving this much more (or less) than the monotonic clock is a clock jump (NTP, DST on a bad RTC)."""
DEVICE_WAIT_S = (5.0, 300.0)
"""The health probe's first and longest wait while a device is lost."""
DB_WAIT_S = (2.0, 60.0)
"""The first and longest wait between tries while the schedule's database server does not answer."""


@dataclass
class RealTime:
    """Wall time for due times, a monotonic clock to see jumps, and waits that a stop event cuts short."""

    now: Callable[[], float] = time.time
    monotonic: Callable[[], float] = time.monotonic

    def wait(self, seconds: float, stop: threading.Event) -> None:
        stop.wait(max(0.0, seconds))

    def sleep(self, seconds: float) -> None:
        time.sleep(max(0.0, seconds))

    def join(self) -> None:
        """A worker starts keeping time here (virtual time counts its workers; real time needs nothing)."""

    def leave(self) -> None:
        """A worker stops keeping time here."""


@dataclass
class Worker:
    """One device's loop. `open_session` opens a session whose tools run tasks without schedule hooks (the worker
    claims and records runs itself)."""

    device: str
    open_session: Callable[[], Any]
    store: Store
    schedule: Schedule
    time: Any = field(default_factory=RealTime)
    notifier: Notifier | None = None
    owner: str = field(default_factory=new_owner)
    stop: threading.Event = field(default_factory=threading.Event)
    session: Any = None
    restart_emulator: list[str] = field(default_factory=list)
    """The emulator's own restart commands for this device (the devices file's ``restart:``)."""
    runs: int = 0
    failure: str | None = None
    """Why the worker ended, when it ended on an error (another scheduler holds the device, say)."""

    # ------------------------------------------------------------------------------------------------ the loop

    def run(self) -> None:
        self.time.join()
        try:
            self._run()
        except EngineError as exc:
            self.failure = str(exc)
            log.error("%s: %s", self.device, exc)
        except Exception as exc:  # noqa: BLE001 - a bug ends this worker with one line and exit 2, not a traceback
            self.failure = f"unexpected {type(exc).__name__}: {exc}"
            log.error("%s: %s (run with -vv for the traceback)", self.device, self.failure)
            log.debug("worker %s", self.device, exc_info=True)
        finally:
            self.time.leave()
            if self.session is not None:
                self.session.close()
            try:
                self.store.release_device(self.device, self.owner)
            except ScheduleError as exc:
                log.warning("%s: %s", self.device, exc)

    def _run(self) -> None:
        if not self._while_reachable(self._take):
            return
        now = self.time.now()
        self.store.ensure_tasks(self.device, self.schedule.names(), now)
        self._report_missed(now)
        self.marks = (now, self.time.monotonic())
        while not self.stop.is_set():
            self._while_reachable(self._turn)

    def _take(self) -> bool:
        """Take the device; while a scheduler of another host drives it, stand by until its lease runs out (a
        standby host takes over a dead one's devices). False when stopped first. One of this host: ScheduleError."""
        told = False
        while True:
            try:
                self.store.take_device(self.device, self.owner, self.time.now())
                return True
            except ScheduleUnreachable:
                raise
            except ScheduleError as exc:
                holder = exc.context.get("owner")
                if holder is None or owner_host(holder) == host_id():
                    raise
                if not told:
                    log.warning("%s: driven from host %s; standing by until its lease runs out", self.device,
                                owner_host(holder))
                    told = True
            if self.stop.is_set():
                return False
            self.time.wait(CONTROL_POLL_S, self.stop)

    def _while_reachable(self, step: Callable[[], Any]) -> Any:
        """Run `step`; while the database server does not answer, wait with backoff (said once, on stderr and to a
        person) and try again. Nothing is claimed meanwhile, so nothing runs twice."""
        wait, down = DB_WAIT_S[0], None
        while True:
            try:
                out = step()
            except ScheduleUnreachable as exc:
                if down is None:
                    down = self.time.monotonic()
                    log.warning("%s: %s; waiting for it (next try in %.0f s)", self.device, exc, wait)
                    self._tell("database", "schedule database unreachable", str(exc)[:300])
                if self.stop.is_set():
                    raise
                self.time.wait(wait, self.stop)
                wait = min(wait * 2, DB_WAIT_S[1])
                continue
            if down is not None:
                log.warning("%s: the schedule database answers again (after %.0f s)", self.device,
                            self.time.monotonic() - down)
            return out

    def _turn(self) -> None:
        """One look at the database: controls, then the best due task, or a wait."""
        now = self.time.now()
        self.marks = self._check_clock(self.marks, now)
        if self.session is None and not self._connect():
            return
        if self.store.paused(self.device):
            self._beat(now, "paused")
            self.time.wait(CONTROL_POLL_S, self.stop)
            return
        for task in self.store.take_requests(self.device):
            if task in self.schedule.names():
                self.store.set_next(self.device, task, now, "run-now requested")
                log.info("%s: %s runs now (requested)", self.device, task)
        rows = self.store.tasks(self.device)
        scheduled = [t for t in self.schedule.names() if t in rows]
        due = sorted((t for t in scheduled if rows[t]["next_run"] <= now), key=self.schedule.order)
        if due:
            self._run_task(due[0], now)
            return
        upcoming = min((rows[t]["next_run"] for t in scheduled), default=now + CONTROL_POLL_S)
        self._beat(now, f"idle until {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(upcoming))}")
        self.time.wait(min(upcoming - now, CONTROL_POLL_S), self.stop)

    def _beat(self, now: float, state: str) -> None:
        if not self.store.beat(self.device, self.owner, now, state):
            raise ScheduleError(f"device {self.device} was taken over by another scheduler (this one was silent "
                                f"past the {LEASE_S:.0f} s lease); it stops driving it", device=self.device)

    def _report_missed(self, now: float) -> None:
        rows = self.store.tasks(self.device)
        for task in self.schedule.names():
            row = rows.get(task)
            if row is not None and row["last_run"] is not None and now - row["next_run"] > MISSED_GRACE_S:
                late = now - row["next_run"]
                self.store.event(now, self.device, "missed", f"{task} was due {late / 60:.0f} min ago; it runs now")
                log.warning("%s: %s missed its due time by %.0f min; catching up", self.device, task, late / 60)

    def _check_clock(self, marks: tuple[float, float], now: float) -> tuple[float, float]:
        """Notice a wall clock that jumped; after a jump back, no task waits longer than its own interval."""
        mono = self.time.monotonic()
        jump = (now - marks[0]) - (mono - marks[1])
        if abs(jump) >= CLOCK_JUMP_S:
            text = f"the clock jumped {'forward' if jump > 0 else 'back'} by {abs(jump) / 60:.0f} min"
            self.store.event(now, self.device, "clock", text)
            log.warning("%s: %s", self.device, text)
            if jump < 0:
                rows = self.store.tasks(self.device)
                for entry in self.schedule.entries:
                    longest = entry.due.every or 86400.0
                    row = rows.get(entry.task)
                    if row is not None and row["next_run"] > now + longest:
                        self.store.set_next(self.device, entry.task, now + longest, "clock went back")
        return now, mono

    # ------------------------------------------------------------------------------------------------ a run

    def _run_task(self, task: str, now: float) -> None:
        claim = claim_due(self.store, self.device, task, self.owner, now)
        if claim is None:  # another runner (a tool call) holds it or just ran it
            self.time.wait(1.0, self.stop)
            return
        late = now - claim.due
        if late > MISSED_GRACE_S and self.store.tasks(self.device)[task]["last_run"] is not None:
            self.store.event(now, self.device, "missed", f"{task} ran {late / 60:.0f} min after its due time")
        self._beat(now, f"running {task}")
        log.info("%s: running %s (due %s, attempt %d)", self.device, task,
                 time.strftime("%H:%M:%S", time.localtime(claim.due)), claim.attempt)
        with self._renewing(claim):
            result = self.session.tools.call("alas_run", {"name": task})
        ended = self.time.now()
        done = self._while_reachable(lambda: record(
            self.store, self.schedule, claim, ok=result.ok, status=result.status, text=result.text,
            values=(result.data or {}).get("values"), started=now, now=ended, via="scheduler"))
        self.runs += 1
        log.info("%s: %s %s (%s); next %s (%s)", self.device, task, "ok" if result.ok else result.status,
                 result.text[:120], time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(done.next_run)), done.rule)
        if result.ok:
            return
        action = STATUSES.get(result.status)
        with self._renewing(None):  # a restart of the game or the emulator may outlast the lease: it stays ours
            if action == "reconnect":
                self._recover_device()
            elif done.action == "restart" or action == "restart_app":
                if not self.restart_game(f"{task} failed: {result.status}") and self.restart_emulator:
                    if self.repair_device(f"{task}: the game's restart did not help", emulator_only=True):
                        self.restart_game(f"{task} failed: {result.status}; the emulator was restarted")
        if done.action == "put_off":
            self._tell("needs_human", f"{task} put off on {self.device}",
                       f"{task} failed {self.schedule.rules_of(task).give_up_after} times in a row "
                       f"({result.status}: {result.text[:300]}); it is tried again later")
        elif action == "human":
            self._tell("needs_human", f"{task} needs a look on {self.device}", f"{result.status}: {result.text[:300]}")

    @contextmanager
    def _renewing(self, claim: Claim | None) -> Iterator[None]:
        """Renew the claim's lease (None: the device's) every quarter lease (wall time, as the database's clock runs)
        while it runs."""
        done = threading.Event()

        def renew() -> None:
            while not done.wait(LEASE_S / 4):
                try:
                    if claim is None:
                        self.store.beat(self.device, self.owner, self.time.now())
                    else:
                        self.store.renew(claim)
                except ScheduleError as exc:
                    log.warning("%s: cannot renew the lease of %s: %s", self.device,
                                claim.task if claim is not None else "the device", exc)
            self.store.close_thread()
        beater = threading.Thread(target=renew, name=f"lease-{self.device}", daemon=True)
        beater.start()
        try:
            yield
        finally:
            done.set()
            beater.join(timeout=10.0)

    def _tell(self, channel: str, title: str, body: str) -> None:
        if self.notifier is not None:
            self.notifier.send(channel, title, body, device=self.device)

    # ------------------------------------------------------------------------------------------------ escalation

    def restart_game(self, why: str) -> bool:
        """Force-stop and launch the game, then run the schedule's start task; True when the start task verified
        (or there is none)."""
        now = self.time.now()
        log.warning("%s: restarting the game: %s", self.device, why)
        self.store.event(now, self.device, "restart", f"the game is restarted: {why}")
        self._tell("restart", f"game restarted on {self.device}", why)
        app = self.session.graph.app
        try:
            if app is None:
                raise EngineError("the graph declares no app (package and activity): nothing to restart")
            self.session.device.restart_app(app.package, app.activity)
        except EngineError as exc:
            self.store.event(now, self.device, "restart_failed", str(exc))
            log.warning("%s: restart failed: %s", self.device, exc)
            return False
        if self.schedule.start_task is None:
            return True
        result = self.session.tools.call("alas_run", {"name": self.schedule.start_task})
        if not result.ok:
            log.warning("%s: the game restarted but its start task %s failed: %s: %s", self.device,
                        self.schedule.start_task, result.status, result.text[:200])
            self.store.event(self.time.now(), self.device, "restart_failed",
                             f"{self.schedule.start_task}: {result.status}: {result.text[:200]}")
        return result.ok

    def repair_device(self, why: str, *, emulator_only: bool = False) -> bool:
        """Run the repair ladder (engine.device.repair) on the session's device, or only its emulator restart; every
        step goes to the store's events, the log and the transcript. True when the device answers healthy after."""
        from engine.device.repair import Ladder

        transcript = getattr(self.session, "transcript", None)

        def record(kind: str, entry: dict) -> None:
            self.store.event(self.time.now(), self.device, kind, f"{entry['name']}: {entry['outcome']}: "
                                                                 f"{entry['detail'][:200]}")
            if transcript is not None:
                transcript.record(kind, **entry)

        ladder = Ladder(self.session.device, restart=self.restart_emulator, record=record, sleep=self.time.sleep)
        result = ladder.restart_instance() if emulator_only else ladder.repair()
        log.info("%s: %s (%s)", self.device, result.describe(), why)
        return result.ok

    def _recover_device(self) -> None:
        """Repair the device up the ladder, then probe it until it answers healthy again (waiting longer each time,
        reconnecting between)."""
        if self.session is not None and callable(getattr(self.session.device, "health", None)) \
                and self.repair_device("lost"):
            return
        wait, told = DEVICE_WAIT_S[0], False
        while not self.stop.is_set():
            health = self.session.tools.call("adb_health", {})
            if health.ok:
                if told:
                    self.store.event(self.time.now(), self.device, "device_back", "the device answers again")
                return
            now = self.time.now()
            if not told:
                self.store.event(now, self.device, "device_lost", f"{health.status}: {health.text[:200]}")
                self._tell("device_lost", f"{self.device} lost", f"{health.status}: {health.text[:300]}")
                told = True
            self._wait_beating(wait, f"device lost ({health.status}); next probe in {wait:.0f} s")
            wait = min(wait * 2, DEVICE_WAIT_S[1])
            try:
                self.session.device.reconnect()
            except EngineError as exc:
                log.info("%s: reconnect: %s", self.device, exc)

    def _wait_beating(self, seconds: float, state: str) -> None:
        """Wait `seconds`, renewing the device's lease at least every CONTROL_POLL_S: a wait longer than the lease (a
        lost device's probes) must not let another host take a live owner's device."""
        end = self.time.monotonic() + seconds
        for _ in range(int(seconds // CONTROL_POLL_S) + 2):  # each slice moves the clock: a bound, never reached
            left = end - self.time.monotonic()
            if self.stop.is_set() or left <= 0:
                return
            self._beat(self.time.now(), state)
            self.time.wait(min(left, CONTROL_POLL_S), self.stop)

    def _connect(self) -> bool:
        """Open the device's session; on failure wait like a lost device would."""
        try:
            self.session = self.open_session()
            return True
        except EngineError as exc:
            if isinstance(exc, ScheduleError) or getattr(exc, "status", "") == "config_error":
                raise
            now = self.time.now()
            self.store.event(now, self.device, "device_lost", f"cannot open the device: {exc}")
            self._tell("device_lost", f"{self.device} cannot be opened", str(exc)[:300])
            self._beat(now, "cannot open the device")
            self.time.wait(DEVICE_WAIT_S[0], self.stop)
            return False


class Scheduler:
    """Several devices, one worker thread each, one database."""

    def __init__(self, workers: list[Worker], notifier: Notifier | None = None) -> None:
        self.workers, self.notifier = workers, notifier
        self.stop = threading.Event()
        for worker in workers:
            worker.stop = self.stop

    def run(self) -> int:
        """Run until `stop` is set (SIGTERM, Ctrl-C); 0, or 2 when a worker could not start (its reason logged)."""
        threads = [threading.Thread(target=w.run, name=f"schedule-{w.device}", daemon=True) for w in self.workers]
        for thread in threads:
            thread.start()
        try:
            while any(t.is_alive() for t in threads):
                for thread in threads:
                    thread.join(timeout=1.0)
        finally:
            self.stop.set()
            for thread in threads:
                thread.join(timeout=30.0)
            if self.notifier is not None:
                self.notifier.send("stopped", "scheduler stopped",
                                   f"the scheduler stopped ({', '.join(w.device for w in self.workers)}); "
                                   + "; ".join(f"{w.device}: {w.failure}" for w in self.workers if w.failure))
                self.notifier.flush(5.0)
        return 2 if any(w.failure for w in self.workers) else 0
