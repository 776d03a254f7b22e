"""What the model sees each turn: the tool declarations and one prompt built from the episode's state.

The loop is stateless towards the model: every turn is one fresh request whose single user message carries the
goal and its status, the working memory (the last percepts, most urgent first), the episodic memory of the graph
and the budget left. Nothing else of the conversation is sent, so a prompt stays bounded however long the episode
runs, and a resumed episode sends exactly what an uninterrupted one would have.

The model answers with exactly one function call: one of the eight engine tools, ``final`` (the goal is reached:
the harness checks that by looking) or ``blocked`` (it cannot be reached, with reasons). Names, pages and tasks
come from the loaded graph; nothing here knows a game.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.agent.goals import Goal, describe_criterion
from engine.agent.models import ToolDecl
from engine.tools import SPECS

FINAL = "final"
BLOCKED = "blocked"

_INT = {"type": "integer"}
_CRITERION = {
    "type": "object",
    "description": "One observable fact: exactly one of page, popup_absent, no_popup, field or task.",
    "properties": {
        "page": {"type": "string"},
        "popup_absent": {"type": "string"},
        "no_popup": {"type": "boolean"},
        "task": {"type": "string"},
        "field": {"type": "object", "properties": {
            "name": {"type": "string"}, "op": {"type": "string", "enum": ["eq", "ne", "lt", "le", "gt", "ge",
                                                                         "matches"]},
            "value": {"type": ["string", "number"]}, "part": {"type": "string", "enum": ["current", "total"]}},
            "required": ["name", "op", "value"]},
    },
}

SYSTEM = """You drive the game {game} on an Android device through verified tools. Each turn you get the goal, \
what the harness has observed so far (most urgent first) and the budget left. Answer with exactly one function \
call and nothing else.
- Prefer alas_goto (navigates and verifies) and alas_run (runs a task and verifies it) over raw taps and swipes.
- When the goal is reached, call final; the harness checks the goal's criteria by looking at the screen, and a \
claim that does not hold is refused. For a goal without declared criteria, final must name the observable \
criteria that show it is reached.
- When the goal cannot be reached, call blocked with the reasons.
- Never repeat a call that did not work; a call repeated too often is refused, then ends the episode."""

UNKNOWN_SCREEN = ("\n\nThe attached image is the screen now: it matched no page or popup of the graph. Decide "
                  "from it what to tap (adb_tap x y in screen pixels) or where to go.")


def tool_declarations(pages: Sequence[str], tasks: Sequence[str]) -> list[ToolDecl]:
    """The eight engine tools plus ``final`` and ``blocked``, with JSON Schema parameters (pages and tasks as
    enums, so a model that names one the graph lacks is told so before anything runs)."""
    params: dict[str, dict[str, Any]] = {
        "adb_tap": {"x": _INT, "y": _INT},
        "adb_swipe": {"x1": _INT, "y1": _INT, "x2": _INT, "y2": _INT, "duration_ms": _INT},
        "alas_goto": {"page": {"type": "string", "enum": list(pages)}},
        "alas_run": {"name": {"type": "string", "enum": list(tasks)}},
    }
    required = {"adb_tap": ["x", "y"], "adb_swipe": ["x1", "y1", "x2", "y2"], "alas_goto": ["page"],
                "alas_run": ["name"]}
    decls = []
    for name, spec in SPECS.items():
        if name == "alas_run" and not tasks:
            continue
        schema: dict[str, Any] = {"type": "object", "properties": params.get(name, {}),
                                  "additionalProperties": False}
        if name in required:
            schema["required"] = required[name]
        decls.append(ToolDecl(name, spec.summary, schema))
    decls.append(ToolDecl(FINAL, "The goal is reached: the harness verifies it by looking at the screen.", {
        "type": "object", "additionalProperties": False,
        "properties": {"summary": {"type": "string"},
                       "criteria": {"type": "array", "items": _CRITERION,
                                    "description": "What shows the goal is reached (required for a goal without "
                                                   "declared criteria)."}}}))
    decls.append(ToolDecl(BLOCKED, "The goal cannot be reached: stop and say why.", {
        "type": "object", "additionalProperties": False, "required": ["reasons"],
        "properties": {"reasons": {"type": "array", "items": {"type": "string"}, "minItems": 1}}}))
    return decls


def system_prompt(game: str) -> str:
    return SYSTEM.format(game=game)


def goal_lines(goal: Goal, status: Sequence[tuple[str, bool, str]], subgoals: Sequence[tuple[str, bool]]) -> str:
    """The goal, each criterion with whether it held at the last look, and the subgoals' progress."""
    lines = [f"GOAL {goal.name}: {goal.description.strip()}"]
    if goal.free_text and not goal.success:
        lines.append("No criteria are declared: your final must name the criteria that show the goal is reached.")
    for text, held, detail in status:
        lines.append(f"- [{'x' if held else ' '}] {text} ({detail})")
    for name, held in subgoals:
        lines.append(f"  subgoal {name}: {'done' if held else 'open'}")
    if goal.blockers:
        lines.append("Blockers: " + "; ".join(f"{describe_criterion(b)} means {b.reason}" for b in goal.blockers))
    return "\n".join(lines)


def user_prompt(goal_text: str, screen: str, percepts: str, episodes: str, budget_left: str,
                tasks: Sequence[str]) -> str:
    """One turn's user message (`screen`: the newest screen seen, which no pile of warnings can push out)."""
    parts = [goal_text, "", f"SCREEN NOW: {screen}", f"BUDGET: {budget_left}"]
    if tasks:
        parts += ["", "TASKS alas_run knows: " + ", ".join(tasks)]
    parts += ["", "OBSERVED (most urgent first):", percepts or "(nothing yet)"]
    if episodes:
        parts += ["", "EARLIER EPISODES of this game:", episodes]
    parts += ["", "Answer with exactly one function call."]
    return "\n".join(parts)


def screen_words(page: str | None, popups: Sequence[str]) -> str:
    """A screen in the prompt's words: ``page=page_main popups=GET_ITEMS_1``."""
    return f"page={page or 'unknown'}" + (f" popups={','.join(popups)}" if popups else "")
