"""The task runner: executes a named task (engine.tasks) step by step and checks its success by looking.

It keeps time through the run's context (engine.context), acts through the actuator (engine.actuator) and
navigates, looks and dismisses popups through the navigator's public calls; so a task shares the bounds, stuck
detectors and transcript of the run that started it. Every loop here is bounded twice: by its own count or
timeout, and by the run's deadline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.errors import NavigationError
from engine.results import Observation, Outcome
from engine.schema import KeyAction, SwipeAction, TapAction
from engine.tasks import (
    Condition, DismissPopupsStep, GotoStep, KeyStep, ReadStep, RepeatStep, SwipeStep, Task, TaskBook, TapStep,
    WaitForStep, describe_condition,
)

if TYPE_CHECKING:
    from engine.actuator import Actuator
    from engine.context import RunContext
    from engine.navigator import Navigator

STEP_SETTLE_S = 0.3
"""Pause after a task's own tap or key before looking at its effect."""
POLL_S = 0.1
"""Pause between looks of a wait_for step."""


class TaskRunner:
    """Runs the tasks of one book on one navigator.

    Args:
        navigator: an engine.navigator.Navigator (looks, navigation, popups, the belief).
        actuator: performs a task's own taps and keys (default: the navigator's).
        book: the tasks (engine.tasks.TaskBook).
    """

    def __init__(self, navigator: Navigator, book: TaskBook, actuator: Actuator | None = None) -> None:
        self.nav = navigator
        self.book = book
        self.actuator = actuator or navigator.actuator

    def names(self) -> list[str]:
        return self.book.names()

    def run(self, name: str, ctx: RunContext) -> Outcome:
        """Run task `name` inside `ctx`; every way it can end is an Outcome (values read are in ``extra``)."""
        task = self.book.get(name)
        self.nav.belief.believed_task = name
        try:
            return self.nav.conclude(ctx, lambda: _Execution(self, task, ctx).execute())
        finally:
            self.nav.belief.believed_task = None


class _Execution:
    """One run of one task: the last observation, the values read so far."""

    def __init__(self, runner: TaskRunner, task: Task, ctx: RunContext) -> None:
        self.nav, self.actuator, self.task, self.ctx = runner.nav, runner.actuator, task, ctx
        self.values: dict[str, Any] = {}
        self.obs: Observation | None = None

    def execute(self) -> Outcome:
        nav, task = self.nav, self.task
        self._look(expected=nav.machine.page if not nav.machine.is_stale(10) else None)
        if task.preconditions and self.obs.page not in task.preconditions:
            return Outcome(False, "precondition_failed",
                           f"{task.name} starts from {', '.join(task.preconditions)}, "
                           f"not from {self.obs.page or 'an unknown screen'}")
        for step in task.steps:
            self._step(step)
        expected = next((c.page for c in task.success if c.page), None)
        self._look(expected=expected)
        failed = [c for c in task.success if not self._holds(c)]
        extra = {"values": self.values}
        if failed:
            return Outcome(False, "not_verified",
                           f"{task.name} finished but {describe_condition(failed[0])} does not hold "
                           f"(observed {self.obs.page or 'unknown'}, popups {list(self.obs.popups)})",
                           expected, self.obs, extra=extra)
        return Outcome(True, "verified", f"{task.name} done and verified", expected, self.obs, extra=extra)

    # -- steps

    def _step(self, step: Any) -> None:
        self.ctx.checkpoint()
        if step.when is not None and not self._holds(step.when):
            return
        if isinstance(step, GotoStep):
            self.obs = self.nav.navigate(self.ctx, step.page)
        elif isinstance(step, TapStep):
            self._tap(step)
        elif isinstance(step, SwipeStep):
            self.ctx.record("task_step", step="swipe", start=list(step.start), end=list(step.end))
            self._act(SwipeAction(type="swipe", start=step.start, end=step.end, duration_ms=step.duration_ms),
                      expected=None)
        elif isinstance(step, KeyStep):
            self._act(KeyAction(type="key", key=step.key), expected=None)
        elif isinstance(step, WaitForStep):
            self._wait_for(step)
        elif isinstance(step, DismissPopupsStep):
            self._dismiss_popups(step.max)
        elif isinstance(step, ReadStep):
            self._read(step)
        elif isinstance(step, RepeatStep):
            self._repeat(step)
        self._relocalise()

    def _tap(self, step: TapStep) -> None:
        if step.point is not None:
            self.ctx.record("task_step", step="tap", point=list(step.point))
            action = TapAction(type="tap", point=step.point)
        else:
            self.ctx.record("task_step", step="tap", button=step.button)
            action = TapAction(type="tap", button=step.button)
        self._act(action, expected=self.obs.page if self.obs else None)

    def _act(self, action: Any, expected: str | None) -> None:
        self.actuator.perform(self.ctx, action, self.obs)
        self.ctx.wait(STEP_SETTLE_S)
        self._look(expected=expected)

    def _wait_for(self, step: WaitForStep) -> None:
        if self._holds(step.until):
            return
        self.ctx.poll(lambda: self._look(expected=step.until.page), until=lambda _: self._holds(step.until),
                      first=POLL_S, most=POLL_S, within=step.timeout)
        if not self._holds(step.until):
            raise NavigationError(f"waited {step.timeout:.0f} s for {describe_condition(step.until)}")

    def _dismiss_popups(self, most: int) -> None:
        for _ in range(most):
            if not self.nav.is_blocking(self.obs):
                break
            self.nav.dismiss(self.ctx, self.obs)
            self._look(expected=self.obs.page)

    def _repeat(self, step: RepeatStep) -> None:
        for _ in range(step.max):
            if self._holds(step.until):
                return
            for inner in step.do:
                self._step(inner)
            self._look(expected=step.until.page)
            self._relocalise()
        if not self._holds(step.until):
            raise NavigationError(f"{describe_condition(step.until)} did not hold after {step.max} rounds")

    def _read(self, step: ReadStep) -> None:
        from verifiers.ocr import read_value

        nav = self.nav
        spec = next((f for p in nav.graph.pages for f in p.fields if f.name == step.field), None)
        if spec is None or nav.last_frame is None:
            raise NavigationError(f"cannot read {step.field}: no such field or no frame")
        text, value, confidence = read_value(nav.last_frame, spec.area, spec.pattern)  # NFKC: full-width digits
        self.values[step.into or step.field] = value
        self.ctx.record("read", field=step.field, page=self.obs.page if self.obs else None, text=text, value=value,
                        confidence=round(float(confidence or 0), 3))
        if value is None:
            raise NavigationError(f"read {step.field}: {text!r} does not match {spec.pattern!r}")

    # -- looking

    def _look(self, expected: str | None) -> Observation:
        self.obs = self.nav.look(self.ctx, expected=expected)
        self._relocalise()
        return self.obs

    def _holds(self, c: Condition) -> bool:
        obs = self.obs
        if obs is None:
            return False
        if c.page is not None and obs.page != c.page:
            return False
        if c.popup is not None and c.popup not in obs.popups:
            return False
        return not (c.no_popup and self.nav.is_blocking(obs))

    def _relocalise(self) -> None:
        if self.obs is not None and self.obs.page is not None:
            self.nav.machine.relocalise(self.obs.page, self.obs.confidence)
