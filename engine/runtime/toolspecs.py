"""What each of the eight tools is: its name, the policy that bounds it, its default bound, a one-line summary,
and whether it moves the game (engine.runtime.tools runs them; engine.faces.mcp_server describes them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, the policy that bounds it, and what it does (the MCP description)."""

    name: str
    policy: str | None
    default_bound: float
    summary: str
    acts: bool
    """Whether it moves the game (and so takes the device lock)."""


SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec("adb_health", "health", 1.8, "Check the device and the ADB connection; answers even mid-goto.",
                 False),
        ToolSpec("adb_screenshot", "screenshot", 2.8, "Take a screenshot: the frame as PNG and a black-frame flag.",
                 False),
        ToolSpec("adb_tap", "tap", 0.9, "Tap the point (x, y) in screen pixels, then observe the screen.", True),
        ToolSpec("adb_swipe", "swipe", 0.95,
                 "Swipe from (x1, y1) to (x2, y2) over duration_ms milliseconds, then observe the screen.", True),
        ToolSpec("alas_state", "state", 2.9,
                 "Observe the current page (popups, loading, evidence) and report the engine's belief.", False),
        ToolSpec("alas_goto", "goto", 30.0,
                 "Navigate to a page of the game graph and verify arrival by looking at the screen.", True),
        ToolSpec("alas_tools", None, 1.0, "List the tasks alas_run can run, with their descriptions.", False),
        ToolSpec("alas_run", "run", 60.0, "Run a named task and verify its outcome.", True),
    )
}
TOOL_NAMES = tuple(SPECS)
