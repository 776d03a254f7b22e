"""Task files: reading tasks*.yaml with file:line:col, checking each task against the graph and the tasks
against each other, and the book of a game's checked tasks (engine.config.tasks is the language itself).

``references`` finds every page, popup, button, text field, point and area a task names that the graph does not
have; ``run_calls`` finds `run` steps that name no task, form a cycle or nest deeper than MAX_RUN_DEPTH. Both
return locations inside the task, which ``read_tasks`` turns into file:line:col.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from engine.config.tasks import (
    MAX_RUN_DEPTH,
    Condition,
    ForEachMatchStep,
    GotoStep,
    MatchCheck,
    ReadStep,
    RepeatStep,
    RunStep,
    ScrollStep,
    SwipeStep,
    TapStep,
    Task,
    TaskFile,
    WaitForStep,
    walk_steps,
)
from engine.config.yamlmessages import problems_from_validation_error
from engine.config.yamlsrc import Problem, read_yaml
from engine.core.errors import GraphError


class TaskBook:
    """The tasks of one game, checked against its graph."""

    def __init__(self, tasks: list[Task]) -> None:
        self._tasks = {t.name: t for t in tasks}

    def names(self) -> list[str]:
        return list(self._tasks)

    def get(self, name: str) -> Task:
        return self._tasks[name]

    def add(self, task: Task) -> None:
        """Add `task`, replacing a task of the same name (a skill saved again after a better episode)."""
        self._tasks[task.name] = task

    def describe(self) -> list[dict[str, str]]:
        return [{"name": t.name, "description": t.description, "kind": "skill" if t.origin else "task"}
                for t in self._tasks.values()]


def task_files(path: str | Path) -> list[Path]:
    """The task files at `path`: the file itself, or a folder's tasks*.yaml in name order."""
    path = Path(path)
    return sorted(path.glob("tasks*.yaml")) if path.is_dir() else [path]


def read_tasks(files: list[Path], graph: Any | None = None) -> tuple[list[Task], list[Problem]]:
    """Every task in `files` and every problem with them (file:line:col); never raises for a bad file.

    With `graph`, every page, popup, button and text field a task names must be in it.
    """
    tasks: list[Task] = []
    problems: list[Problem] = []
    first: dict[str, str] = {}
    where: dict[str, tuple[Any, int]] = {}
    for file in files:
        source = read_yaml(file)
        problems.extend(source.problems)
        if source.problems:
            continue
        locator = source.locator
        try:
            parsed = TaskFile.model_validate(source.data)
        except ValidationError as exc:
            problems.extend(problems_from_validation_error(exc, locator.file, locator, model=TaskFile))
            continue
        for index, task in enumerate(parsed.tasks):
            for loc, message in references(task, graph) if graph is not None else ():
                problems.append(locator.problem(("tasks", index, *loc), f"task {task.name}: {message}"))
            here = locator.problem(("tasks", index, "name"), f"task {task.name!r} is declared twice")
            if task.name in first:
                problems.append(replace(here, message=f"{here.message} (first at {first[task.name]}); give each "
                                                      "task its own name"))
                continue
            first[task.name] = f"{here.file}:{here.line}"
            tasks.append(task)
            where[task.name] = (locator, index)
    for name, loc, message in run_calls(tasks):
        locator, index = where[name]
        problems.append(locator.problem(("tasks", index, *loc), f"task {name}: {message}"))
    return tasks, problems


def load_tasks(path: str | Path, graph: Any | None = None) -> TaskBook:
    """Load and check a tasks.yaml (a folder means its tasks*.yaml files).

    Raises:
        GraphError: listing every problem, each with file:line:col.
    """
    tasks, problems = read_tasks(task_files(path), graph)
    if problems:
        raise GraphError(problems, message=f"{len(problems)} problem(s) in the tasks")
    return TaskBook(tasks)


Found = list[tuple[tuple, str]]


