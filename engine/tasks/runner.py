"""The task runner: executes a named task (engine.config.tasks) step by step and checks its success by looking.

It keeps time through the run's context (engine.core.context), acts through the actuator (engine.navigation.actuator)
and navigates, looks and dismisses popups through the navigator's public calls; so a task shares the bounds, stuck
detectors and transcript of the run that started it. Every loop here is bounded twice: by its own count or timeout, and
by the run's deadline.

Each step run is logged (``Outcome.extra["steps"]``: its path such as ``2/do/0``, its type, done, skipped or
failed, why, and for for_each_match how many matches it tapped), the log kept even when the task fails.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.config.schema import KeyAction, SwipeAction, TapAction
from engine.config.taskfiles import TaskBook
from engine.config.tasks import (
    MAX_RUN_DEPTH,
    Condition,
    DismissPopupsStep,
    ForEachMatchStep,
    GotoStep,
    KeyStep,
    MatchCheck,
    ReadStep,
    RepeatStep,
    RunStep,
    ScrollStep,
    SwipeStep,
    TapStep,
    Task,
    WaitForStep,
    describe_condition,
    walk_steps,
)
from engine.config.taskvalues import compare
from engine.core.errors import EngineError, Interrupted, NavigationError
from engine.core.results import Observation, Outcome
from engine.core.stuck import Detectors
from engine.tasks.sight import TaskSight

if TYPE_CHECKING:
    from engine.core.context import RunContext
    from engine.navigation.actuator import Actuator
    from engine.navigation.navigator import Navigator
    from engine.tasks.progress import Progress

STEP_SETTLE_S = 0.3
"""Pause after a task's own tap or key before looking at its effect."""
STALLS_MAX = 3
"""Taps in a row that change nothing before a for_each_match step gives up (a lost tap is tried again)."""
RECOGNISE_LOOKS = 3
"""Looks after a collecting tap until the frame is one the observer recognises (black frames pass)."""
MATCHES_MAX = 20
"""Matches looked at when checking that the tapped one is gone."""
POLL_S = 0.1
"""Pause between looks of a wait_for step."""


class TaskRunner:
    """Runs the tasks of one book on one navigator.

    Args:
        navigator: an engine.navigation.navigator.Navigator (looks, navigation, popups, the belief).
        actuator: performs a task's own taps and keys (default: the navigator's).
        book: the tasks (engine.config.taskfiles.TaskBook).
    """

    def __init__(self, navigator: Navigator, book: TaskBook, actuator: Actuator | None = None,
                 progress_dir: Path | None = None) -> None:
        self.nav = navigator
        self.book = book
        self.actuator = actuator or navigator.actuator
        self.templates: dict[str, Any] = {}
        """The buttons' templates, compiled once per runner (engine.tasks.sight)."""
        self.progress_dir = progress_dir
        """Where routines record what they did today (engine.tasks.progress); None: nowhere, so no resuming."""

    def names(self) -> list[str]:
        return self.book.names()

    def run(self, name: str, ctx: RunContext, resume: bool = False) -> Outcome:
        """Run task `name` inside `ctx`; every way it can end is an Outcome (values read are in ``extra``).

        A routine (a task with `run` steps) records each chore done today; with `resume` it skips them."""
        from engine.tasks.progress import Progress

        task = self.book.get(name)
        self.nav.belief.believed_task = name
        execution = _Execution(self, task, ctx)
        if any(isinstance(s, RunStep) for s in task.steps):
            execution.progress = Progress(self.progress_dir, name, resume)
        try:
            outcome = self.nav.conclude(ctx, execution.execute)
        finally:
            self.nav.belief.believed_task = None
        outcome.extra.setdefault("values", execution.values)
        outcome.extra.setdefault("steps", execution.log)
        outcome.extra.setdefault("collected", execution.collected)
        return outcome


