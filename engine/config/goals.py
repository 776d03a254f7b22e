"""Goals declared in YAML (pages/<game>/goals.yaml): their schema, their loader, and the pure check of their criteria.

A goal says what must become observably true, not how to get there (the agent loop plans that, deterministically
through goto/run where it can, with a model where it cannot):

    goals:
      - name: collect_mail
        description: Collect every mail attachment.
        success:
          - {page: page_mail}
          - {task: mail.collect}
          - {no_popup: true}
        blockers:
          - {popup: MAINTENANCE_ANNOUNCE, reason: the server is under maintenance}
        budget: {turns: 10, tool_calls: 20, seconds: 300, tokens: 100000}
        subgoals:
          - {name: collect_mail.open, description: Open the mailbox., success: [{page: page_mail}]}

Criterion (exactly one key per criterion):

    page: NAME           the current screen is that page
    popup: NAME          that popup shows (meant for blockers)
    popup_absent: NAME   that popup does not show
    no_popup: true       no popup shows at all (every detected popup counts as blocking)
    field: {name, op, value, part}
                         a page's OCR text field (Page.fields; the value its pattern extracts, as
                         engine.tasks.runner's read step does) compared with `value` by the task language's rules
                         (engine.config.taskvalues). op is eq, ne, lt, le, gt, ge or matches. lt/le/gt/ge need a
                         number; matches needs a regular expression (searched in the text); eq/ne compare numbers
                         with a number and the stripped text with a text. Counters written ``N/M`` compare by N
                         (``part: current``, the default) or by M (``part: total``).
    task: NAME           that task (tasks*.yaml beside the graph) ran and was verified in this episode

Blockers are criteria with a `reason`: when one holds the goal cannot be met, and the loop stops and says why.
Budget: model turns, tool calls, wall seconds and tokens (defaults in ``Budget``); a subgoal's spending counts
against its parent's budget too. Subgoals nest at most two levels below a top goal (``MAX_SUBGOAL_DEPTH``).

Success criteria come from the user only: this file, or the command line (``python -m engine agent PAGE``,
``TASK``, or free text with ``--until``). The model never writes them: its ``final`` is a claim that the harness
checks against these criteria by looking at the screen. Free-text goals (``free_text: true``: only a model can plan
them) are the only goals whose `success` may be empty; such a goal has nothing the engine can check, so its
episode ends ``unverified`` (never ok, no skill saved) whatever the model says. Everything a goal file names is
checked against the graph at load time, with file:line:col.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

from engine.config.schema import Model, Name
from engine.config.taskvalues import compare, number_of
from engine.config.yamlmessages import problems_from_validation_error
from engine.config.yamlsrc import Locator, Problem, read_yaml
from engine.core.errors import GraphError
from engine.core.results import Observation

logger = logging.getLogger(__name__)

MAX_SUBGOAL_DEPTH = 2
"""Subgoals of subgoals are allowed; one level more is a load error."""

GOAL_NAME = r"^[a-z][a-z0-9_.\-]*$"
"""What a goal's name looks like (a free-text goal is anything else: it has spaces)."""
GoalName = Annotated[str, Field(pattern=GOAL_NAME)]
Op = Literal["eq", "ne", "lt", "le", "gt", "ge", "matches"]
_KINDS = ("page", "popup", "popup_absent", "no_popup", "field", "task")


class FieldCheck(Model):
    """An OCR text field compared with a value."""

    name: Name = Field(description="A text field of a page (Page.fields).")
    op: Op = Field(description="eq, ne, lt, le, gt, ge (numbers), or matches (a regular expression).")
    value: StrictInt | StrictFloat | StrictStr = Field(description="A number, a text, or a pattern.")
    part: Literal["current", "total"] | None = Field(
        None, description="For N/M counters: compare N (current, the default) or M (total). Numbers only."
    )

    @model_validator(mode="after")
    def _consistent(self) -> FieldCheck:
        numeric = not isinstance(self.value, str)
        if self.op == "matches":
            if numeric or self.part is not None:
                raise ValueError("op matches needs a regular expression as value and no part")
            try:
                re.compile(self.value)
            except re.error as exc:
                raise ValueError(f"bad regular expression {self.value!r}: {exc}") from None
        elif self.op in ("lt", "le", "gt", "ge") and not numeric:
            raise ValueError(f"op {self.op} needs a number as value, got {self.value!r}")
        elif self.part is not None and not numeric:
            raise ValueError("part compares numbers: give a number as value")
        return self


