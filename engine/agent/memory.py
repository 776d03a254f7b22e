"""What the agent remembers: percepts, the working memory of one episode and the episodic memory of a graph.

A *percept* is one short line the next model turn must see: a tool's result with the screen after it, a parser
error, a harness note or a warning. *Working memory* keeps the last few percepts of an episode and hands them to
the prompt most urgent first, bounded in count and in characters. *Episodic memory* is a JSONL file per graph
(its path is the caller's choice) with one :class:`EpisodeSummary` per finished episode; the last few are loaded
into the prompt of the next one. Reading it never trusts the file: a torn last line (a killed process) and garbage
lines are skipped and logged, and only a bounded tail of a huge file is read. Secrets never reach a percept or
the file (engine.core.redact.redact).

Priorities (higher first): 1 a success, 2 a failure, a parser error or a harness note, 3 a timeout, a device
fault or an anti-repeat warning.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.core.redact import redact
from engine.core.results import Observation, ToolResult, suggested_action

log = logging.getLogger(__name__)

Modality = Literal["tool_result", "parser_error", "observation", "harness", "warning"]
MODALITIES: tuple[str, ...] = ("tool_result", "parser_error", "observation", "harness", "warning")

PRIORITY_SUCCESS = 1
PRIORITY_FAILURE = 2
PRIORITY_URGENT = 3
"""Timeouts and device faults (any status whose suggested action is ``reconnect``), and anti-repeat warnings."""

MAX_CONTENT_CHARS = 300
"""A percept's content is one line of at most this many characters."""
MAX_LESSON_CHARS = 200
DEFAULT_PROMPT_CHARS = 2000
DEFAULT_TAIL_BYTES = 256 * 1024
"""How much of the end of an episodic memory file is read at most."""


def estimate_tokens(text: str) -> int:
    """A rough token count of `text` for prompt budgets: one token per four characters, rounded up.

    Good enough to bound prompts and budgets (English and JSON run at 3 to 5 characters per token); the model's
    own ``usageMetadata`` is the number to charge when it is known.
    """
    return (len(text) + 3) // 4


def one_line(text: Any, limit: int = MAX_CONTENT_CHARS) -> str:
    """`text` as a single line of at most `limit` characters (whitespace collapsed, an ellipsis when cut)."""
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: max(0, limit - 1)] + "…"


# ----------------------------------------------------------------------------------------------- percepts


@dataclass(frozen=True)
class Percept:
    """One thing the next model turn must see.

    Attributes:
        modality: tool_result, parser_error, observation, harness or warning.
        priority: higher is more urgent (see the module docstring).
        content: one short line for the prompt (secrets redacted).
        data: a small JSON-ready dict for the transcript (secrets redacted).
        turn: the turn that produced it.
    """

    modality: Modality
    priority: int
    content: str
    data: dict[str, Any] = field(default_factory=dict)
    turn: int = 0

    def line(self) -> str:
        """The percept as one prompt line: ``[t3 tool_result] ...``."""
        return f"[t{self.turn} {self.modality}] {self.content}"

    def to_dict(self) -> dict[str, Any]:
        return {"modality": self.modality, "priority": self.priority, "content": self.content,
                "data": self.data, "turn": self.turn}


def _make(modality: Modality, priority: int, content: Any, data: Mapping[str, Any] | None, turn: int) -> Percept:
    return Percept(modality=modality, priority=int(priority), content=one_line(redact(str(content))),
                   data=redact(dict(data or {})), turn=int(turn))


def result_priority(result: ToolResult) -> int:
    """How urgent a result is: ToolResult.to_percept()'s ranking, with every device fault raised to the top.

    ``to_percept`` ranks ``timeout`` and ``device_offline`` highest; the other device faults (``device_error``,
    ``connection_lost``, ... : every status whose suggested action is ``reconnect``) rank with them here.
    """
    priority = int(result.to_percept()["priority"])
    if not result.ok and suggested_action(result.status) == "reconnect":
        priority = max(priority, PRIORITY_URGENT)
    return priority


def _screen(result: ToolResult, observation: Observation | None) -> tuple[str | None, list[str]]:
    if observation is not None:
        return observation.page, list(observation.popups)
    seen = result.data.get("observation")
    if isinstance(seen, Mapping):
        return seen.get("page"), [str(p) for p in seen.get("popups") or ()]
    return result.data.get("observed"), []


def percept_from_result(
    result: ToolResult,
    turn: int,
    *,
    observation: Observation | None = None,
    arguments: Mapping[str, Any] | None = None,
) -> Percept:
    """A tool's result, with the screen after it, as a ``tool_result`` percept.

    Args:
        result: what the tool returned.
        turn: the turn that made the call.
        observation: the post-tool observation when the loop took one; else the result's own
            ``data["observation"]`` (or ``data["observed"]``) tells the page and popups.
        arguments: the call's arguments, kept in ``data`` for the transcript.
    """
    tool = result.data.get("tool") or "tool"
    page, popups = _screen(result, observation)
    screen = f"page={page or 'unknown'}" + (f" popups={','.join(popups)}" if popups else "")
    hint = result.data.get("screenshot_analysis", {}).get("suggested_action") if not result.ok else None
    content = f"{tool} {result.status}: {result.text} | {screen}" + (f" | next: {hint}" if hint else "")
    data = {"tool": tool, "ok": result.ok, "status": result.status, "target": result.data.get("target"),
            "page": page, "popups": popups, "suggested_action": hint}
    if arguments is not None:
        data["arguments"] = dict(arguments)
    return _make("tool_result", result_priority(result), content, data, turn)


