"""The records that cross module boundaries: Evidence, Observation, Verdict, Outcome and ToolResult.

Evidence and Observation sit on the per-frame hot path, so they are plain frozen dataclasses; ToolResult is what
callers (CLI, MCP, an LLM) read, so it converts to JSON-ready dicts. ``make_result`` is the one way a ToolResult
is made: it fills every documented ``data`` key and picks ``suggested_action`` from the one table here.
"""

from __future__ import annotations

import difflib
import enum
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Literal

from engine.core.redact import redact_text, scrub

Channel = Literal["color", "template", "ocr", "vision"]

SUGGESTED_ACTIONS = ("retry", "dismiss_popup_then_retry", "use_vision", "reconnect", "restart_app", "human")
"""The closed set an LLM caller may be told to do next."""

SUCCESS_STATUSES = ("ok", "verified", "healthy", "observed")
STOP_REASONS = ("goal_met", "unverified", "blocked", "false_claim", "budget_turns", "budget_tools", "budget_time",
                "budget_tokens", "repeat", "invalid_answers", "model_error", "cancelled")
"""The statuses an agent's episode ends with (the status of its result); only goal_met is ok."""

STATUSES: dict[str, str] = {
    # the work did not run through, or did not arrive: try again
    "timeout": "retry", "cancelled": "retry", "busy": "retry", "not_verified": "retry", "partial": "retry",
    "navigation_error": "retry", "verification_error": "retry", "model_error": "retry",
    # the device
    "device_error": "reconnect", "device_offline": "reconnect", "connection_lost": "reconnect",
    "adb_server_down": "reconnect", "device_not_found": "reconnect", "unhealthy": "reconnect",
    "device_missing": "reconnect",
    "black_screen": "restart_app", "black_frame": "restart_app",
    # the screen
    "unknown_screen": "use_vision", "popup_blocking": "dismiss_popup_then_retry",
    # a person must look
    "bad_frame": "human", "stuck": "human", "no_route": "human", "bad_argument": "human", "unknown_page": "human",
    "unknown_task": "human", "refused": "human", "precondition_failed": "human", "config_error": "human",
    "not_implemented": "human", "error": "human",
    # an outside task's worker (engine.tasks.providers); a provider may add words of its own, with their next step
    "not_started": "retry", "worker_failed": "retry",
    # an agent's episode (STOP_REASONS)
    "goal_met": "retry", "unverified": "retry", "blocked": "retry", "false_claim": "retry", "budget_turns": "retry",
    "budget_tools": "retry", "budget_time": "retry", "budget_tokens": "retry", "repeat": "retry",
    "invalid_answers": "retry",
}
"""The one status vocabulary: every status the engine reports when the work failed, with the next step an agent is
told (``suggested_action``; one of SUGGESTED_ACTIONS). A success (SUCCESS_STATUSES) has none; a status outside both
(an outside task's own word) is told to retry."""

