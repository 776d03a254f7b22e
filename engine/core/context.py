"""One run's context: its deadline, cancel event, clock and sleep, checkpoints, and what it records.

Every tool call that touches the device gets a RunContext from engine.runtime.tools, and everything below it (the
navigator, the actuator, the task runner) keeps time through it. Nothing else in the engine loops on its own
clock: waits are ``ctx.wait``, repeated looks are ``ctx.poll``, and both stop on the same tenacity rule,
``stop_when_event_set(cancel) | stop_at_deadline(...)``, with the clock and sleep injected (the soak runs on a
virtual clock and never really waits).

    ctx = RunContext("goto", "page_main", bound=30, cancel=stop, transcript=transcript)
    obs = ctx.poll(look, until=lambda o: o.page is not None, first=0.1, most=0.5, within=3)
    ctx.checkpoint()          # raises Cancelled or DeadlineExceeded
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol, TypeVar

import numpy as np
import tenacity
from tenacity.stop import stop_base
from tenacity.wait import wait_base

from engine.core.errors import Cancelled, DeadlineExceeded
from engine.core.stuck import Detectors

if TYPE_CHECKING:
    from engine.core.results import ToolResult

log = logging.getLogger(__name__)


class EventLog(Protocol):
    """Where a run's events go (engine.runtime.transcript.Transcript is the one the session passes in)."""

    def record(self, kind: str, **fields: Any) -> None: ...

T = TypeVar("T")

KEPT_FRAMES = 4
"""Frames a run keeps for its error bundle (the last ones looked at)."""


class stop_at_deadline(stop_base):  # noqa: N801 - named like tenacity's own stop strategies
    """Stop once an injected clock reaches a deadline (tenacity's ``stop_after_delay`` reads the real clock)."""

    def __init__(self, deadline: float, clock: Callable[[], float]) -> None:
        self.deadline, self.clock = deadline, clock

    def __call__(self, retry_state: tenacity.RetryCallState) -> bool:
        return self.clock() >= self.deadline


class wait_until_deadline(wait_base):  # noqa: N801
    """Another wait strategy, clipped so that no pause ends past the deadline."""

    def __init__(self, inner: wait_base, deadline: float, clock: Callable[[], float]) -> None:
        self.inner, self.deadline, self.clock = inner, deadline, clock

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        return max(0.0, min(self.inner(retry_state), self.deadline - self.clock()))


def stop_rule(deadline: float, clock: Callable[[], float], event: threading.Event | None = None) -> stop_base:
    """Stop past `deadline` on `clock`, or once `event` is set: ``stop_when_event_set(event) | stop_at_deadline``."""
    rule: stop_base = stop_at_deadline(deadline, clock)
    return rule if event is None else tenacity.stop_when_event_set(event) | rule


def retry_until(attempt: Callable[[], T], until: Callable[[T], bool], *, stop: stop_base, wait: wait_base,
                sleep: Callable[[float], object]) -> T:
    """Call `attempt` until `until(result)` holds or `stop` says so; the last result either way (errors from
    `attempt` propagate). Every repeated look or wait of the engine is this, with its own stop, wait and sleep."""
    retrying = tenacity.Retrying(
        stop=stop,
        wait=wait,
        retry=tenacity.retry_if_result(lambda result: not until(result)),
        sleep=sleep,
        retry_error_callback=lambda state: state.outcome.result(),
        reraise=True,
    )
    return retrying(attempt)


LEARNING_STEPS = frozenset({"proposal", "proposal_accepted", "proposal_refused", "learned_demoted"})