class Criterion(Model):
    """Something the harness can observe; exactly one key is set."""

    page: Name | None = Field(None, description="The current screen is this page.")
    popup: Name | None = Field(None, description="This popup shows (for blockers).")
    popup_absent: Name | None = Field(None, description="This popup does not show.")
    no_popup: Literal[True] | None = Field(None, description="No popup shows at all.")
    field: FieldCheck | None = Field(None, description="An OCR text field compared with a value.")
    task: Name | None = Field(None, description="This task ran and was verified in this episode.")

    @model_validator(mode="after")
    def _exactly_one(self) -> Criterion:
        given = [k for k in _KINDS if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"a criterion needs exactly one of {', '.join(_KINDS)}; got "
                             f"{', '.join(given) or 'none'}")
        return self


class Blocker(Criterion):
    """A criterion under which the goal cannot be met: the loop stops and reports `reason`."""

    reason: str = Field(min_length=1, description="Why the goal cannot be met when this holds.")


class Budget(Model):
    """What one attempt at a goal may spend; the loop stops with budget_* when any runs out."""

    turns: int = Field(20, ge=1, le=500, description="Model turns.")
    tool_calls: int = Field(40, ge=1, le=2000, description="Tool calls, deterministic ones included.")
    seconds: float = Field(600.0, gt=0, le=86400, description="Wall-clock seconds.")
    tokens: int = Field(200_000, ge=1, le=10_000_000, description="Model tokens, prompt and response.")


class Goal(Model):
    name: GoalName = Field(description="Unique goal name, as `python -m engine agent NAME` takes it.")
    description: str = Field(min_length=1, description="What the goal is, in a sentence (the model reads it).")
    free_text: bool = Field(False, description="Only a model can plan it; success may then be empty.")
    success: list[Criterion] = Field(default_factory=list, description="All must hold, checked by observation.")
    blockers: list[Blocker] = Field(default_factory=list, description="Conditions under which the goal cannot be met.")
    budget: Budget = Field(default_factory=Budget, description="Bounds on model turns, tool calls, seconds and tokens.")
    subgoals: list[Goal] = Field(default_factory=list, description="At most two levels deep.")


class GoalFile(Model):
    goals: list[Goal] = Field(description="The goals of this file.")


Goal.model_rebuild()


@dataclass(frozen=True)
class CriterionResult:
    """One criterion checked against one observation: whether it held and what was seen."""

    criterion: Criterion
    held: bool
    detail: str


class GoalBook:
    """The goals of one game, checked against its graph; subgoals are addressable by name too."""

    def __init__(self, goals: list[Goal]) -> None:
        self.goals: tuple[Goal, ...] = tuple(goals)
        self._all = {goal.name: goal for goal, _, _ in _walk(goals, (), 0)}

    def names(self) -> list[str]:
        """Every goal name, subgoals included, in file order."""
        return list(self._all)

    def get(self, name: str) -> Goal:
        """The goal called `name` (KeyError when there is none)."""
        return self._all[name]

    def __contains__(self, name: object) -> bool:
        return name in self._all

    def describe(self) -> list[dict[str, Any]]:
        return [{"name": g.name, "description": g.description, "free_text": g.free_text} for g in self.goals]


def goals_json_schema() -> dict[str, Any]:
    """The JSON Schema of a goals file (pages/goals.schema.json), for editors."""
    body = GoalFile.model_json_schema()
    body.pop("title", None)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Goal file (engine.config.goals.GoalFile)", **body}


def free_text_goal(text: str, budget: Budget | None = None, success: list[Criterion] | None = None) -> Goal:
    """A goal typed on the command line: free text, judged by the `success` criteria the user gave (none: the
    episode can only end unverified)."""
    return Goal(name="free_text", description=text, free_text=True, budget=budget or Budget(),
                success=list(success or []))


def check_criteria(criteria: list[Criterion], graph: Any, task_names: set[str]) -> list[str]:
    """What is wrong with criteria the user typed (names the graph or the task book lacks), one message each."""
    return [message for _, message in _check_names(criteria, (), graph, task_names)]


def goal_files(path: str | Path) -> list[Path]:
    """The goal files at `path`: the file itself, or a folder's goals*.yaml in name order."""
    path = Path(path)
    return sorted(path.glob("goals*.yaml")) if path.is_dir() else [path]