def parser_error(text: str, turn: int, *, raw: str | None = None) -> Percept:
    """The model's last answer could not be used (invalid JSON, an unknown tool, bad arguments): say why.

    Args:
        text: what was wrong, for the model (``unknown tool alas_fly; did you mean alas_tap?``).
        raw: the start of the offending answer, kept (cut, redacted) in ``data`` for the transcript.
    """
    data = {"raw": one_line(raw, MAX_CONTENT_CHARS)} if raw is not None else {}
    return _make("parser_error", PRIORITY_FAILURE, f"your last answer was not used: {text}", data, turn)


def harness_note(text: str, turn: int, priority: int = PRIORITY_FAILURE) -> Percept:
    """Something the harness tells the model (``the criteria do not hold: page is main, not mail``)."""
    return _make("harness", priority, text, None, turn)


def warning(text: str, turn: int, priority: int = PRIORITY_URGENT) -> Percept:
    """A warning the model must heed next turn (an anti-repeat warning or refusal)."""
    return _make("warning", priority, text, None, turn)


def observation_percept(observation: Observation, turn: int) -> Percept:
    """A fresh look at the screen, not tied to a tool call (at the start of an episode, after a handover)."""
    popups = list(observation.popups)
    content = f"screen: page={observation.page or 'unknown'}" + (f" popups={','.join(popups)}" if popups else "")
    if observation.loading:
        content += " (loading)"
    data = {"page": observation.page, "popups": popups, "loading": observation.loading,
            "confidence": round(observation.confidence, 4)}
    return _make("observation", PRIORITY_SUCCESS, content, data, turn)


# ----------------------------------------------------------------------------------------------- working memory


class WorkingMemory:
    """The percepts of one episode: the newest `capacity` are kept, the prompt sees the most urgent first."""

    def __init__(self, capacity: int = 12) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._items: deque[tuple[int, Percept]] = deque(maxlen=capacity)
        self._seq = 0

    def add(self, percept: Percept) -> None:
        """Remember `percept`; the oldest one is forgotten once `capacity` are held."""
        self._seq += 1
        self._items.append((self._seq, percept))

    def extend(self, percepts: Iterable[Percept]) -> None:
        for percept in percepts:
            self.add(percept)

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def percepts(self) -> list[Percept]:
        """Every percept held, oldest first."""
        return [p for _, p in self._items]

    def for_prompt(self, limit: int = 8, max_chars: int = DEFAULT_PROMPT_CHARS) -> list[Percept]:
        """The percepts for the next prompt: highest priority first, newest first among equals.

        At most `limit` percepts whose lines (:meth:`Percept.line`, joined by newlines) fit in `max_chars`; a
        percept that does not fit is skipped and a shorter, less urgent one may still take its place.
        """
        ranked = sorted(self._items, key=lambda item: (-item[1].priority, -item[0]))
        chosen: list[Percept] = []
        used = 0
        for _, percept in ranked:
            if len(chosen) >= limit:
                break
            cost = len(percept.line()) + (1 if chosen else 0)
            if used + cost > max_chars:
                continue
            chosen.append(percept)
            used += cost
        return chosen

    def render(self, limit: int = 8, max_chars: int = DEFAULT_PROMPT_CHARS) -> str:
        """:meth:`for_prompt` as prompt text, one line per percept; never longer than `max_chars`."""
        return "\n".join(p.line() for p in self.for_prompt(limit, max_chars))


# ----------------------------------------------------------------------------------------------- episodic memory


