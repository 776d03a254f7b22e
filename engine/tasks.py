"""Named tasks declared in YAML (pages/<game>/tasks.yaml): their schema and their loader (engine.taskrunner runs them).

A task has preconditions (where it may start), ordered steps, and success criteria checked by observation:

    tasks:
      - name: mail.collect
        description: Collect every mail attachment.
        steps:
          - {type: goto, page: page_mail}
          - {type: tap, button: MAIL_COLLECT_ALL}
          - {type: dismiss_popups}
        success: [{page: page_mail}, {no_popup: true}]

Steps: goto, tap (a named button, or a raw `point: [x, y]`), swipe (`start`, `end`, `duration_ms`), key,
wait_for (a page or popup, bounded), dismiss_popups, read (a page's text field with OCR into the result), repeat
(steps until a condition holds, at most `max` times). Any step may carry `when:` and is skipped unless the
condition holds on the current screen. Everything a task file names is checked against the graph at load time,
with file:line:col, and raw points must lie inside the graph's resolution.

A task with an `origin` is a *skill*: learned by the agent from a verified goal (engine.agent.skills), kept in a
per-game skills file and listed beside the shipped tasks.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import Field, ValidationError, model_validator

from engine.errors import GraphError
from engine.schema import Model, Name, Point
from engine.yamlmessages import problems_from_validation_error
from engine.yamlsrc import Problem, read_yaml


class Condition(Model):
    """Something observable: a page, a popup, or the absence of blocking popups (all given must hold)."""

    page: Name | None = None
    popup: Name | None = None
    no_popup: bool | None = None

    @model_validator(mode="after")
    def _something(self) -> Condition:
        if self.page is None and self.popup is None and self.no_popup is None:
            raise ValueError("a condition needs page, popup or no_popup")
        return self


class _Step(Model):
    when: Condition | None = Field(None, description="Skip the step unless this holds on the current screen.")


class GotoStep(_Step):
    type: Literal["goto"]
    page: Name


class TapStep(_Step):
    """Tap a named button's click area, or a raw point in reference-resolution pixels."""

    type: Literal["tap"]
    button: Name | None = None
    point: Point | None = Field(None, description="[x, y] in reference-resolution pixels, instead of a button.")

    @model_validator(mode="after")
    def _one_target(self) -> TapStep:
        if (self.button is None) == (self.point is None):
            raise ValueError("a tap needs exactly one of `button` or `point`")
        return self


class SwipeStep(_Step):
    """Swipe between two raw points in reference-resolution pixels."""

    type: Literal["swipe"]
    start: Point
    end: Point
    duration_ms: int = Field(300, gt=0, le=10_000)


class KeyStep(_Step):
    type: Literal["key"]
    key: Literal["back", "home", "enter", "menu", "app_switch"]


class WaitForStep(_Step):
    type: Literal["wait_for"]
    until: Condition
    timeout: float = Field(10.0, gt=0, le=60)


class DismissPopupsStep(_Step):
    type: Literal["dismiss_popups"]
    max: int = Field(5, ge=1, le=20)


class ReadStep(_Step):
    type: Literal["read"]
    field: Name = Field(description="A text field of the current page (Page.fields).")
    into: str | None = Field(None, description="Key in the result's values; defaults to the field name.")


class RepeatStep(_Step):
    type: Literal["repeat"]
    until: Condition
    do: list[Step] = Field(min_length=1)
    max: int = Field(10, ge=1, le=100)


Step = Annotated[
    Union[GotoStep, TapStep, SwipeStep, KeyStep, WaitForStep, DismissPopupsStep, ReadStep, RepeatStep],
    Field(discriminator="type"),
]


class Task(Model):
    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_.\-]*$")]
    description: str
    preconditions: list[Name] = Field(
        default_factory=list, description="Pages the task may start from; empty means anywhere."
    )
    steps: list[Step] = Field(min_length=1)
    success: list[Condition] = Field(min_length=1)
    origin: str | None = Field(
        None, description="Where a learned skill came from (\"learned from goal X, episode Y\"); absent for a "
                          "hand-written task. A task with an origin is listed as a skill.")


class TaskFile(Model):
    tasks: list[Task]


RepeatStep.model_rebuild()


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


def tasks_json_schema() -> dict[str, Any]:
    """The JSON Schema of a tasks file (pages/tasks.schema.json), for editors."""
    body = TaskFile.model_json_schema()
    body.pop("title", None)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "Task file (engine.tasks.TaskFile)",
            **body}


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
            for loc, message in _references(task, graph) if graph is not None else ():
                problems.append(locator.problem(("tasks", index, *loc), f"task {task.name}: {message}"))
            here = locator.problem(("tasks", index, "name"), f"task {task.name!r} is declared twice")
            if task.name in first:
                problems.append(replace(here, message=f"{here.message} (first at {first[task.name]}); give each "
                                                      "task its own name"))
                continue
            first[task.name] = f"{here.file}:{here.line}"
            tasks.append(task)
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