class _Execution:
    """One run of one task: the last observation, the values read so far, the log of its steps.

    A `run` step runs the called task as a nested execution that shares the log, the values and the count of
    what was collected.
    """

    def __init__(self, runner: TaskRunner, task: Task, ctx: RunContext, depth: int = 0,
                 parent: _Execution | None = None, prefix: str = "") -> None:
        self.runner, self.nav, self.actuator, self.task, self.ctx = runner, runner.nav, runner.actuator, task, ctx
        self.depth, self.prefix = depth, prefix
        self.values: dict[str, Any] = parent.values if parent else {}
        self.log: list[dict[str, Any]] = parent.log if parent else []
        self.collected = 0
        self.obs: Observation | None = parent.obs if parent else None
        self.progress: Progress | None = None
        """Today's record of a routine's chores (engine.tasks.progress), for a top-level run."""
        self.sight = parent.sight if parent else TaskSight(self.nav, ctx, runner.templates)

    def execute(self) -> Outcome:
        nav, task = self.nav, self.task
        self._look(expected=nav.machine.page if not nav.machine.is_stale(10) else None)
        if task.preconditions and self.obs.page not in task.preconditions:
            return Outcome(False, "precondition_failed",
                           f"{task.name} starts from {', '.join(task.preconditions)}, "
                           f"not from {self.obs.page or 'an unknown screen'}")
        for i, step in enumerate(task.steps):
            self._step(step, f"{self.prefix}{i}")
        expected = next((c.page for c in task.success if c.page), None)
        self._look(expected=expected)
        failed = [c for c in task.success if not self._holds(c)]
        extra = {"values": self.values, "steps": self.log, "collected": self.collected}
        routine = self.depth == 0 and any(isinstance(s, RunStep) for s in task.steps)
        if routine:
            from engine.tasks.progress import chore_report

            extra["chores"], summary = chore_report(self.log)
        if failed:
            return Outcome(False, "not_verified",
                           f"{task.name} finished but {describe_condition(failed[0])} does not hold "
                           f"(observed {self.obs.page or 'unknown'}, popups {list(self.obs.popups)})"
                           + (f"; chores: {summary}" if routine else ""), expected, self.obs, extra=extra)
        if routine:
            return self._routine(expected, extra, summary)
        gathers = any(isinstance(s, ForEachMatchStep) or getattr(s, "collects", False)
                      for s, _ in walk_steps(task.steps))
        if gathers and self.collected == 0:
            return Outcome(True, "verified", f"{task.name}: nothing to collect", expected, self.obs,
                           extra={**extra, "nothing_to_collect": True})
        done = f" ({self.collected} collected)" if gathers else ""
        return Outcome(True, "verified", f"{task.name} done and verified{done}", expected, self.obs, extra=extra)

    def _routine(self, expected: str | None, extra: dict[str, Any], summary: str) -> Outcome:
        """A verified routine's result: ok only when no chore failed (else status partial), each chore's outcome in
        ``extra["chores"]``."""
        if any(c["outcome"] == "failed" for c in extra["chores"]):
            return Outcome(False, "partial", f"{self.task.name}: {summary}", expected, self.obs, tool_success=True,
                           extra=extra)
        return Outcome(True, "verified", f"{self.task.name} verified: {summary}", expected, self.obs, extra=extra)

    # -- steps

    def _step(self, step: Any, path: str) -> None:
        self.ctx.checkpoint()
        entry: dict[str, Any] = {"step": path, "type": step.type, "outcome": "done", "why": ""}
        self.log.append(entry)
        if step.when is not None and not self._holds(step.when):
            entry.update(outcome="skipped", why=f"{describe_condition(step.when)} does not hold")
            return
        try:
            self._dispatch(step, path, entry)
        except NavigationError as exc:
            entry.update(outcome="failed", why=str(exc))
            raise
        self._relocalise()

    def _dispatch(self, step: Any, path: str, entry: dict[str, Any]) -> None:
        if isinstance(step, GotoStep):
            self.obs = self.nav.navigate(self.ctx, step.page)
        elif isinstance(step, TapStep):
            self._tap(step)
        elif isinstance(step, SwipeStep):
            self._swipe(step.start, step.end, step.duration_ms)
        elif isinstance(step, KeyStep):
            self._act(KeyAction(type="key", key=step.key), expected=None)
        elif isinstance(step, WaitForStep):
            self._wait_for(step)
        elif isinstance(step, DismissPopupsStep):
            self._dismiss_popups(step.max)
        elif isinstance(step, ReadStep):
            self._read(step)
        elif isinstance(step, RepeatStep):
            self._repeat(step, path)
        elif isinstance(step, ForEachMatchStep):
            entry["collected"] = self._for_each_match(step, path)
            if not entry["collected"]:
                entry["why"] = f"no {step.button} to tap"
        elif isinstance(step, ScrollStep):
            held, why = self._scroll(step)
            entry.update(outcome="done" if held else "failed", why=why)
        elif isinstance(step, RunStep):
            self._run(step, path, entry)

    def _tap(self, step: TapStep) -> None:
        if step.point is not None:
            self.ctx.record("task_step", step="tap", point=list(step.point))
            action = TapAction(type="tap", point=step.point)
        else:
            self.ctx.record("task_step", step="tap", button=step.button)
            action = TapAction(type="tap", button=step.button)
        before, frame, things = self.obs, self.nav.last_frame, self._things(step.collects)
        self._act(action, expected=self.obs.page if self.obs else None)
        if step.collects and self._took_effect(before, frame, step.button, None):
            self._collected(things)

    def _swipe(self, start: Any, end: Any, duration_ms: int) -> None:
        self.ctx.record("task_step", step="swipe", start=list(start), end=list(end))
        self._act(SwipeAction(type="swipe", start=start, end=end, duration_ms=duration_ms), expected=None)

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

    def _repeat(self, step: RepeatStep, path: str) -> None:
        for _ in range(step.max):
            if self._holds(step.until):
                return
            for j, inner in enumerate(step.do):
                self._step(inner, f"{path}/do/{j}")
            self._look(expected=step.until.page)
            self._relocalise()
        if not self._holds(step.until):
            raise NavigationError(f"{describe_condition(step.until)} did not hold after {step.max} rounds")

    def _for_each_match(self, step: ForEachMatchStep, path: str) -> int:
        """Tap the best match of the button's template, look again, repeat: how many things the taps that took
        effect collected (one per tap, or what `collects` counted).

        A tap whose effect the screen does not show (a lost tap, a button that does nothing now) is not counted;
        it is tried again, and after STALLS_MAX such taps in a row the step fails."""
        taps = attempts = stalls = got = 0
        while attempts < step.max + STALLS_MAX:
            self.ctx.checkpoint()
            if taps >= step.max or (step.until is not None and self._holds(step.until)):
                break
            matches = self._matches(step.button, step.area, 1)
            if not matches:
                break
            (x1, y1, x2, y2), score = matches[0]
            point = ((x1 + x2) // 2, (y1 + y2) // 2)
            self.ctx.record("task_step", step="for_each_match", button=step.button, point=list(point),
                            score=round(float(score), 3))
            before, frame, things = self.obs, self.nav.last_frame, self._things(step.collects)
            self._act(TapAction(type="tap", point=point), expected=self.obs.page if self.obs else None)
            attempts += 1
            if not self._took_effect(before, frame, step.button, (step.area, point)):
                stalls += 1
                if stalls >= STALLS_MAX:
                    raise NavigationError(f"{step.button} at {list(point)} did nothing after {stalls} taps")
                continue
            stalls = 0
            taps, got = taps + 1, got + things
            self._collected(things)
            for j, inner in enumerate(step.do):
                self._step(inner, f"{path}/do/{j}")
            self._relocalise()
        return got

    def _took_effect(self, before: Observation | None, frame: Any, button: str | None,
                     spot: tuple[Any, tuple[int, int]] | None) -> bool:
        """Whether a tap did what the screen can show, judged on a recognised frame (a black or loading frame
        proves nothing, and on a live screen, animated or with a ticking timer, "the frame changed" proves nothing
        either): the page changed, a popup appeared, or the button is gone (from the tapped spot `(area, point)`
        for a match, from the screen for a declared button). A point tap falls back on the frame changing."""
        from engine.core.stuck import same_pixels

        for _ in range(RECOGNISE_LOOKS):
            if self.obs.page is not None or self.obs.popups:
                break
            self.ctx.wait(POLL_S)
            self._look(expected=before.page if before else None)
        obs = self.obs
        if obs.page is None and not obs.popups:
            return False
        if before is None or obs.page != before.page or set(obs.popups) - set(before.popups):
            return True
        if spot is not None:
            area, (x, y) = spot
            return not any(x1 <= x <= x2 and y1 <= y <= y2
                           for (x1, y1, x2, y2), _ in self._matches(button, area, MATCHES_MAX))
        if button is not None and (shows := self.sight.shows(button)) is not None:
            return not shows
        return frame is None or self.nav.last_frame is None or not same_pixels(frame, self.nav.last_frame)

    def _things(self, collects: Any) -> int:
        """How many things the next collecting tap takes: the matches of `collects` ({button, area}) on the frame
        before it (at least one: the tap itself is what is seen to work), else one."""
        if not isinstance(collects, MatchCheck):
            return 1
        return max(1, len(self._matches(collects.button, collects.area, MATCHES_MAX)))

    def _collected(self, things: int) -> None:
        """A collecting tap took effect: that is progress, so the stuck detectors start over. The reward popup
        each collection brings is a new popup, not the old one coming back (twenty mails are twenty GET_ITEMS)."""
        self.collected += things
        self.ctx.detectors.dismissed.clear()
        self.ctx.detectors.clicks.clear()

    def _scroll(self, step: ScrollStep) -> tuple[bool, str]:
        """Swipe until `until` holds or the frame stops changing: (held, why)."""
        from engine.core.stuck import same_pixels

        for swipes in range(step.max + 1):
            if self._holds(step.until):
                return True, f"{describe_condition(step.until)} after {swipes} swipe(s)"
            if swipes == step.max:
                break
            before = self.nav.last_frame
            self._swipe(step.swipe.start, step.swipe.end, step.swipe.duration_ms)
            after = self.nav.last_frame
            if before is not None and after is not None and same_pixels(before, after):
                held = self._holds(step.until)
                return held, (f"{describe_condition(step.until)} does not hold and " if not held else "") + \
                    f"the list stopped moving after {swipes + 1} swipe(s)"
        return False, f"{describe_condition(step.until)} did not hold after {step.max} swipe(s)"

    def _run(self, step: RunStep, path: str, entry: dict[str, Any]) -> None:
        entry["task"] = step.task
        if self.depth >= MAX_RUN_DEPTH:
            raise NavigationError(f"run {step.task}: runs nest deeper than {MAX_RUN_DEPTH}")
        progress = self.progress if self.depth == 0 else None
        if progress is not None and step.task in progress.done:
            earlier = progress.done[step.task]
            entry.update(outcome="skipped", why=f"done earlier today (resumed): {earlier.get('why', '')}",
                         collected=0, status="resumed")
            return
        inner = _Execution(self.runner, self.runner.book.get(step.task), self.ctx, self.depth + 1, self,
                           f"{path}/")
        started, calls = self.ctx.clock(), self.ctx.attempts
        outer_detectors, self.ctx.detectors = self.ctx.detectors, Detectors()  # each chore is judged on its own
        try:
            outcome = inner.execute()
        except Interrupted:
            raise
        except EngineError as exc:  # a chore's navigation, verification or device failure: the routine goes on
            if not step.optional:
                raise
            outcome = Outcome(False, exc.status, str(exc))
        finally:
            self.ctx.detectors = outer_detectors
            self.obs = inner.obs
            self.collected += inner.collected
            entry.update(seconds=round(self.ctx.clock() - started, 3), device_calls=self.ctx.attempts - calls)
        entry.update(collected=inner.collected, status=outcome.status)
        if outcome.ok:
            entry["why"] = outcome.text
            if outcome.extra.get("nothing_to_collect"):
                entry["nothing_to_collect"] = True
            if progress is not None:
                progress.mark(step.task, entry)
            return
        if not step.optional:
            raise NavigationError(f"run {step.task}: {outcome.text}")
        entry.update(outcome="failed", why=f"{outcome.text} (optional: going on)")

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
        if c.no_popup and (self.nav.is_blocking(obs) or obs.covered):
            return False
        if c.value is not None:
            v = c.value
            right = self._field(v.than) if v.than is not None else self.values.get(v.read) if v.read else v.value
            if right is None:
                return False
            held, _ = compare(v.op, self._field(v.field), right if isinstance(right, (int, float)) else str(right),
                              v.part)
            if not held:
                return False
        for key, want in (("shows", True), ("hides", False)):
            match = getattr(c, key)
            if match is not None and bool(self._matches(match.button, match.area, 1)) != want:
                return False
        return True

    def _matches(self, button: str, area: Any, limit: int) -> list:
        """The button's template matches on the last frame inside `area` (default the screen), best first."""
        if self.nav.last_frame is None:
            self._look(expected=self.obs.page if self.obs else None)
        return self.sight.matches(button, area, limit)

    def _field(self, name: str) -> str | None:
        return self.sight.field(name, self.obs.page if self.obs else None)

    def _relocalise(self) -> None:
        if self.obs is not None and self.obs.page is not None:
            self.nav.machine.relocalise(self.obs.page, self.obs.confidence)