STATUS_MEANINGS: dict[str, str] = {
    # successes
    "ok": "The call did what it was asked.",
    "verified": "The work ran and a look at the screen confirmed its outcome (the page, the task's criteria).",
    "healthy": "The ADB server, the device and its screen all answered.",
    "observed": "The screen was read; nothing was asked to change (alas_state).",
    # the work did not run through, or did not arrive
    "timeout": "The call's bound (its policy's timeout) passed; its work stopped at the next checkpoint.",
    "cancelled": "The caller cancelled the call (or Ctrl-C); the work stopped at the next checkpoint.",
    "busy": "Another call or the scheduler holds the device or this due time; nothing was done.",
    "not_verified": "The work ran, but the screen does not show the outcome it should.",
    "partial": "A routine ran; some of its chores failed (data.chores says which).",
    "navigation_error": "The navigation failed in a way no more specific status names.",
    "verification_error": "A signature could not be checked (a template missing from the asset pack, the vision "
                          "model unusable).",
    "model_error": "The vision or agent model could not be asked or answered unusably (no key, refused, 429/5xx "
                   "after retries).",
    # the device
    "device_error": "The device failed in a way no more specific status names.",
    "device_offline": "The device is listed but its transport is dead.",
    "connection_lost": "The connection to the device broke mid-call.",
    "adb_server_down": "No ADB server answers at the configured host and port.",
    "device_not_found": "The ADB server does not list the serial.",
    "unhealthy": "The health probe found something wrong (data says what).",
    "device_missing": "The health probe found no such device on the ADB server.",
    "black_screen": "The screen is black or one flat colour (asleep, or the game is not drawing).",
    "black_frame": "A screenshot came back black, after retries.",
    # the screen
    "unknown_screen": "No page or popup of the graph matches the screen.",
    "popup_blocking": "A popup covers the screen and its declared dismissal did not remove it.",
    # a person must look
    "bad_frame": "Frames have the wrong shape (another aspect ratio or orientation): fix the emulator's "
                 "resolution.",
    "stuck": "The navigation went round in circles (a click loop, a repeated hop, no new page for too long).",
    "no_route": "Both pages exist, but no chain of links leads from here to there.",
    "bad_argument": "An argument is wrong (an off-screen point, a wrong type, an unknown argument).",
    "unknown_page": "The page name is not in the graph (the text names the closest ones).",
    "unknown_task": "The task name is not known (the text names the closest ones).",
    "refused": "The request was refused on purpose (a path out of its root, a proposal that fires on clean "
               "frames, a stale draft edit).",
    "precondition_failed": "A task's precondition did not hold, so it did not start.",
    "config_error": "A graph, policy, task or schedule file (or an option) is wrong; the text says where.",
    "not_implemented": "The command or tool exists but is not implemented yet.",
    "error": "An engine error no more specific status names.",
    # an outside task's worker
    "not_started": "An outside task's worker (ALAS) could not be started.",
    "worker_failed": "An outside task's worker exited without a result of its own.",
    # an agent's episode
    "goal_met": "The goal's success criteria were seen to hold on the screen.",
    "unverified": "The goal had no criteria to check, so it cannot be called met.",
    "blocked": "One of the goal's blockers holds; the model said so, or the harness saw it.",
    "false_claim": "The model claimed success but the criteria do not hold on the screen.",
    "budget_turns": "The goal's budget of model turns ran out.",
    "budget_tools": "The goal's budget of tool calls ran out.",
    "budget_time": "The goal's budget of wall-clock seconds ran out.",
    "budget_tokens": "The goal's budget of model tokens ran out.",
    "repeat": "The same call kept giving the same result (warned at 3, refused at 5, ended at 8).",
    "invalid_answers": "The model's answers were unusable three times in a row.",
}
"""What each status word means, for people and models reading a result (the documentation's status reference is
generated from it; tests/docs/test_reference.py checks every word has one)."""

DATA_KEYS = ("tool", "target", "tool_success", "state_verification", "expected", "observed", "attempts",
             "elapsed_ms", "evidence", "screenshot_analysis", "observation")
"""The keys every ToolResult's ``data`` carries (more may follow)."""


def suggested_action(status: str) -> str | None:
    """The next step an agent should take after a result with `status` (None when it succeeded)."""
    return None if status in SUCCESS_STATUSES else STATUSES.get(status, "retry")


def closest(name: str, names: Iterable[str], n: int = 3) -> list[str]:
    """The known names closest to a mistyped one, best first (the one cutoff every "did you mean" uses)."""
    return difflib.get_close_matches(str(name), list(names), n=n, cutoff=0.5)


def did_you_mean(name: str, names: Iterable[str]) -> tuple[str, list[str]]:
    """A hint for an unknown name (``"; did you mean a, b?"`` or ``""``) and the suggestions it names."""
    options = closest(name, names)
    return (f"; did you mean {', '.join(options)}?" if options else ""), options