@dataclass(frozen=True)
class EpisodeSummary:
    """One finished episode, as a line of a graph's episodic memory.

    Attributes:
        goal: the goal's name or free text.
        stop_reason: goal_met, blocked, budget_turns, ... (the loop's one stop reason).
        verified: whether the harness verified the goal by observation.
        turns: model turns taken.
        tool_calls: tools executed.
        lesson: one line worth telling the next episode (cut to MAX_LESSON_CHARS).
        ts: Unix time the episode ended.
    """

    goal: str
    stop_reason: str
    verified: bool
    turns: int
    tool_calls: int
    lesson: str = ""
    ts: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"goal": self.goal, "stop_reason": self.stop_reason, "verified": self.verified,
                "turns": self.turns, "tool_calls": self.tool_calls, "lesson": self.lesson, "ts": self.ts}

    @classmethod
    def from_dict(cls, raw: Any) -> EpisodeSummary:
        """A summary from a parsed line (ValueError when it is not one)."""
        if not isinstance(raw, Mapping):
            raise ValueError("not an object")
        try:
            checks = (isinstance(raw["goal"], str), isinstance(raw["stop_reason"], str),
                      isinstance(raw["verified"], bool), type(raw["turns"]) is int,
                      type(raw["tool_calls"]) is int, isinstance(raw.get("lesson", ""), str),
                      isinstance(raw.get("ts", 0.0), (int, float)))
        except KeyError as exc:
            raise ValueError(f"missing {exc}") from None
        if not all(checks):
            raise ValueError("a field has the wrong type")
        return cls(goal=raw["goal"], stop_reason=raw["stop_reason"], verified=raw["verified"],
                   turns=raw["turns"], tool_calls=raw["tool_calls"], lesson=raw.get("lesson", ""),
                   ts=float(raw.get("ts", 0.0)))

    def line(self) -> str:
        """The summary as one prompt line."""
        outcome = "verified" if self.verified else "not verified"
        text = f"{self.goal}: {self.stop_reason} ({outcome}) in {self.turns} turns, {self.tool_calls} tools"
        return one_line(text + (f"; lesson: {self.lesson}" if self.lesson else ""), MAX_CONTENT_CHARS)


class EpisodicMemory:
    """A graph's episode summaries in one JSONL file, appended one line per episode.

    Args:
        path: the file (created with its folder on the first append).
        tail_bytes: the most that :meth:`last` reads from the end of the file.
    """

    def __init__(self, path: str | Path, *, tail_bytes: int = DEFAULT_TAIL_BYTES) -> None:
        if tail_bytes < 1024:
            raise ValueError("tail_bytes must be at least 1024")
        self.path = Path(path)
        self.tail_bytes = tail_bytes

    def append(self, summary: EpisodeSummary) -> EpisodeSummary:
        """Write `summary` as one line (secrets redacted, the lesson cut to one line); returns what was written.

        A torn last line left by a killed writer is ended first, so it cannot swallow this one.
        """
        entry = redact(summary.to_dict())
        entry["lesson"] = one_line(entry["lesson"], MAX_LESSON_CHARS)
        entry["goal"] = one_line(entry["goal"], MAX_CONTENT_CHARS)
        entry["ts"] = summary.ts or round(time.time(), 3)
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as f:
            if f.tell() > 0 and not _ends_with_newline(self.path, f.tell()):
                line = "\n" + line
            f.write(line.encode("utf-8"))
            f.flush()
            os.fsync(f.fileno())
        return EpisodeSummary.from_dict(entry)

    def remember(self, goal: str, stop_reason: str, text: str, verified: bool, turns: int,
                 calls: list[dict[str, Any]]) -> None:
        """Append one finished episode; its lesson is the calls that reached a verified goal, else how it
        stopped. A file that cannot be written is logged, never raised: memory must not fail an episode."""
        done = [f"{c['tool']}({', '.join(str(v) for v in c['arguments'].values())})" for c in calls if c["ok"]]
        lesson = ("reached by " + ", ".join(done[-6:])) if verified and done else text
        try:
            self.append(EpisodeSummary(goal, stop_reason, verified, turns, len(calls), lesson))
        except OSError as exc:
            log.warning("episodic memory %s not written: %s", self.path, exc)

    def last(self, n: int) -> list[EpisodeSummary]:
        """The last `n` readable summaries, oldest first (fewer when the bounded tail holds fewer)."""
        if n <= 0 or not self.path.exists():
            return []
        summaries: list[EpisodeSummary] = []
        skipped = 0
        for raw in reversed(self._tail_lines()):
            try:
                summaries.append(EpisodeSummary.from_dict(json.loads(raw)))
            except (ValueError, UnicodeDecodeError):
                skipped += 1
                continue
            if len(summaries) == n:
                break
        if skipped:
            log.warning("episodic memory %s: skipped %d unreadable line(s)", self.path, skipped)
        return summaries[::-1]

    def render(self, n: int = 5, max_chars: int = 1000) -> str:
        """The last `n` summaries as prompt lines, newest kept first when `max_chars` is short."""
        lines: list[str] = []
        used = 0
        for summary in reversed(self.last(n)):
            text = f"- {summary.line()}"
            cost = len(text) + (1 if lines else 0)
            if used + cost > max_chars:
                break
            lines.append(text)
            used += cost
        return "\n".join(reversed(lines))

    def _tail_lines(self) -> list[bytes]:
        with open(self.path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            start = max(0, size - self.tail_bytes)
            f.seek(start)
            chunk = f.read(self.tail_bytes)
        lines = chunk.split(b"\n")
        if start > 0:
            lines = lines[1:]  # the first piece is the end of a line that began before the tail
        return [line for line in lines if line.strip()]


def _ends_with_newline(path: Path, size: int) -> bool:
    with open(path, "rb") as f:
        f.seek(size - 1)
        return f.read(1) == b"\n"
