"""Model providers: the neutral records the agent loop speaks, the Provider protocol, and the replay provider.

The loop never sees a vendor type. It hands a provider a system prompt, the conversation as ``Message`` records and
the tools as ``ToolDecl`` records (JSON Schema parameters), and gets one ``ModelTurn`` back: text, tool calls and
token usage. Every failure is a ``ModelError`` whose ``reason`` is one of ``REASONS``.

Providers:

- ``engine.agent.gemini.GeminiProvider``: Gemini through google-genai (``GeminiProvider.from_env()``).
- ``ReplayProvider(path)``: plays recorded turns from a JSONL file, one turn a line, in order::

      {"text": "...", "calls": [{"name": "tap", "arguments": {"x": 1}, "id": "c1"}],
       "usage": {"input_tokens": 10, "output_tokens": 3}}
      {"error": {"reason": "rate_limited", "message": "busy"}}

  ``record_turn(path, turn)`` appends a turn (or a ModelError) in that format. An agent transcript
  (transcript.jsonl of an episode) is read as well: its ``agent_response`` lines are the turns, so an episode
  replays from its own ledger.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from engine.core.errors import ModelError

log = logging.getLogger(__name__)

REASONS = ("not_configured", "timeout", "rate_limited", "server_error", "unavailable", "server_timeout",
           "bad_request", "unauthenticated", "permission_denied", "not_found", "oversized", "malformed", "exhausted",
           "refused")
"""Every ``ModelError.reason`` a provider raises (the service's codes as engine.llm.errors names them)."""

Role = Literal["user", "model", "tool"]


@dataclass(frozen=True)
class ToolDecl:
    """A tool the model may call: its name, what it does, and its arguments as a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True)
class Call:
    """One tool call the model asked for; ``id`` pairs it with its CallResult when the service gives one.

    ``signature`` is the service's opaque thought signature (base64), sent back with the call in later turns as
    Gemini asks; the loop just keeps the Call as it came.
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    signature: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "arguments": self.arguments}
        out.update({k: v for k, v in (("id", self.id), ("signature", self.signature)) if v is not None})
        return out


@dataclass(frozen=True)
class CallResult:
    """What a tool call returned, fed back to the model (``response`` is a JSON object)."""

    name: str
    response: dict[str, Any]
    id: str | None = None


@dataclass(frozen=True)
class Message:
    """One entry of the conversation: the user's (harness's) text, the model's turn, or tool results."""

    role: Role
    text: str | None = None
    calls: tuple[Call, ...] = ()
    results: tuple[CallResult, ...] = ()
    image: bytes | None = None
    """An image the model should see with the text (the screen now: engine.llm.images.model_image)."""
    image_type: str = "image/jpeg"


@dataclass(frozen=True)
class Usage:
    """Tokens one model call cost (thinking tokens count as output)."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}


@dataclass(frozen=True)
class ModelTurn:
    """One answer of the model: its text (or None), the tool calls it asks for, usage, and the raw response
    (a JSON-able dict with secrets redacted; None for replayed turns)."""

    text: str | None
    calls: tuple[Call, ...] = ()
    usage: Usage = Usage()
    raw: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSONL form ``ReplayProvider`` reads (``raw`` is not kept)."""
        return {"text": self.text, "calls": [c.to_dict() for c in self.calls], "usage": self.usage.to_dict()}


@runtime_checkable
class Provider(Protocol):
    """Something that answers one model turn.

    ``generate`` returns the model's next turn for `messages` under `system`, offering `tools`, within `timeout`
    seconds (retries and waits included). It raises ModelError with ``reason`` in REASONS.
    """

    name: str

    def generate(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolDecl], *, timeout: float
    ) -> ModelTurn: ...


# --- replay --------------------------------------------------------------------------------------------------------


def _malformed(path: Path, lineno: int, why: str) -> ModelError:
    return ModelError(f"{path}:{lineno}: {why}", reason="malformed", file=str(path), line=lineno)


