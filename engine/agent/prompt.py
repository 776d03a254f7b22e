"""What the model sees each turn: the tool declarations, a system prompt built from the loaded graph, and one
prompt built from the episode's state.

The system prompt carries the game's map as the graph declares it: the frame size the tap and swipe coordinates
are in, and every page with its description, the pages its links lead to and the text fields it shows (cut at
MAX_GRAPH_CHARS, with a note). The loop is stateless towards the model: every turn is one fresh request whose
single user message carries the goal and its status, the working memory (the last percepts, most urgent first),
the episodic memory of the graph and the budget left, and, when there is one, the screen as an image. Nothing else
of the conversation is sent, so a prompt stays bounded however long the episode runs, and a resumed episode sends
exactly what an uninterrupted one would have.

The model answers with exactly one function call (the request forces it): one of the eight engine tools, ``final``
(a claim that the goal is reached, which the harness checks against the user's criteria by looking) or ``blocked``
(it cannot be reached, with reasons). The model never writes success criteria. Names, pages and tasks come from the
loaded graph; nothing here knows a game.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.agent.models import ToolDecl
from engine.config.goals import Goal, describe_criterion
from engine.runtime.tools import SPECS

FINAL = "final"
BLOCKED = "blocked"
MAX_GRAPH_CHARS = 6000
"""The most the graph's description may take in the system prompt."""

_INT = {"type": "integer"}

SYSTEM = """You drive the game {game} on an Android device through verified tools. Each turn you get the goal, \
what the harness has observed so far (most urgent first) and the budget left. Answer with exactly one function \
call and nothing else.
- Prefer alas_goto (navigates and verifies) and alas_run (runs a task and verifies it) over raw taps and swipes.
- When the goal is reached, call final. The harness then checks the goal's criteria by looking at the screen; a \
claim that does not hold is refused, and a goal without criteria can never be verified.
- When the goal cannot be reached, call blocked with the reasons.
- Never repeat a call that did not work; a call repeated too often is refused, then ends the episode.

{graph}"""

SCREEN_IMAGE = ("\n\nThe attached image is the screen now{why}, {width}x{height} pixels (the screen is {frame_w}x"
                "{frame_h}; adb_tap and adb_swipe take screen pixels: divide image pixels by {scale:g}).")


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
    decls.append(ToolDecl(FINAL, "Claim the goal is reached: the harness checks the goal's criteria by looking.", {
        "type": "object", "additionalProperties": False,
        "properties": {"summary": {"type": "string", "description": "What you see that reaches the goal."}}}))
    decls.append(ToolDecl(BLOCKED, "The goal cannot be reached: stop and say why.", {
        "type": "object", "additionalProperties": False, "required": ["reasons"],
        "properties": {"reasons": {"type": "array", "items": {"type": "string"}, "minItems": 1}}}))
    return decls


def system_prompt(graph: Any) -> str:
    """The system prompt for `graph`: the rules, the frame size, and the pages with their links and fields."""
    return SYSTEM.format(game=graph.game, graph=graph_lines(graph))


def graph_lines(graph: Any, limit: int = MAX_GRAPH_CHARS) -> str:
    """The graph as the model reads it: the frame size, then one line per page (description, links, fields)."""
    width, height = graph.resolution
    lines = [f"SCREEN: {width}x{height} pixels; adb_tap and adb_swipe take these coordinates (x right, y down).",
             "PAGES (name: description -> the pages its links lead to; text fields it shows):"]
    pages = [p for p in graph.pages if p.name != graph.unknown_page]
    used = sum(len(line) + 1 for line in lines)
    for shown, page in enumerate(pages):
        line = f"- {page.name}: {' '.join((page.description or '').split()) or '(no description)'}"
        if page.links:
            line += " -> " + ", ".join(dict.fromkeys(link.to for link in page.links))
        if page.fields:
            line += "; fields: " + ", ".join(f.name + (f" (e.g. {f.sample})" if getattr(f, "sample", None) else "")
                                            for f in page.fields)
        if used + len(line) + 1 > limit:
            lines.append(f"({len(pages) - shown} more pages not listed; alas_goto's page list names them all)")
            break
        lines.append(line)
        used += len(line) + 1
    return "\n".join(lines)


def screen_image_note(image: Any, why: str = "") -> str:
    """The words that go with an image of the screen (an engine.llm.images.ModelImage): its size and scale."""
    return SCREEN_IMAGE.format(why=why, width=image.width, height=image.height, frame_w=image.frame_width,
                               frame_h=image.frame_height, scale=round(image.scale, 4))


def goal_lines(goal: Goal, status: Sequence[tuple[str, bool, str]], subgoals: Sequence[tuple[str, bool]]) -> str:
    """The goal, each criterion with whether it held at the last look, and the subgoals' progress."""
    lines = [f"GOAL {goal.name}: {goal.description.strip()}"]
    if not goal.success:
        lines.append("The user gave no criteria the harness can check: a final ends the episode unverified.")
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