class _References:
    """Names one task uses against one graph; `found` collects (location, message)."""

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self.pages, self.popups = set(graph.page_names), {p.name for p in graph.popups}
        self.buttons = {b.name for b in graph.buttons}
        self.fields = {f.name for p in graph.pages for f in p.fields}
        self.width, self.height = graph.resolution
        self.found: Found = []

    def point(self, xy: tuple[int, int], loc: tuple) -> None:
        if not (0 <= xy[0] < self.width and 0 <= xy[1] < self.height):
            self.found.append((loc, f"point {list(xy)} is outside the screen ({self.width}x{self.height})"))

    def condition(self, c: Condition | None, loc: tuple) -> None:
        if c is None:
            return
        if c.page and c.page not in self.pages:
            self.found.append(((*loc, "page"), f"unknown page {c.page!r}"))
        if c.popup and c.popup not in self.popups:
            self.found.append(((*loc, "popup"), f"unknown popup {c.popup!r}"))
        if c.value is not None:
            for key in ("field", "than"):
                name = getattr(c.value, key)
                if name is not None and name not in self.fields:
                    self.found.append(((*loc, "value", key), f"unknown text field {name!r}"))
        for key in ("shows", "hides"):
            match = getattr(c, key)
            if match is not None:
                self.template(match.button, match.area, (*loc, key))

    def steps(self, items: list, loc: tuple) -> None:
        for i, step in enumerate(items):
            self.step(step, (*loc, i))

    def step(self, step: Any, here: tuple) -> None:
        self.condition(step.when, (*here, "when"))
        if isinstance(step, GotoStep) and step.page not in self.pages:
            self.found.append(((*here, "page"), f"unknown page {step.page!r}"))
        if isinstance(step, TapStep) and step.button is not None and step.button not in self.buttons:
            self.found.append(((*here, "button"), f"unknown button {step.button!r}"))
        if isinstance(step, TapStep) and step.point is not None:
            self.point(step.point, (*here, "point"))
        if isinstance(step, SwipeStep):
            self.point(step.start, (*here, "start"))
            self.point(step.end, (*here, "end"))
        if isinstance(step, ReadStep) and step.field not in self.fields:
            self.found.append(((*here, "field"), f"unknown text field {step.field!r}"))
        if isinstance(step, (WaitForStep, RepeatStep, ScrollStep)):
            self.condition(step.until, (*here, "until"))
        if isinstance(step, (RepeatStep, ForEachMatchStep)):
            self.steps(step.do, (*here, "do"))
        if isinstance(step, ForEachMatchStep):
            self.template(step.button, step.area, here)
            self.condition(step.until, (*here, "until"))
        if isinstance(step, (TapStep, ForEachMatchStep)) and isinstance(step.collects, MatchCheck):
            self.template(step.collects.button, step.collects.area, (*here, "collects"))
        if isinstance(step, ScrollStep):
            self.point(step.swipe.start, (*here, "swipe", "start"))
            self.point(step.swipe.end, (*here, "swipe", "end"))

    def template(self, button: str, area: Any, here: tuple) -> None:
        """A button searched for by its template, inside an area of the screen."""
        if button not in self.buttons:
            self.found.append(((*here, "button"), f"unknown button {button!r}"))
        elif self.graph.button(button).asset is None:
            self.found.append(((*here, "button"), f"button {button!r} has no template (asset) to match"))
        if area is not None:
            x1, y1, x2, y2 = area
            if not (0 <= x1 < x2 <= self.width and 0 <= y1 < y2 <= self.height):
                why = f"area {list(area)} is not inside the screen ({self.width}x{self.height})"
                self.found.append(((*here, "area"), why))


def references(task: Task, graph: Any) -> Found:
    """Names a task uses that the graph does not declare, with their locations inside the task."""
    check = _References(graph)
    for i, page in enumerate(task.preconditions):
        if page not in check.pages:
            check.found.append((("preconditions", i), f"unknown page {page!r}"))
    check.steps(task.steps, ("steps",))
    for i, c in enumerate(task.success):
        check.condition(c, ("success", i))
    return check.found


def run_calls(tasks: list[Task]) -> list[tuple[str, tuple, str]]:
    """`run` steps that name no task, form a cycle or nest deeper than MAX_RUN_DEPTH: (task, location, why)."""
    known = {t.name: t for t in tasks}
    calls = {t.name: [(s.task, loc) for s, loc in walk_steps(t.steps) if isinstance(s, RunStep)] for t in tasks}
    found: list[tuple[str, tuple, str]] = []

    def depth(name: str, path: tuple[str, ...]) -> tuple[int, tuple[str, ...] | None]:
        """How deep `name`'s calls nest, and a cycle through it if there is one."""
        deepest = 0
        for callee, _ in calls.get(name, ()):
            if callee in path:
                return deepest, (*path[path.index(callee):], callee)
            if callee in known:
                d, cycle = depth(callee, (*path, callee))
                if cycle:
                    return d, cycle
                deepest = max(deepest, d + 1)
        return deepest, None

    for task in tasks:
        for callee, loc in calls[task.name]:
            if callee not in known:
                why = f"runs unknown task {callee!r} (tasks: {', '.join(sorted(known))})"
                found.append((task.name, (*loc, "task"), why))
            elif callee == task.name:
                found.append((task.name, (*loc, "task"), "runs itself"))
        d, cycle = depth(task.name, (task.name,))
        if cycle and cycle[0] == task.name:
            loc = next(loc for callee, loc in calls[task.name] if callee == cycle[1])
            if cycle[1] != task.name:
                found.append((task.name, (*loc, "task"), f"run steps form a cycle: {' -> '.join(cycle)}"))
        elif not cycle and d > MAX_RUN_DEPTH:
            loc = calls[task.name][0][1]
            found.append((task.name, (*loc, "task"), f"run steps nest {d} deep; at most {MAX_RUN_DEPTH}"))
    return found
