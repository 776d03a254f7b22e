"""The actuator: performs one declared action on the device (tap, swipe, key, wait) and reports what it did.

A tap on a named button goes to the middle of the button's click area, shifted by the offset at which the
observer last matched that button's template (the game drew it a little elsewhere; for a tap with ``search``, where
the observer found the button inside that area: engine.observe.taps), and clipped to the screen.
Every device call goes through the run's context (counted, and checked against its bounds first); device faults
propagate (the device already retried them under its policy), so that the caller decides what they mean.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from engine.config.schema import Action, Graph, KeyAction, SwipeAction, TapAction, WaitAction

if TYPE_CHECKING:
    from engine.core.context import RunContext
    from engine.core.results import Observation
    from engine.device.base import Device


@dataclass(frozen=True)
class Performed:
    """What the actuator did: the action's type and where (screen pixels), or which key, or how long."""

    type: str
    button: str | None = None
    point: tuple[int, int] | None = None
    end: tuple[int, int] | None = None
    duration_ms: int | None = None
    key: str | None = None
    seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


class Actuator:
    """Performs declared actions on one device, in the coordinates of one server-resolved graph."""

    def __init__(self, device: Device, graph: Graph) -> None:
        self.device = device
        self.graph = graph
        self.performed = 0
        """Actions started so far (whoever asked): a look older than the last one may no longer hold."""

    def perform(self, ctx: RunContext, action: Action, obs: Observation | None = None) -> Performed:
        """Do `action`; `obs` (the observation the action was chosen on) supplies template offsets for taps."""
        self.performed += 1
        if isinstance(action, TapAction):
            x, y = self.tap_point(action, obs)
            ctx.device_call(lambda: self.device.tap(x, y))
            return Performed("tap", button=action.button, point=(x, y))
        if isinstance(action, KeyAction):
            ctx.device_call(lambda: self.device.key(action.key))
            return Performed("key", key=action.key)
        if isinstance(action, SwipeAction):
            (x1, y1), (x2, y2) = action.start, action.end
            ctx.device_call(lambda: self.device.swipe(x1, y1, x2, y2, action.duration_ms))
            return Performed("swipe", point=(x1, y1), end=(x2, y2), duration_ms=action.duration_ms)
        if isinstance(action, WaitAction):
            ctx.wait(action.seconds)
            return Performed("wait", seconds=action.seconds)
        raise TypeError(f"not an action: {action!r}")

    def tap_point(self, action: TapAction, obs: Observation | None) -> tuple[int, int]:
        """Where a tap lands: its point, or its button's click area shifted by the button's matched offset."""
        if action.point is not None:
            return action.point
        x1, y1, x2, y2 = self.graph.button(action.button).click_area
        dx, dy = obs.offsets.get(action.button, (0, 0)) if obs is not None else (0, 0)
        width, height = self.graph.resolution
        return min(max((x1 + x2) // 2 + dx, 0), width - 1), min(max((y1 + y2) // 2 + dy, 0), height - 1)

def action_key(action: Action) -> str:
    """A short name of what an action touches, for stuck detection and debouncing (``BACK_ARROW``, ``key:back``)."""
    if isinstance(action, TapAction):
        return action.button or f"point:{action.point}"
    if isinstance(action, KeyAction):
        return f"key:{action.key}"
    return action.type
