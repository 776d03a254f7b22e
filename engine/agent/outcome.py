"""How an episode ends: its result, small enough for stdout, and the skill a verified episode leaves.

The result is shaped like a ToolResult whose status is the stop reason (engine.core.results.STOP_REASONS); it is
ok only for ``goal_met``, which only the harness's look can give. Its ``data`` stays small whatever the episode
did: the last MAX_CALLS_SHOWN calls (``calls_total`` counts them all; the checkpoint keeps every one) and texts cut
at MAX_TEXT_CHARS. A skill is saved only from a verified episode.
"""

from __future__ import annotations

import logging
from typing import Any

from engine.config.goals import describe_criterion
from engine.core.errors import EngineError, EpisodeEnded
from engine.core.results import ToolResult, make_result

log = logging.getLogger(__name__)

MAX_CALLS_SHOWN = 20
MAX_TEXT_CHARS = 500


def episode_result(goal: Any, state: Any, stop: EpisodeEnded, look: Any, checkpoint: str | None,
                   skill: str | None) -> ToolResult:
    """The ToolResult of an ended episode (`look`: the harness's last look, or None)."""
    spend = state.spend
    calls = [{**c, "arguments": _short(c.get("arguments"))} for c in state.calls[-MAX_CALLS_SHOWN:]]
    data = {"goal": goal.name, "verified": state.verified, "stop_reason": stop.reason,
            "turns": spend.turns, "tool_calls": spend.tool_calls, "model_calls": spend.model_calls,
            "tokens": spend.tokens, "deterministic_calls": spend.deterministic_calls,
            "parser_errors": spend.parser_errors, "false_claims": spend.false_claims, "looks": spend.looks,
            "seconds": round(spend.seconds, 3), "episode": state.episode, "checkpoint": checkpoint,
            "skill": skill, "calls": calls, "calls_total": len(state.calls),
            "criteria": [{"criterion": describe_criterion(r.criterion), "held": r.held, "detail": _short(r.detail)}
                         for r in (look.results if look else [])],
            **{k: _short(v) for k, v in stop.data.items()}}
    counts = (f" ({spend.turns} turns, {spend.tool_calls} tool calls, {spend.model_calls} model calls, "
              f"{spend.tokens} tokens)")
    return make_result("agent", ok=state.verified, status=stop.reason, text=_short(stop.text) + counts,
                       target=goal.name, elapsed_ms=spend.seconds * 1000.0,
                       observation=look.observation if look else None, tool_success=True,
                       state_verification="verified" if state.verified else "not_verified", extra=data)


def save_skill(skills: Any, tools: Any, goal: Any, state: Any) -> str | None:
    """Save a verified episode's calls as a skill (None when there is no store, nothing to save, or it failed)."""
    if skills is None or not state.verified:
        return None
    from engine.agent.skills import save_verified_skill, skill_name

    try:
        return save_verified_skill(skills, tools, goal, state, name=skill_name(goal))
    except (ValueError, OSError, EngineError) as exc:
        log.warning("the skill of goal %s was not saved: %s", goal.name, exc)
        return None


def _short(value: Any) -> Any:
    """`value` with its texts cut at MAX_TEXT_CHARS and its lists at MAX_CALLS_SHOWN items."""
    if isinstance(value, str):
        return value if len(value) <= MAX_TEXT_CHARS else value[:MAX_TEXT_CHARS] + f"... ({len(value)} chars)"
    if isinstance(value, dict):
        return {k: _short(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_short(v) for v in value[:MAX_CALLS_SHOWN]]
    return value
