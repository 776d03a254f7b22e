"""Named tasks declared in YAML (pages/<game>/tasks.yaml): their language (engine.config.taskfiles reads and checks the
files, engine.tasks.runner runs them).

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
(steps until a condition holds, at most `max` times), and for chores:

    - {type: for_each_match, button: NAME, area: [x1, y1, x2, y2], max: 20, do: [steps]}
          tap every match of the button's template inside `area` (default the whole screen), best first, looking
          again after each tap (and its `do` steps) because the list changes; stops when no match is left, after
          `max` taps, or at the run's deadline. The taps count as ``collected``. The button needs a template.
    - {type: scroll, swipe: {start: [x, y], end: [x, y], duration_ms: 300}, until: CONDITION, max: 10}
          swipe until `until` holds or the list stops moving (the frame after a swipe equals the one before), at
          most `max` swipes. When it ends without `until` holding the step is recorded failed; the task goes on
          and its success criteria decide.
    - {type: run, task: NAME, optional: false}
          run another task's steps and check its success; a failure fails this task unless `optional`. Checked
          at load: the task exists, calls form no cycle and nest at most MAX_RUN_DEPTH (3) deep.

Conditions (`when`, `until`, `success`) hold when all they give holds: `page`, `popup`, `no_popup`, and

    value: {field: NAME, op: eq|ne|lt|le|gt|ge|matches, value: CONST | than: OTHER_FIELD, part: current|total}

a page's OCR text field (Page.fields, its pattern's value as the read step extracts it) compared with a constant
or with another field read on the same frame (engine.config.taskvalues): numbers, ``N/M`` counters (``part`` picks N or
M; default N) and durations ``HH:MM:SS`` or ``MM:SS`` (in seconds, so ``value: "00:30:00"`` or ``value: 1800``).
`matches` searches a regular expression; eq/ne with a text that holds no number compare stripped text.

Any step may carry `when:` and is skipped unless the condition holds on the current screen. Everything a task
file names is checked against the graph at load time, with file:line:col, and raw points and areas must lie
inside the graph's resolution.

The result of a run (Outcome.extra) holds ``values`` (what read steps read), ``steps`` (one entry per step run:
``{step: "2/do/0", type, outcome: done|skipped|failed, why, collected}``) and ``collected`` (taps made by
for_each_match). A task with for_each_match steps that found nothing to tap and whose success holds is ``ok``,
status verified, with the text "nothing to collect".

A task with an `origin` is a *skill*: learned by the agent from a verified goal (engine.agent.skills), kept in a
per-game skills file and listed beside the shipped tasks.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, Union

from pydantic import (
    Field,
    StrictFloat,
    StrictInt,
    StrictStr,
    model_validator,
)

from engine.config.schema import Area, KeyAction, Model, Name, Point, SwipeAction, TapAction
from engine.config.taskvalues import number_of

MAX_RUN_DEPTH = 3
"""How deep `run` steps may nest (a task that runs a task that runs a task)."""


class ValueCheck(Model):
    """An OCR text field compared with a constant or with another field read on the same frame."""

    field: Name = Field(description="A text field of a page (Page.fields).")
    op: Literal["eq", "ne", "lt", "le", "gt", "ge", "matches"] = Field(
        description="eq, ne, lt, le, gt, ge (numbers, counters, durations) or matches (a regular expression).")
    value: StrictInt | StrictFloat | StrictStr | None = Field(
        None, description="A number, a duration such as \"01:30:00\", a text, or a pattern for matches.")
    than: Name | None = Field(None, description="Another text field, read on the same frame, instead of value.")
    read: Name | None = Field(None, description="A value an earlier read step stored (`into`), instead of value: "
                              "did the counter move?")
    part: Literal["current", "total"] | None = Field(
        None, description="For N/M counters: compare N (current, the default) or M (total).")

    @model_validator(mode="after")
    def _consistent(self) -> ValueCheck:
        if sum(x is not None for x in (self.value, self.than, self.read)) != 1:
            raise ValueError("a value check needs exactly one of `value`, `than` or `read`")
        if self.op == "matches":
            if not isinstance(self.value, str) or self.part is not None:
                raise ValueError("op matches needs a regular expression as value (not than) and no part")
            try:
                re.compile(self.value)
            except re.error as exc:
                raise ValueError(f"bad regular expression {self.value!r}: {exc}") from None
        elif self.op in ("lt", "le", "gt", "ge") and isinstance(self.value, str) and number_of(self.value) is None:
            raise ValueError(f"op {self.op} needs a number or a duration as value, got {self.value!r}")
        return self


class MatchCheck(Model):
    """A button's template searched inside an area (every red dot, every COLLECT button of a list)."""

    button: Name = Field(description="A button with a template (`asset`).")
    area: Area | None = Field(None, description="[x1, y1, x2, y2] searched; default the whole screen.")


