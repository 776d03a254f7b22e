"""Bounded calls: each tool call's work runs on its own worker thread, and the caller waits at most its bound.

When the bound (less the few milliseconds its answer takes to build) or the caller's cancel Event fires first,
the caller gets an ``Overrun`` at once and the worker is told to stop (its ``stop`` Event is set): goto and run
check it at every hop, device actions before touching the device, so no orphan keeps tapping. Work that acts on
the game holds the device lock, one at a time; a call waiting for the lock counts that wait inside its bound.
Reads (health, screenshots) never take the lock.

The waits here are tenacity objects like every other wait of the engine (engine.core.context): the caller's wait
stops on ``stop_when_event_set(cancel) | stop_at_deadline(...)`` and sleeps on the worker's done Event, so it
wakes the moment the work ends.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Callable, Generic, TypeVar

import tenacity

from engine.core.context import retry_until, stop_rule, wait_until_deadline

log = logging.getLogger(__name__)

T = TypeVar("T")

POLL_S = 0.02
"""How often a waiting caller looks at its cancel Event; the bound itself is waited on exactly."""

ANSWER_MARGIN_S = 0.02
"""How long before its deadline a caller stops waiting for unfinished work: building, recording and sending the
timeout answer takes a few milliseconds on a loaded machine, and that answer must be ready inside the bound."""

WAITING = "waiting for the device"
RUNNING = "running"


@dataclass(frozen=True)
class Overrun:
    """The work did not answer in time: where it was (``phase``) and whether the caller cancelled it."""

    phase: str
    cancelled: bool


@dataclass
class _Box(Generic[T]):
    phase: str = "starting"
    value: T | None = None
    done: bool = False


def wait_until(ready: Callable[[], bool], sleep: Callable[[float], object], *, deadline: float,
               clock: Callable[[], float], stop: threading.Event | None = None) -> bool:
    """Ask `ready` until it says True, pausing with `sleep`, until the deadline or `stop`; its last answer."""
    wait = wait_until_deadline(tenacity.wait_fixed(POLL_S), deadline, clock)
    return retry_until(ready, bool, stop=stop_rule(deadline, clock, stop), wait=wait, sleep=sleep)


class Bounded:
    """Runs work on worker threads, each call bounded, acting work one at a time under the device lock."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.device_lock = threading.Lock()
        self._workers: set[threading.Thread] = set()
        self._workers_lock = threading.Lock()

    def run(self, name: str, work: Callable[[threading.Event, float], T], *, deadline: float,
            cancel: threading.Event | None = None, exclusive: bool = False) -> T | Overrun:
        """``work(stop, deadline)`` on a worker thread; its value, or an Overrun when the bound or cancel came first.

        `work` must not raise (the caller turns its errors into values); with `exclusive` it runs under the
        device lock.
        """
        stop = threading.Event()
        done = threading.Event()
        box: _Box[T] = _Box()

        def runner() -> None:
            try:
                if not exclusive:
                    box.phase = RUNNING
                    box.value, box.done = work(stop, deadline), True
                    return
                box.phase = WAITING
                if not self._acquire(stop, deadline):
                    return
                try:
                    box.phase = RUNNING
                    box.value, box.done = work(stop, deadline), True
                finally:
                    self.device_lock.release()
            finally:
                done.set()
                with self._workers_lock:
                    self._workers.discard(threading.current_thread())

        worker = threading.Thread(target=runner, name=f"tool-{name}", daemon=True)
        with self._workers_lock:
            self._workers.add(worker)
        worker.start()
        wait_until(done.is_set, done.wait, deadline=deadline - ANSWER_MARGIN_S, clock=self.clock, stop=cancel)
        if done.is_set() and box.done:
            return box.value
        stop.set()
        return Overrun(box.phase, cancelled=cancel is not None and cancel.is_set() and not done.is_set())

    def busy(self) -> bool:
        """Whether some work holds the device now."""
        return self.device_lock.locked()

    def try_hold(self) -> bool:
        """Take the device lock only if it is free (release it with ``release``)."""
        return self.device_lock.acquire(blocking=False)

    def release(self) -> None:
        self.device_lock.release()

    def close(self, timeout: float = 2.0) -> None:
        """Wait a little for workers that are still finishing (they were told to stop when they overran)."""
        deadline = self.clock() + timeout
        with self._workers_lock:
            workers = list(self._workers)
        for worker in workers:
            worker.join(max(0.0, deadline - self.clock()))

    def _acquire(self, stop: threading.Event, deadline: float) -> bool:
        def take() -> bool:
            return self.device_lock.acquire(timeout=max(0.0, min(POLL_S, deadline - self.clock())))

        got = wait_until(take, lambda _: None, deadline=deadline, clock=self.clock, stop=stop)
        if got and stop.is_set():  # told to stop while waiting: do not act after all
            self.device_lock.release()
            return False
        return got
