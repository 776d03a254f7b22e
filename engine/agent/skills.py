"""Learned skills: the tool calls that reached a verified goal, saved as a task the engine can replay.

A *skill* is an ordinary task (engine.config.tasks.Task) with an ``origin``. When the agent's loop verifies a goal it
hands the episode's calls to :func:`skill_from_calls`, which keeps only what moved the game successfully and
maps it to task steps: a goto replans on replay instead of repeating taps, a run is inlined (so skills never
nest), a raw tap or swipe replays its point. :class:`SkillStore` keeps the skills of one game in one YAML file
under the agent's home (``$ENGINE_HOME``, else ``~/.local/share/engine``), checked against the graph on every
load and before every write. Nothing unverified is saved: deciding that is the loop's job, not this module's.
"""

from __future__ import annotations

import logging
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from engine.core.errors import GraphError
from engine.config.tasks import GotoStep, SwipeStep, Task, TaskFile, TapStep, read_tasks

log = logging.getLogger(__name__)

HOME_ENV = "ENGINE_HOME"
"""Environment variable naming the agent's home folder (skills and other per-game state live below it)."""
SKILLS_FILE = "skills.yaml"
OBSERVING_TOOLS = frozenset({"adb_health", "adb_screenshot", "alas_state", "alas_tools"})
"""Tools that only look: they change nothing in the game, so a replay has nothing to repeat."""
HEADER = ("# Skills learned by the engine's agent for {game}: each task replays the tool calls of a verified goal.\n"
          "# You may edit, rename or delete them; the file is checked against the graph whenever it is loaded.\n")


def agent_home(env: Mapping[str, str] | None = None) -> Path:
    """The agent's home folder: ``$ENGINE_HOME``, else ``~/.local/share/engine`` (not created here).

    Args:
        env: the environment to read (default: ``os.environ``).
    """
    env = os.environ if env is None else env
    home = env.get(HOME_ENV)
    return Path(home).expanduser() if home else Path.home() / ".local" / "share" / "engine"


def game_slug(game: str) -> str:
    """A filesystem-safe folder name for a game's name (``Tower Defense`` -> ``tower-defense``), never empty or
    hidden."""
    text = unicodedata.normalize("NFKC", game).casefold()
    slug = re.sub(r"[^\w.-]+", "-", text).strip("-.")
    return slug or "game"


def game_dir(home: str | Path, graph: Any) -> Path:
    """The folder of one game's learned state under `home`, named after ``graph.game``."""
    return Path(home) / game_slug(graph.game)


def skills_file(home: str | Path, graph: Any) -> Path:
    """The skills file of `graph`'s game under `home`."""
    return game_dir(home, graph) / SKILLS_FILE


def skill_from_calls(name: str, description: str, calls: Iterable[Mapping[str, Any]], book: Any, *,
                     start_page: str | None, success: list[dict[str, Any]], origin: str) -> Task:
    """The task that replays the successful calls of an episode.

    Args:
        name: the skill's task name (lower case, as every task name).
        description: what the skill does, for ``alas_tools``.
        calls: ``{"tool", "arguments", "ok", "status"}`` dicts in the order they were made; only ok ones replay.
        book: the engine.config.tasks.TaskBook that ``alas_run`` calls ran from (None: there was none).
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


class SkillStore:
    """The skills file of one game: load it checked against a graph, save a skill into it atomically.

    Args:
        path: the YAML file (engine.config.tasks' task file format); it need not exist yet.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def load(self, graph: Any) -> list[Task]:
        """The skills in the file, checked against `graph`; [] when the file does not exist.

        Raises:
            GraphError: every problem in the file, each with file:line:col.
        """
        if not self.path.exists():
            return []
        tasks, problems = read_tasks([self.path], graph)
        if problems:
            raise GraphError(problems, message=f"{len(problems)} problem(s) in the skills file {self.path}")
        return tasks

    def save(self, task: Task, graph: Any, *, reserved: Iterable[str] = ()) -> Path:
        """Write `task` into the file, replacing a skill of the same name or appending; returns the file.

        The new content is checked with engine.config.tasks.read_tasks against `graph` before it replaces the file, and
        the file is replaced atomically (a temporary file and ``os.replace``), so a crash leaves the old file.

        Args:
            task: the skill.
            graph: the graph the skill must fit.
            reserved: names the skill may not take (the shipped tasks' names, which a skill must not shadow).

        Raises:
            ValueError: the skill's name is reserved.
            GraphError: the existing file is broken, or the skill does not fit the graph (file:line:col).
            OSError: the file cannot be written.
        """
        if task.name in set(reserved):
            raise ValueError(f"a skill cannot be named {task.name!r}: a shipped task has that name")
        skills = self.load(graph)
        names = [t.name for t in skills]
        if task.name in names:
            skills[names.index(task.name)] = task
        else:
            skills.append(task)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(render_skills(skills, graph.game), encoding="utf-8")
            _, problems = read_tasks([tmp], graph)
            if problems:
                raise GraphError([replace(p, file=str(self.path)) for p in problems],
                                 message=f"{len(problems)} problem(s) in the skill {task.name!r}")
            os.replace(tmp, self.path)
        finally:
            tmp.unlink(missing_ok=True)
        log.info("saved skill %s to %s", task.name, self.path)
        return self.path


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


def render_skills(skills: list[Task], game: str) -> str:
    """A skills file's text: the header comment, then the tasks as YAML (defaults left out)."""
    data = TaskFile(tasks=skills).model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    data.setdefault("tasks", [])
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=None, width=120)
    return HEADER.format(game=game) + body