@dataclass
class RunContext:
    """The bounds and the record of one tool call (a goto, a task, a tap).

    Args:
        tool: the work's name in the transcript (``goto``, ``run``, ``state``, ``tap`` ...).
        target: what it works on (a page, a task name), for log lines and the result.
        bound: seconds the whole run may take.
        cancel: set from outside to stop the run at its next checkpoint.
        clock, sleep: injectable; with the real ``time.sleep`` a wait also wakes on cancel.
        transcript: where every recorded event is appended (engine.runtime.transcript.Transcript), or None.
        on_event: called with each recorded event (the CLI prints progress from it).
        bundle_dir: where a failed run leaves its error bundle (frames and transcript slice), or None.
    """

    tool: str
    target: Any
    bound: float
    cancel: threading.Event | None = None
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    transcript: EventLog | None = None
    on_event: Callable[[str, dict[str, Any]], None] | None = None
    bundle_dir: str | None = None
    started: float = field(init=False)
    deadline: float = field(init=False)
    attempts: int = 0
    """Device calls made."""
    hops: int = 0
    """Links taken."""
    vision_calls: int = 0
    steps: list[dict[str, Any]] = field(default_factory=list)
    frames: deque[np.ndarray] = field(default_factory=lambda: deque(maxlen=KEPT_FRAMES))
    detectors: Detectors = field(default_factory=Detectors)

    def __post_init__(self) -> None:
        self.started = self.clock()
        self.deadline = self.started + self.bound

    # ---- time

    def elapsed_ms(self) -> float:
        return (self.clock() - self.started) * 1000.0

    def remaining(self) -> float:
        return self.deadline - self.clock()

    def checkpoint(self) -> None:
        """Raise Cancelled or DeadlineExceeded when the run must stop; otherwise return at once."""
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled(f"{self.what()} was cancelled")
        if self.clock() >= self.deadline:
            raise DeadlineExceeded(f"{self.what()} did not finish within {self.bound:.0f} s")

    def wait(self, seconds: float) -> None:
        """Pause for `seconds` (never past the deadline; a cancel wakes a real wait), then checkpoint."""
        seconds = max(0.0, min(seconds, self.remaining()))
        if self.cancel is not None and self.sleep is time.sleep:
            self.cancel.wait(seconds)
        else:
            self.sleep(seconds)
        self.checkpoint()

    def device_call(self, call: Callable[[], T]) -> T:
        """One device call of the run: checked against the run's bounds, counted in ``attempts``, then made."""
        self.checkpoint()
        self.attempts += 1
        return call()

    def stop(self, within: float | None = None) -> stop_base:
        """The tenacity stop rule of this run: cancelled, or past the deadline (or `within` seconds from now)."""
        deadline = self.deadline if within is None else min(self.deadline, self.clock() + within)
        return stop_rule(deadline, self.clock, self.cancel)

    def poll(self, attempt: Callable[[], T], until: Callable[[T], bool], *, first: float, most: float,
             within: float | None = None) -> T:
        """Call `attempt` until `until(result)` holds, pausing `first` seconds and doubling up to `most`.

        Stops when `within` seconds have passed (or the run's bound, or a cancel) and returns the last result
        either way: the caller judges it. Errors from `attempt` (a device fault, a checkpoint) propagate.
        """
        deadline = self.deadline if within is None else min(self.deadline, self.clock() + within)
        wait = wait_until_deadline(tenacity.wait_exponential(multiplier=first, max=most), deadline, self.clock)
        return retry_until(attempt, until, stop=self.stop(within), wait=wait, sleep=self.wait)

    # ---- record

    def record(self, kind: str, **fields: Any) -> None:
        """One event of this run: kept in ``steps``, appended to the transcript, passed to ``on_event``."""
        entry = {"t_ms": round(self.elapsed_ms(), 1), **fields}
        self.steps.append({"kind": kind, **entry})
        if self.transcript is not None:
            try:
                self.transcript.record(kind, tool=self.tool, target=self.target, **entry)
            except (OSError, ValueError) as exc:
                log.warning("could not write the transcript: %s", exc)
        if self.on_event is not None:
            self.on_event(kind, entry)

    def learning(self) -> list[dict[str, Any]]:
        """What the graph learned in this run (engine.learning.learner): proposals made, accepted, refused, demoted."""
        return [s for s in self.steps if s["kind"] in LEARNING_STEPS]

    def keep_frame(self, frame: np.ndarray) -> None:
        self.frames.append(frame)

    def finish(self, result: ToolResult) -> ToolResult:
        """Record the result; a failure leaves an error bundle, a verified goto or task run leaves a trace."""
        self.record("result", ok=result.ok, status=result.status, text=result.text)
        if self.transcript is None:
            return result
        try:
            if not result.ok and self.bundle_dir is not None:
                frames = [(f"frame_{i}", frame) for i, frame in enumerate(self.frames)]
                path = self.transcript.error_bundle(self.bundle_dir, frames, self.steps, result=result.to_dict())
                result.data["error_bundle"] = str(path)
            elif result.ok and self.tool in ("goto", "run"):
                self.transcript.save_trace(self.tool, self.target, self.steps)
        except (OSError, TypeError, ValueError) as exc:
            log.warning("could not write the error bundle or trace: %s", exc)
        return result

    def what(self) -> str:
        """``goto page_main``: the run in two words, for messages."""
        return f"{self.tool} {self.target}".strip()
