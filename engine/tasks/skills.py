"""The skills file of one game: tasks the agent learned, kept in the task language under the engine's home.

A *skill* is an ordinary task (engine.config.tasks.Task) with an ``origin``. :class:`SkillStore` keeps the skills of
one game in one YAML file (engine.core.paths.skills_file), checked against the graph on every load and before every
write; which episodes become skills is the agent's business (engine.agent.skills).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from engine.config.taskfiles import read_tasks
from engine.config.tasks import Task, TaskFile
from engine.core.errors import GraphError

log = logging.getLogger(__name__)

HEADER = ("# Skills learned by the engine's agent for {game}: each task replays the tool calls of a verified goal.\n"
          "# You may edit, rename or delete them; the file is checked against the graph whenever it is loaded.\n")


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


def render_skills(skills: list[Task], game: str) -> str:
    """A skills file's text: the header comment, then the tasks as YAML (defaults left out)."""
    data = TaskFile(tasks=skills).model_dump(mode="json", exclude_none=True, exclude_defaults=True)
    data.setdefault("tasks", [])
    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=None, width=120)
    return HEADER.format(game=game) + body
