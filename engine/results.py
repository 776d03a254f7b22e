"""The records that cross module boundaries: Evidence, Observation, Verdict and ToolResult.

Evidence and Observation sit on the per-frame hot path, so they are plain frozen dataclasses; ToolResult is what
callers (CLI, MCP, an LLM) read, so it converts to JSON-ready dicts.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Channel = Literal["color", "template", "ocr", "vision"]

SUGGESTED_ACTIONS = ("retry", "dismiss_popup_then_retry", "use_vision", "reconnect", "restart_app", "human")
"""The closed set an LLM caller may be told to do next."""


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

    @property
    def offsets(self) -> dict[str, tuple[int, int]]:
        """Template match offsets by signature name, to shift click areas by."""
        return {e.signature: e.offset for e in self.evidence if e.hit and e.channel == "template"}

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
        }


class Verdict(str, enum.Enum):
    """How an observation compares with what the navigator expected."""

    VERIFIED = "verified"
    POPUP = "popup"
    LOADING = "loading"
    MISMATCH = "mismatch"
    UNKNOWN = "unknown"
    DEVICE_ERROR = "device_error"


@dataclass
class ToolResult:
    """The answer of every tool: ``{ok, status, text, data}`` (see ../shared/DESIGN.md)."""

    ok: bool
    status: str
    text: str
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "status": self.status, "text": self.text, "data": self.data}

    def to_percept(self) -> dict[str, Any]:
        """This result as a percept for an agent loop: failures are more urgent than successes."""
        return {
            "modality": "tool_result",
            "priority": 1 if self.ok else (3 if self.status in ("timeout", "device_offline", "human") else 2),
            "content": self.text,
            "status": self.status,
            "tool": self.data.get("tool"),
            "data": self.data,
        }