def read_goals(
    files: list[Path], graph: Any | None = None, *, task_names: set[str] | None = None
) -> tuple[list[Goal], list[Problem]]:
    """Every goal in `files` and every problem with them (file:line:col); never raises for a bad file.

    With `graph`, every page, popup and text field a goal names must be in it, and every task must be in
    `task_names` (default: the tasks*.yaml beside the first file).
    """
    if graph is not None and task_names is None and files:
        task_names = task_names_beside(files[0].parent, graph)
    goals: list[Goal] = []
    problems: list[Problem] = []
    first: dict[str, str] = {}
    for file in files:
        parsed, locator, found = _parse(file)
        problems.extend(found)
        for goal, loc, depth in _walk(parsed.goals if parsed else [], ("goals",), 0):
            where = [*_shape(goal, depth), *(_references(goal, graph, task_names or set()) if graph else ())]
            problems.extend(locator.problem((*loc, *w), f"goal {goal.name}: {m}") for w, m in where)
            here = locator.problem((*loc, "name"), f"goal {goal.name!r} is declared twice")
            if goal.name in first:
                problems.append(replace(here, message=f"{here.message} (first at {first[goal.name]}); give each "
                                                      "goal its own name"))
            first.setdefault(goal.name, f"{here.file}:{here.line}")
        goals.extend(parsed.goals if parsed else [])
    return goals, problems


def load_goals(path: str | Path, graph: Any, *, task_names: set[str] | None = None) -> GoalBook:
    """Load and check a goals.yaml (a folder means its goals*.yaml files) against `graph`.

    Args:
        path: a goals file or a graph folder.
        graph: the loaded graph (engine.config.loader.load_graph) every name is checked against.
        task_names: the tasks a `task:` criterion may name; default: the tasks*.yaml beside the goal files.

    Raises:
        GraphError: listing every problem, each with file:line:col.
    """
    goals, problems = read_goals(goal_files(path), graph, task_names=task_names)
    if problems:
        raise GraphError(problems, message=f"{len(problems)} problem(s) in the goals")
    book = GoalBook(goals)
    logger.debug("loaded %d goal(s) from %s", len(book.names()), path)
    return book


def evaluate(
    criteria: list[Criterion] | tuple[Criterion, ...],
    observation: Observation | None,
    *,
    read_field: Callable[[str], str | None],
    task_outcome: Callable[[str], bool | None],
) -> list[CriterionResult]:
    """Check each criterion against `observation`; pure apart from the two injected callables.

    Args:
        criteria: what to check (a goal's success or blockers).
        observation: the current screen; None (no frame) fails every page and popup criterion.
        read_field: the value of an OCR text field on the current screen, or None when it cannot be read.
        task_outcome: True when the task ran and was verified in this episode, False when it failed, None when
            it has not run.
    """
    return [_check(c, observation, read_field, task_outcome) for c in criteria]


def all_held(results: list[CriterionResult]) -> bool:
    """True when there is at least one result and every one held (nothing observed is never success)."""
    return bool(results) and all(r.held for r in results)


def describe_criterion(c: Criterion) -> str:
    """A criterion in words: ``page page_mail``, ``field commission_running current ge 1``."""
    if c.field is not None:
        part = f" {c.field.part}" if c.field.part else ""
        return f"field {c.field.name}{part} {c.field.op} {c.field.value!r}"
    if c.no_popup:
        return "no popup"
    kind = next(k for k in _KINDS if getattr(c, k) is not None)
    return f"{kind.replace('_', ' ')} {getattr(c, kind)}"


# --------------------------------------------------------------------------------------------------- internals


def _parse(file: Path) -> tuple[GoalFile | None, Locator, list[Problem]]:
    """One goal file checked against the schema (None when it has problems), its Locator, and its problems."""
    source = read_yaml(file)
    if source.problems:
        return None, source.locator, source.problems
    try:
        return GoalFile.model_validate(source.data), source.locator, []
    except ValidationError as exc:
        locator = source.locator
        return None, locator, problems_from_validation_error(exc, locator.file, locator, model=GoalFile)


def _walk(goals: list[Goal], loc: tuple, depth: int) -> Iterator[tuple[Goal, tuple, int]]:
    """Every goal with its location and depth (0 for a top goal), parents before their subgoals."""
    for i, goal in enumerate(goals):
        here = (*loc, i)
        yield goal, here, depth
        if depth < MAX_SUBGOAL_DEPTH:
            yield from _walk(goal.subgoals, (*here, "subgoals"), depth + 1)