@dataclass(frozen=True)
class Evidence:
    """What one verifier saw for one signature on one frame."""

    channel: Channel
    signature: str
    hit: bool
    score: float
    box: tuple[int, int, int, int] | None = None
    offset: tuple[int, int] = (0, 0)
    latency_ms: float = 0.0
    text: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Observation:
    """What the observer says a frame shows."""

    page: str | None
    popups: tuple[str, ...] = ()
    loading: bool = False
    black_frame: bool = False
    confidence: float = 0.0
    evidence: tuple[Evidence, ...] = ()
    latency_ms: dict[str, float] = field(default_factory=dict)
    ambiguous: tuple[str, ...] = ()
    """Other pages that also hit, when the frame could not be told apart."""
    cover: Any = None
    """What covers the page when no declared popup explains it (engine.observe.cover.CoverReport: a panel over the
    dimmed page, or a large region unlike the page as last seen clean); None when nothing does. A covered page is
    not verified."""

    @property
    def offsets(self) -> dict[str, tuple[int, int]]:
        """Template match offsets by signature name, to shift click areas by."""
        return {e.signature: e.offset for e in self.evidence if e.hit and e.channel == "template"}

    @property
    def covered(self) -> bool:
        """A page is named and something no popup names covers it (``cover`` is set): the page is not verified.
        Derived, so not a field: ``to_dict``, ``asdict`` and equality are as without it."""
        return self.page is not None and self.cover is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "page": self.page,
            "popups": list(self.popups),
            "loading": self.loading,
            "black_frame": self.black_frame,
            "confidence": round(self.confidence, 4),
            "ambiguous": list(self.ambiguous),
            "evidence": [e.to_dict() for e in self.evidence],
            "latency_ms": {k: round(v, 3) for k, v in self.latency_ms.items()},
            **({"cover": self.cover.to_dict()} if self.cover is not None else {}),
        }


class Verdict(str, enum.Enum):
    """How an observation compares with what the navigator expected."""

    VERIFIED = "verified"
    POPUP = "popup"
    LOADING = "loading"
    MISMATCH = "mismatch"
    COVERED = "covered"
    UNKNOWN = "unknown"
    DEVICE_ERROR = "device_error"


@dataclass
class Outcome:
    """How a goto, state or task run ended, before a tool turns it into a ToolResult (engine.runtime.tools)."""

    ok: bool
    status: str
    text: str
    expected: str | None = None
    observation: Observation | None = None
    tool_success: bool | None = None
    """Whether the work itself ran through (None: the same as ``ok``); a navigation that ran but did not arrive
    still ran."""
    extra: dict[str, Any] = field(default_factory=dict)
    """More ``data`` for the result: values read, suggestions, the health record."""
    suggested: str | None = None
    """The next step, when the status is not one of this module's table (an outside task's own word)."""


@dataclass
class ToolResult:
    """The answer of every tool: ``{ok, status, text, data}`` (see ../shared/DESIGN.md). Made by make_result."""

    ok: bool
    status: str
    text: str
    data: dict[str, Any] = field(default_factory=dict)
    png: bytes = field(default=b"", repr=False, compare=False)
    """A screenshot that goes with the result (not in ``to_dict``: faces send it as image content or a file)."""

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "status": self.status, "text": self.text, "data": self.data}

    def to_percept(self) -> dict[str, Any]:
        """This result as a percept for an agent loop: failures are more urgent than successes, and timeouts and
        device faults (whatever suggests a reconnect) most urgent."""
        urgent = self.status == "timeout" or suggested_action(self.status) == "reconnect"
        return {
            "modality": "tool_result",
            "priority": 1 if self.ok else (3 if urgent else 2),
            "content": self.text,
            "status": self.status,
            "tool": self.data.get("tool"),
            "data": self.data,
        }