def _int(value: object, path: Path, lineno: int, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _malformed(path, lineno, f"{what} is not a non-negative integer")
    return value


def _parse_call(item: object, path: Path, lineno: int) -> Call:
    if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
        raise _malformed(path, lineno, "a call is not an object with a name")
    unknown = set(item) - {"name", "arguments", "id", "signature"}
    if unknown:
        raise _malformed(path, lineno, f"a call has unknown keys: {', '.join(sorted(unknown))}")
    arguments = item.get("arguments", {})
    if not isinstance(arguments, dict):
        raise _malformed(path, lineno, f"the arguments of call {item['name']!r} are not an object")
    call_id, signature = item.get("id"), item.get("signature")
    if any(v is not None and not isinstance(v, str) for v in (call_id, signature)):
        raise _malformed(path, lineno, "a call's id or signature is not text")
    return Call(item["name"], arguments, call_id, signature)


def _parse_error(error: object, path: Path, lineno: int) -> ModelError:
    if not isinstance(error, dict) or error.get("reason") not in REASONS:
        raise _malformed(path, lineno, f"an error needs a reason, one of {', '.join(REASONS)}")
    message = error.get("message") or f"replayed {error['reason']}"
    return ModelError(str(message), reason=error["reason"], replayed=True)


def parse_turn_line(text: str, path: Path, lineno: int) -> ModelTurn | ModelError:
    """One JSONL line as a ModelTurn, or the ModelError it replays; ModelError(malformed) naming the line."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _malformed(path, lineno, f"not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise _malformed(path, lineno, "a turn is not a JSON object")
    if "error" in data:
        return _parse_error(data["error"], path, lineno)
    unknown = set(data) - {"text", "calls", "usage"}
    if unknown:
        raise _malformed(path, lineno, f"unknown keys: {', '.join(sorted(unknown))}")
    turn_text, calls, usage = data.get("text"), data.get("calls", []), data.get("usage", {})
    if turn_text is not None and not isinstance(turn_text, str):
        raise _malformed(path, lineno, "text is not a string")
    if not isinstance(calls, list):
        raise _malformed(path, lineno, "calls is not a list")
    if not isinstance(usage, dict):
        raise _malformed(path, lineno, "usage is not an object")
    return ModelTurn(
        text=turn_text,
        calls=tuple(_parse_call(item, path, lineno) for item in calls),
        usage=Usage(_int(usage.get("input_tokens", 0), path, lineno, "input_tokens"),
                    _int(usage.get("output_tokens", 0), path, lineno, "output_tokens")),
    )


class ReplayProvider:
    """Plays the turns recorded in a JSONL file, one per ``generate``, ignoring what it is asked.

    Blank lines are skipped. A line ``{"error": {...}}`` raises that ModelError; a malformed line raises
    ModelError(malformed) naming ``file:line``; past the last line every call raises ModelError(exhausted).
    """

    name = "replay"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ModelError(f"cannot read the replay file {self.path}: {exc.strerror}", reason="not_configured",
                             file=str(self.path)) from None
        self._lines = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
        if self._lines and _is_ledger_line(self._lines[0][1]):
            self._lines = list(_ledger_turns(self._lines))
        self._next = 0
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """Turns not played yet."""
        return len(self._lines) - self._next

    def generate(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolDecl], *, timeout: float
    ) -> ModelTurn:
        with self._lock:
            if self._next >= len(self._lines):
                raise ModelError(f"the replay {self.path} has no turn left ({len(self._lines)} played)",
                                 reason="exhausted", file=str(self.path))
            lineno, text = self._lines[self._next]
            self._next += 1
        turn = parse_turn_line(text, self.path, lineno)
        if isinstance(turn, ModelError):
            log.info("replay %s:%d: %s (%s)", self.path, lineno, turn.message, turn.reason)
            raise turn
        return turn


def _is_ledger_line(text: str) -> bool:
    try:
        entry = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(entry, dict) and "kind" in entry and "seq" in entry


def _ledger_turns(lines: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """The model turns an agent transcript recorded (its ``agent_response`` lines), in the replay format."""
    for lineno, text in lines:
        try:
            entry = json.loads(text)
        except json.JSONDecodeError:
            continue  # a torn line of a killed run
        if not isinstance(entry, dict) or entry.get("kind") != "agent_response":
            continue
        if isinstance(entry.get("error"), dict):
            yield lineno, json.dumps({"error": entry["error"]})
        elif isinstance(entry.get("response"), dict):
            yield lineno, json.dumps(entry["response"])


def record_turn(path: str | Path, turn: ModelTurn | ModelError) -> None:
    """Append `turn` (or a model failure) to the JSONL file at `path` in the format ReplayProvider plays."""
    if isinstance(turn, ModelError):
        data: dict[str, Any] = {"error": {"reason": turn.reason, "message": turn.message}}
    else:
        data = turn.to_dict()
    line = json.dumps(data, ensure_ascii=False, sort_keys=True)
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")
