"""The harness's own eyes: look at the screen and check a goal's criteria and blockers, whatever the model says.

A look is one fresh screenshot, observed by the session's observer under the device lock and the ``state``
tool's bound; while the game shows a loading screen or a black frame it looks again (bounded) rather than judge a
transition. Text fields are read with OCR on that same frame, each at most once per look.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.config.goals import Blocker, Criterion, CriterionResult, Goal, all_held, evaluate
from engine.core.bounded import Overrun
from engine.core.errors import EngineError
from engine.core.results import Observation
from engine.llm.images import ModelImage, model_image

SETTLE_S = 0.2
"""Pause between looks while the screen is loading or black."""


@dataclass
class Look:
    """One verification: what was seen, each criterion's result, the blocker that held (its reason), or why
    nothing could be seen."""

    observation: Observation | None
    results: list[CriterionResult] = field(default_factory=list)
    blocker: str | None = None
    error: str | None = None

    @property
    def page(self) -> str | None:
        return self.observation.page if self.observation is not None else None

    @property
    def popups(self) -> list[str]:
        return list(self.observation.popups) if self.observation is not None else []


class Harness:
    """Checks criteria by looking, through the tools' device lock and bounds."""

    def __init__(self, tools: Any) -> None:
        self.tools = tools

    def look(self, criteria: list[Criterion], blockers: list[Blocker], tasks: Mapping[str, bool], *,
             cancel: threading.Event | None = None) -> Look:
        """Look at the screen and check `criteria` and `blockers` (task criteria against `tasks`)."""
        tools = self.tools
        if tools.observer is None:
            return Look(None, self._judge(criteria, None, None, tasks), error="this session cannot observe")
        deadline = tools.clock() + tools.bound("alas_state")
        seen = tools.bounded.run("agent_look", self._observe, deadline=deadline, cancel=cancel, exclusive=True)
        if isinstance(seen, Overrun):
            return Look(None, self._judge(criteria, None, None, tasks), error=f"the look overran ({seen.phase})")
        if isinstance(seen, str):
            return Look(None, self._judge(criteria, None, None, tasks), error=seen)
        obs, frame = seen
        reader = _FieldReader(tools.graph, frame)
        blocker = next((b.reason for b, r in zip(blockers, evaluate(blockers, obs, read_field=reader,
                                                                     task_outcome=tasks.get)) if r.held), None)
        return Look(obs, self._judge(criteria, obs, reader, tasks), blocker=blocker)

    def quick(self, seen: Mapping[str, Any], criteria: list[Criterion], tasks: Mapping[str, bool]) -> bool:
        """Whether a tool's reported observation (its ``data["observation"]``) satisfies `criteria` without
        fields; a hint to look, never a verdict."""
        obs = Observation(page=seen.get("page"), popups=tuple(seen.get("popups") or ()))
        return all_held(evaluate(criteria, obs, read_field=lambda _: None, task_outcome=tasks.get))

    def quick_goal(self, goal: Goal, look: Look | None, tasks: Mapping[str, bool]) -> bool:
        """Whether a subgoal held at `look` (text fields not read)."""
        if look is None or look.observation is None:
            return False
        checks = [c for c in goal.success if c.field is None]
        return bool(checks) and all_held(evaluate(checks, look.observation, read_field=lambda _: None,
                                                  task_outcome=tasks.get))

    def snapshot(self, *, cancel: threading.Event | None = None) -> ModelImage | None:
        """The screen as the model sees it (engine.llm.images: downscaled, bounded in bytes), taken under the
        screenshot's bound, to hand a screen the engine cannot name to the model; None when it cannot be taken in
        time."""
        tools = self.tools

        def shoot(stop: threading.Event, deadline: float) -> ModelImage | None:
            try:
                return model_image(tools.device.screenshot(allow_black=True))
            except (EngineError, OSError, ValueError):
                return None

        deadline = tools.clock() + tools.bound("adb_screenshot")
        image = tools.bounded.run("agent_snapshot", shoot, deadline=deadline, cancel=cancel, exclusive=True)
        return None if isinstance(image, Overrun) else image

    # -- internals

    def _observe(self, stop: threading.Event, deadline: float) -> tuple[Observation, Any] | str:
        tools = self.tools
        try:
            while True:
                frame = tools.device.screenshot(allow_black=True)
                obs = tools.observer.observe(frame)
                settled = not obs.loading and not obs.black_frame
                if settled or tools.clock() + SETTLE_S >= deadline or stop.is_set():
                    break
                tools.sleep(SETTLE_S)  # the tools' own time, so a virtual clock moves too
        except (EngineError, OSError) as exc:
            return f"the look failed: {exc}"
        if tools.navigator is not None and obs.page is not None:
            tools.navigator.machine.relocalise(obs.page, obs.confidence)
        return obs, frame

    @staticmethod
    def _judge(criteria: list[Criterion], obs: Observation | None, reader: Any,
               tasks: Mapping[str, bool]) -> list[CriterionResult]:
        return evaluate(criteria, obs, read_field=reader or (lambda _: None), task_outcome=tasks.get)


class _FieldReader:
    """Reads a text field on one frame, at most once per field."""

    def __init__(self, graph: Any, frame: Any) -> None:
        self.graph, self.frame = graph, frame
        self._values: dict[str, str | None] = {}

    def __call__(self, name: str) -> str | None:
        if name not in self._values:
            self._values[name] = self._read(name)
        return self._values[name]

    def _read(self, name: str) -> str | None:
        from verifiers.ocr import read_value

        spec = next((f for p in self.graph.pages for f in p.fields if f.name == name), None)
        if spec is None or self.frame is None:
            return None
        _text, value, _confidence = read_value(self.frame, spec.area, spec.pattern)
        return value