def _shape(goal: Goal, depth: int) -> list[tuple[tuple, str]]:
    """Rules a single goal breaks that its schema cannot say: nesting depth and empty success."""
    found: list[tuple[tuple, str]] = []
    if depth >= MAX_SUBGOAL_DEPTH and goal.subgoals:
        found.append((("subgoals",), (f"subgoals nest at most {MAX_SUBGOAL_DEPTH} levels deep; this would be "
                                      f"level {depth + 1}: move {goal.subgoals[0].name!r} up a level")))
    if not goal.success and not goal.free_text:
        found.append((("success",), ("success is empty: name at least one observable criterion, or mark the "
                                     "goal free_text: true (it can then only end unverified)")))
    return found


def task_names_beside(folder: Path, graph: Any) -> set[str]:
    """The names of the tasks in `folder`'s tasks*.yaml (what a ``task:`` criterion may name)."""
    from engine.config.taskfiles import read_tasks, task_files

    # The tasks' own problems are reported by their loader; here only their names matter.
    return {t.name for t in read_tasks(task_files(folder), graph)[0]}


def _references(goal: Goal, graph: Any, task_names: set[str]) -> list[tuple[tuple, str]]:
    return [*_check_names(goal.success, ("success",), graph, task_names),
            *_check_names(goal.blockers, ("blockers",), graph, task_names)]


def _check_names(criteria: list, loc: tuple, graph: Any, task_names: set[str]) -> list[tuple[tuple, str]]:
    """Names the criteria use that the graph (or the task book) does not declare, with their locations."""
    pages, popups = set(graph.page_names), {p.name for p in graph.popups}
    fields = {f.name for p in graph.pages for f in p.fields}
    found: list[tuple[tuple, str]] = []
    for i, c in enumerate(criteria):
        if c.page is not None and c.page not in pages:
            found.append(((*loc, i, "page"), f"unknown page {c.page!r}"))
        for key in ("popup", "popup_absent"):
            if getattr(c, key) is not None and getattr(c, key) not in popups:
                found.append(((*loc, i, key), f"unknown popup {getattr(c, key)!r}"))
        if c.field is not None and c.field.name not in fields:
            found.append(((*loc, i, "field", "name"), f"unknown text field {c.field.name!r}"))
        if c.task is not None and c.task not in task_names:
            known = ", ".join(sorted(task_names)) or "none"
            found.append(((*loc, i, "task"), f"unknown task {c.task!r} (tasks: {known})"))
    return found


def _check(
    c: Criterion,
    obs: Observation | None,
    read_field: Callable[[str], str | None],
    task_outcome: Callable[[str], bool | None],
) -> CriterionResult:
    if c.field is not None:
        held, detail = _compare(c.field, read_field(c.field.name))
        return CriterionResult(c, held, detail)
    if c.task is not None:
        outcome = task_outcome(c.task)
        word = {True: "ran and was verified", False: "failed", None: "has not run"}[outcome]
        return CriterionResult(c, outcome is True, f"task {c.task} {word}")
    if obs is None:
        return CriterionResult(c, False, f"{describe_criterion(c)}: no observation")
    showing = obs.page or "an unknown screen"
    if c.page is not None:
        held = obs.page == c.page and not obs.covered
        return CriterionResult(c, held, f"page {c.page} shows" if held else f"{c.page} shows under a dialog no popup "
                               "names" if obs.covered and obs.page == c.page else f"expected {c.page}, {showing} shows")
    popups = ", ".join(obs.popups) or "none"
    if c.popup is not None:
        return CriterionResult(c, c.popup in obs.popups, f"popup {c.popup} wanted; popups: {popups}")
    if c.popup_absent is not None:
        return CriterionResult(c, c.popup_absent not in obs.popups, f"popup {c.popup_absent} unwanted; popups: {popups}")
    if obs.covered:
        return CriterionResult(c, False, f"no popup wanted; a dialog no popup names covers {obs.page}")
    return CriterionResult(c, not obs.popups, f"no popup wanted; popups: {popups}")


def _compare(check: FieldCheck, text: str | None) -> tuple[bool, str]:
    """Compare one field's read text with the check, by the task language's rules (engine.config.taskvalues: numbers
    and N/M counters; a goal's field names no duration, so a number is never read as one)."""
    if text is None:
        return False, f"field {check.name} could not be read"
    part = None if isinstance(check.value, str) else (check.part or "current")
    if part is not None and number_of(text, part) is None:
        return False, f"field {check.name} read {text!r}: no {part} number in it"
    held, _ = compare(check.op, text, check.value, part)
    return held, f"field {check.name} read {text!r}: {'' if held else 'not '}{check.op} {check.value!r}"