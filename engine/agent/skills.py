"""Learned skills: the tool calls that reached a verified goal, saved as a task the engine can replay.

A *skill* is an ordinary task (engine.config.tasks.Task) with an ``origin``. When the agent's loop verifies a goal it
hands the episode's calls to :func:`skill_from_calls`, which keeps only what moved the game successfully and
maps it to task steps: a goto replans on replay instead of repeating taps, a run is inlined (so skills never
nest), a raw tap or swipe replays its point. :func:`save_verified_skill` writes it with engine.tasks.skills.SkillStore.
Nothing unverified is saved: deciding that is the loop's job, not this module's.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from engine.config.tasks import GotoStep, SwipeStep, TapStep, Task
from engine.tasks.skills import SkillStore

log = logging.getLogger(__name__)

OBSERVING_TOOLS = frozenset({"adb_health", "adb_screenshot", "alas_state", "alas_tools"})
"""Tools that only look: they change nothing in the game, so a replay has nothing to repeat."""


def skill_from_calls(name: str, description: str, calls: Iterable[Mapping[str, Any]], book: Any, *,
                     start_page: str | None, success: list[dict[str, Any]], origin: str) -> Task:
    """The task that replays the successful calls of an episode.

    Args:
        name: the skill's task name (lower case, as every task name).
        description: what the skill does, for ``alas_tools``.
        calls: ``{"tool", "arguments", "ok", "status"}`` dicts in the order they were made; only ok ones replay.
        book: the engine.config.taskfiles.TaskBook that ``alas_run`` calls ran from (None: there was none).
        start_page: the page the episode started on, if known; it becomes the precondition when the first
            replayed step is a raw tap or swipe (a point only means something on the page it was tapped on).
        success: task conditions (``page``, ``popup``, ``no_popup``) derived from the goal; empty means the page
            of the last goto.
        origin: where the skill came from, e.g. ``learned from goal X, episode Y``.

    Raises:
        ValueError: a run names a task the book lacks, nothing is left to replay, no success criterion can be
            found, or the result is not a valid task (pydantic's ValidationError is a ValueError).
    """
    steps: list[Any] = []
    for call in calls:
        if call.get("ok"):
            steps.extend(_steps_of(call.get("tool", ""), dict(call.get("arguments") or {}), book))
    if not steps:
        raise ValueError("nothing to replay: no successful call moved the game")
    first = steps[0]
    raw = isinstance(first, SwipeStep) or (isinstance(first, TapStep) and first.point is not None)
    preconditions = [start_page] if raw and start_page else []
    if not success:
        last_goto = next((s.page for s in reversed(steps) if isinstance(s, GotoStep)), None)
        if last_goto is None:
            raise ValueError("no success criterion: give `success` or replay at least one goto")
        success = [{"page": last_goto}]
    return Task(name=name, description=description, preconditions=preconditions, steps=steps, success=success,
                origin=origin)


def _steps_of(tool: str, args: dict[str, Any], book: Any) -> list[Any]:
    """The task steps that replay one successful call (none for a call that only looked)."""
    if tool == "alas_goto":
        return [GotoStep(type="goto", page=args["page"])]
    if tool == "alas_run":
        task_name = args["name"]
        if book is None or task_name not in book.names():
            raise ValueError(f"alas_run named task {task_name!r}, which the task book does not have")
        return list(book.get(task_name).steps)
    if tool == "adb_tap":
        return [TapStep(type="tap", point=(int(args["x"]), int(args["y"])))]
    if tool == "adb_swipe":
        extra = {"duration_ms": int(args["duration_ms"])} if args.get("duration_ms") is not None else {}
        return [SwipeStep(type="swipe", start=(int(args["x1"]), int(args["y1"])),
                          end=(int(args["x2"]), int(args["y2"])), **extra)]
    if tool not in OBSERVING_TOOLS:
        log.debug("skill: dropping call of %r, which has no replay", tool)
    return []


def skill_name(goal: Any) -> str:
    """The task name a verified goal's skill is saved under: ``skill.<goal>`` (free text: its first words)."""
    if not goal.free_text or goal.name != "free_text":
        return f"skill.{goal.name}"
    words = re.sub(r"[^a-z0-9]+", "_", goal.description.lower()).strip("_")[:40].strip("_")
    return f"skill.{words or 'free_text'}"


def save_verified_skill(store: SkillStore, tools: Any, goal: Any, state: Any, *, name: str) -> str | None:
    """Save the calls of a verified episode as skill `name` and add it to the running session's book.

    `state` is the episode's engine.agent.checkpoint.EpisodeState (its calls and start page); the skill's success
    conditions are the goal's criteria (the user's) that a task condition can express (page, popup, no_popup).
    Returns the skill's name, or None when the episode was not verified or no call succeeded. Shipped tasks'
    names are never overwritten.
    """
    if not state.verified or not goal.success or not any(c.get("ok") for c in state.calls):
        return None
    success = [c.model_dump(include={"page", "popup", "no_popup"}, exclude_none=True) for c in goal.success]
    book = tools.tasks.book if tools.tasks is not None else None
    task = skill_from_calls(name, f"learned: {goal.description.strip()}"[:200], state.calls, book,
                            start_page=state.start_page, success=[s for s in success if s],
                            origin=f"goal {goal.name}, episode {state.episode}")
    shipped = [t["name"] for t in book.describe() if t.get("kind") != "skill"] if book is not None else []
    store.save(task, tools.graph, reserved=shipped)
    if book is not None:
        book.add(task)
    return task.name