def _references(task: Task, graph: Any) -> list[tuple[tuple, str]]:
    """Names a task uses that the graph does not declare, with their locations inside the task."""
    pages, popups = set(graph.page_names), {p.name for p in graph.popups}
    buttons = {b.name for b in graph.buttons}
    fields = {f.name for p in graph.pages for f in p.fields}
    width, height = graph.resolution
    found: list[tuple[tuple, str]] = []

    def point(xy: tuple[int, int], loc: tuple) -> None:
        if not (0 <= xy[0] < width and 0 <= xy[1] < height):
            found.append((loc, f"point {list(xy)} is outside the screen ({width}x{height})"))

    def condition(c: Condition | None, loc: tuple) -> None:
        if c is None:
            return
        if c.page and c.page not in pages:
            found.append(((*loc, "page"), f"unknown page {c.page!r}"))
        if c.popup and c.popup not in popups:
            found.append(((*loc, "popup"), f"unknown popup {c.popup!r}"))

    def steps(items: list, loc: tuple) -> None:
        for i, step in enumerate(items):
            here = (*loc, i)
            condition(step.when, (*here, "when"))
            if isinstance(step, GotoStep) and step.page not in pages:
                found.append(((*here, "page"), f"unknown page {step.page!r}"))
            if isinstance(step, TapStep) and step.button is not None and step.button not in buttons:
                found.append(((*here, "button"), f"unknown button {step.button!r}"))
            if isinstance(step, TapStep) and step.point is not None:
                point(step.point, (*here, "point"))
            if isinstance(step, SwipeStep):
                point(step.start, (*here, "start"))
                point(step.end, (*here, "end"))
            if isinstance(step, ReadStep) and step.field not in fields:
                found.append(((*here, "field"), f"unknown text field {step.field!r}"))
            if isinstance(step, (WaitForStep, RepeatStep)):
                condition(step.until, (*here, "until"))
            if isinstance(step, RepeatStep):
                steps(step.do, (*here, "do"))

    for i, page in enumerate(task.preconditions):
        if page not in pages:
            found.append((("preconditions", i), f"unknown page {page!r}"))
    steps(task.steps, ("steps",))
    for i, c in enumerate(task.success):
        condition(c, ("success", i))
    return found


def task_from_trace(trace: dict[str, Any], name: str, description: str | None = None) -> Task:
    """A task that replays a recorded goto or run (engine.transcript.save_trace), verified the same way.

    Each hop of the trace becomes a goto to the page it verified (so a replay re-plans around whatever the game
    shows, rather than blindly repeating taps), recorded taps and reads are kept, dismissals become
    dismiss_popups, and the last verified page is the success criterion.
    """
    steps: list[dict[str, Any]] = []
    first_source: str | None = None
    last_page: str | None = None
    for entry in trace.get("steps", []):
        kind = entry.get("kind")
        if kind == "action" and entry.get("to"):
            first_source = first_source or entry.get("source")
            last_page = (entry.get("success") or {}).get("page") or entry["to"]
            if not steps or steps[-1] != {"type": "goto", "page": last_page}:
                steps.append({"type": "goto", "page": last_page})
        elif kind == "dismiss" and (not steps or steps[-1]["type"] != "dismiss_popups"):
            steps.append({"type": "dismiss_popups"})
        elif kind == "task_step" and entry.get("button"):
            steps.append({"type": "tap", "button": entry["button"]})
        elif kind == "read" and entry.get("field"):
            steps.append({"type": "read", "field": entry["field"]})
    target = trace.get("target")
    if trace.get("tool") == "goto" and target:
        last_page = target
        if not steps or steps[-1] != {"type": "goto", "page": target}:
            steps.append({"type": "goto", "page": target})
    if not steps or last_page is None:
        raise ValueError("the trace has no verified hop to replay")
    return Task(
        name=name,
        description=description or f"replay of {trace.get('tool', 'a run')} {target or ''}".strip(),
        preconditions=[],
        steps=steps,
        success=[{"page": last_page}, {"no_popup": True}],
    )


def describe_condition(c: Condition) -> str:
    """A condition in words: ``page page_mail and no blocking popup``."""
    parts = []
    if c.page:
        parts.append(f"page {c.page}")
    if c.popup:
        parts.append(f"popup {c.popup}")
    if c.no_popup:
        parts.append("no blocking popup")
    return " and ".join(parts)