class Condition(Model):
    """Something observable: a page, a popup, the absence of blocking popups, a value read with OCR, a template
    that shows or does not show (all given must hold)."""

    page: Name | None = Field(None, description="The current screen is this page.")
    popup: Name | None = Field(None, description="This popup shows.")
    no_popup: bool | None = Field(None, description="true: no blocking popup shows.")
    value: ValueCheck | None = Field(None, description="An OCR text field compared with a constant or a field.")
    shows: MatchCheck | None = Field(None, description="Holds while the button's template matches in the area.")
    hides: MatchCheck | None = Field(None, description="Holds while it does not: the red dot is gone, the list "
                                     "has no COLLECT left.")

    @model_validator(mode="after")
    def _something(self) -> Condition:
        if all(getattr(self, k) is None for k in ("page", "popup", "no_popup", "value", "shows", "hides")):
            raise ValueError("a condition needs page, popup, no_popup, value, shows or hides")
        return self


class _Step(Model):
    when: Condition | None = Field(None, description="Skip the step unless this holds on the current screen.")


class GotoStep(_Step):
    type: Literal["goto"]
    page: Name = Field(description="Navigate to this page and verify arrival.")


class TapStep(_Step, TapAction):
    """Tap a named button's click area, or a raw point in reference-resolution pixels."""

    point: Point | None = Field(None, description="[x, y] in reference-resolution pixels, instead of a button.")
    collects: bool | MatchCheck = Field(False, description="This tap collects: it counts in the result's "
                                        "`collected` (once; or, given {button, area}, a COLLECT ALL counting every "
                                        "match of that template in the area just before the tap, each mail with "
                                        "an attachment), and a task whose collecting steps all skip did nothing "
                                        "to collect.")


class SwipeStep(_Step, SwipeAction):
    """Swipe between two raw points in reference-resolution pixels."""


class KeyStep(_Step, KeyAction):
    """Press a key (engine.config.schema.KeyAction)."""


class WaitForStep(_Step):
    type: Literal["wait_for"]
    until: Condition = Field(description="What must become true.")
    timeout: float = Field(10.0, gt=0, le=60, description="Seconds to wait at most.")


class DismissPopupsStep(_Step):
    type: Literal["dismiss_popups"]
    max: int = Field(5, ge=1, le=20, description="At most this many dismissals.")


class ReadStep(_Step):
    type: Literal["read"]
    field: Name = Field(description="A text field of the current page (Page.fields).")
    into: str | None = Field(None, description="Key in the result's values; defaults to the field name.")


class RepeatStep(_Step):
    type: Literal["repeat"]
    until: Condition = Field(description="Checked before each round: once it holds, stop.")
    do: list[Step] = Field(min_length=1, description="The steps of one round.")
    max: int = Field(10, ge=1, le=100, description="At most this many rounds.")