def make_result(
    tool: str,
    *,
    ok: bool,
    status: str,
    text: str,
    target: Any = None,
    expected: Any = None,
    observation: Observation | None = None,
    attempts: int = 1,
    elapsed_ms: float = 0.0,
    tool_success: bool | None = None,
    state_verification: str | None = None,
    suggested: str | None = None,
    extra: dict[str, Any] | None = None,
    png: bytes = b"",
) -> ToolResult:
    """The one way a ToolResult is made: every key of DATA_KEYS is filled, then `extra` is added; secrets in the
    text and data are redacted (engine.core.redact).

    Args:
        tool: the tool's name as callers know it (``alas_goto``).
        observation: the screen after the call; its page, popups, evidence and OCR text fill the analysis.
        tool_success: whether the call itself ran through (default: `ok`).
        state_verification: ``verified``, ``observed``, ``not_checked`` ... (default: verified when ok, else the
            status).
        suggested: overrides the table's suggested action for this status.
    """
    obs = observation
    data: dict[str, Any] = {
        "tool": tool,
        "target": target,
        "tool_success": ok if tool_success is None else tool_success,
        "state_verification": state_verification or ("verified" if ok else status),
        "expected": expected,
        "observed": obs.page if obs is not None else None,
        "attempts": attempts,
        "elapsed_ms": round(elapsed_ms, 1),
        "evidence": [e.to_dict() for e in obs.evidence] if obs is not None else [],
        "screenshot_analysis": {
            "blocking_element": obs.popups[0] if obs is not None and obs.popups else None,
            "ocr_detected": [e.text for e in obs.evidence if e.text] if obs is not None else [],
            "suggested_action": suggested or (None if ok else suggested_action(status)),
        },
        "observation": obs.to_dict() if obs is not None else None,
    }
    if extra:
        data.update(extra)
    return ToolResult(ok=ok, status=status, text=redact_text(text), data=scrub(data), png=png)


# ----------------------------------------------------------------------------------------------- the schema


def tool_result_model() -> type:
    """The pydantic model of a ToolResult's JSON (``ok, status, text, data``): every face declares this schema.

    Built on demand so that the per-frame records above stay free of pydantic. ``data`` lists the documented
    keys and allows more (hops, values, health, ...).
    """
    from pydantic import BaseModel, ConfigDict, Field

    class ScreenshotAnalysis(BaseModel):
        model_config = ConfigDict(extra="allow")
        blocking_element: str | None = Field(description="The popup in the way, if any.")
        ocr_detected: list[str] = Field(description="Text read on the screen.")
        suggested_action: Literal[SUGGESTED_ACTIONS] | None = Field(  # type: ignore[valid-type]
            description="What to do next when the call did not succeed.")

    class ResultData(BaseModel):
        model_config = ConfigDict(extra="allow")
        tool: str
        target: Any = Field(description="What the call worked on (a page, a task, a point).")
        tool_success: bool = Field(description="Whether the call itself ran through.")
        state_verification: str = Field(description="verified, observed, not_checked, or the failure's status.")
        expected: Any = Field(description="The page the call expected to end on.")
        observed: str | None = Field(description="The page seen after the call.")
        attempts: int = Field(description="Device calls made.")
        elapsed_ms: float
        evidence: list[dict[str, Any]] = Field(description="What each verifier saw.")
        screenshot_analysis: ScreenshotAnalysis
        observation: dict[str, Any] | None = Field(description="The screen after the call.")

    class ToolResultJson(BaseModel):
        """The answer of every tool."""

        model_config = ConfigDict(title="ToolResult")
        ok: bool = Field(description="True only when the outcome was verified.")
        status: str = Field(description="A short machine word: verified, timeout, unknown_screen, ...")
        text: str = Field(description="One human sentence.")
        data: ResultData

    return ToolResultJson


def tool_result_schema() -> dict[str, Any]:
    """The JSON Schema of a ToolResult."""
    return tool_result_model().model_json_schema()