class ForEachMatchStep(_Step):
    """Tap every match of a button's template inside an area, looking again after each tap."""

    type: Literal["for_each_match"]
    button: Name = Field(description="A button with a template (`asset`); its matches are tapped.")
    area: Area | None = Field(None, description="[x1, y1, x2, y2] searched; default the whole screen.")
    max: int = Field(20, ge=1, le=100, description="At most this many taps.")
    until: Condition | None = Field(None, description="Checked before each tap: once it holds, stop (the slots "
                                    "are full).")
    do: list[Step] = Field(default_factory=list, description="Steps run after each tap (dismiss the reward...).")
    collects: MatchCheck | None = Field(None, description="What one tap collects, when it is more than one thing "
                                        "(a COLLECT ALL): the matches of this template in the area just before "
                                        "the tap. Default: each tap that took effect counts once.")


class SwipeSpec(Model):
    start: Point = Field(description="[x, y] where each swipe starts.")
    end: Point = Field(description="[x, y] where each swipe ends.")
    duration_ms: int = Field(300, gt=0, le=10_000, description="Length of each swipe in milliseconds.")


class ScrollStep(_Step):
    """Swipe until a condition holds or the list stops moving (an unchanged frame)."""

    type: Literal["scroll"]
    swipe: SwipeSpec = Field(description="The swipe repeated.")
    until: Condition = Field(description="Stop once this holds.")
    max: int = Field(10, ge=1, le=100, description="At most this many swipes.")


class RunStep(_Step):
    """Run another task (its steps, then its success criteria)."""

    type: Literal["run"]
    task: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_.\-]*$", description="The task to run, by name.")]
    optional: bool = Field(False, description="A failure of the called task is recorded and this task goes on.")


Step = Annotated[
    Union[GotoStep, TapStep, SwipeStep, KeyStep, WaitForStep, DismissPopupsStep, ReadStep, RepeatStep,  # noqa: UP007
          ForEachMatchStep, ScrollStep, RunStep],  # typing.Union: engine.config.yamlmessages finds field hints in it
    Field(discriminator="type"),
]


class Task(Model):
    name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9_.\-]*$",
                               description="Unique task name, lower case with dots (commission.collect).")]
    description: str = Field(description="One sentence for people, `alas_tools` and the agent.")
    preconditions: list[Name] = Field(
        default_factory=list, description="Pages the task may start from; empty means anywhere."
    )
    steps: list[Step] = Field(min_length=1, description="What the task does, in order.")
    success: list[Condition] = Field(
        min_length=1, description="Checked by observation after the steps; all must hold for the task to be verified."
    )
    policy: Name | None = Field(
        None, description="The policy (policies/) whose timeout bounds a run of this task; default the `run` "
                          "policy. A long routine such as a daily names its own.")
    origin: str | None = Field(
        None, description="Where a learned skill came from (\"learned from goal X, episode Y\"); absent for a "
                          "hand-written task. A task with an origin is listed as a skill.")


class TaskFile(Model):
    tasks: list[Task] = Field(description="The tasks of this file.")


RepeatStep.model_rebuild()
ForEachMatchStep.model_rebuild()


def tasks_json_schema() -> dict[str, Any]:
    """The JSON Schema of a tasks file (pages/tasks.schema.json), for editors."""
    body = TaskFile.model_json_schema()
    body.pop("title", None)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Task file (engine.config.tasks.TaskFile)", **body}


def walk_steps(items: list, loc: tuple = ("steps",)):
    """Every step in `items` and inside their `do` lists, with its location, parents first."""
    for i, step in enumerate(items):
        yield step, (*loc, i)
        yield from walk_steps(getattr(step, "do", None) or [], (*loc, i, "do"))


def task_from_trace(trace: dict[str, Any], name: str, description: str | None = None) -> Task:
    """A task that replays a recorded goto or run (engine.runtime.transcript.save_trace), verified the same way.

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
    if c.value is not None:
        v = c.value
        part = f" {v.part}" if v.part else ""
        right = v.than if v.than is not None else f"the {v.read} read before" if v.read is not None else repr(v.value)
        parts.append(f"{v.field}{part} {v.op} {right}")
    for key in ("shows", "hides"):
        m = getattr(c, key)
        if m is not None:
            parts.append(f"{m.button} {'shows' if key == 'shows' else 'does not show'}"
                         + (f" in {list(m.area)}" if m.area else ""))
    return " and ".join(parts)
