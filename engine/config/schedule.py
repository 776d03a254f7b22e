"""When tasks are due: schedule.yaml beside a graph (its schema and loader; engine/schedule/ runs it).

    resets:                        # each server's daily reset, in the server's own time zone
      global: {at: "00:00", zone: "UTC-07:00"}
      eu: {at: "04:00", zone: Europe/Berlin}       # an IANA zone follows daylight saving time
    start_task: login              # run after the game is restarted (optional)
    retry: {backoff_s: 60, max_backoff_s: 900, restart_after: 2, give_up_after: 4, put_off_s: 1800}
    tasks:
      - {task: crops.harvest, priority: 1, due: {reported: ready_in, every: 3600}}   # the task reads ready_in
      - {task: quests.claim, priority: 5, due: {every: 7200}}
      - {task: gift.daily, priority: 9, due: {reset: true}}
      - {task: shop.refresh, due: {reset: ["00:00", "12:00"]}}

A task is due again after a run:
    reset: true | [HH:MM, ...]   at the server's next daily reset (or the next of these server times)
    every: SECONDS               that long after the run
    reported: VALUE              at the time the run itself reported: the value the task read into VALUE (seconds,
                                 or durations such as 3:42:10 read by OCR, the soonest); a run that read none falls back to
                                 `every`, else to the next reset
Several rules: the earliest wins. A task never run is due at once. Lower `priority` runs first (ties: the order of
this file). Failures follow `retry` (engine.schedule.rules): backoff doubling from backoff_s up to max_backoff_s;
after restart_after failures in a row the game is restarted; after give_up_after the task is put off by put_off_s
with the reason recorded, and tried again then (never disabled for good).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import timedelta, timezone, tzinfo
from pathlib import Path
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import AfterValidator, Field, ValidationError, field_validator, model_validator

from engine.config.schema import Model, Name
from engine.config.yamlmessages import problems_from_validation_error
from engine.config.yamlsrc import Problem, read_yaml
from engine.core.errors import GraphError

SCHEDULE_FILE = "schedule.yaml"
CLOCK = r"^([01]\d|2[0-3]):[0-5]\d$"
_OFFSET = re.compile(r"^UTC([+-])(\d{2}):(\d{2})$")
TaskName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_.\-]*$")]


def parse_zone(text: str) -> tzinfo:
    """``UTC+08:00`` (a fixed offset, as ALAS keeps its servers) or an IANA name such as ``Europe/Berlin``.

    Raises:
        ValueError: neither.
    """
    match = _OFFSET.match(text)
    if match:
        sign, hours, minutes = match.groups()
        delta = timedelta(hours=int(hours), minutes=int(minutes))
        if delta > timedelta(hours=14):
            raise ValueError(f"offset {text} is beyond UTC+-14:00")
        return timezone(delta if sign == "+" else -delta, text)
    try:
        return ZoneInfo(text)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {text!r}: write UTC+HH:MM or an IANA name such as Europe/Berlin") \
            from None


def _clock(value: str) -> str:
    if not isinstance(value, str) or not re.match(CLOCK, value):
        raise ValueError(f"{value!r} is not a time of day: write HH:MM, 00:00 to 23:59")
    return value


ClockTime = Annotated[str, AfterValidator(_clock)]


class Reset(Model):
    at: ClockTime = Field("00:00", description="The reset's time of day on the server, HH:MM.")
    zone: str = Field(description="UTC+HH:MM or an IANA time zone name.")

    @field_validator("zone")
    @classmethod
    def _zone(cls, value: str) -> str:
        parse_zone(value)
        return value


class Due(Model):
    reset: bool | list[ClockTime] | None = Field(
        None, description="true: the server's daily reset; a list: these server times of day.")
    every: float | None = Field(None, gt=0, le=7 * 86400, description="Seconds after a run.")
    reported: Name | None = Field(
        None, description="The value a run reads (seconds or H:MM:SS) that says when the task is due again.")

    @model_validator(mode="after")
    def _some_rule(self) -> Due:
        if not self.reset and self.every is None and self.reported is None:
            raise ValueError("due needs reset, every or reported")
        return self


class Retry(Model):
    backoff_s: float = Field(
        60, gt=0, le=86400, description="Seconds before the first retry of a failed run; doubles with each failure."
    )
    max_backoff_s: float = Field(900, gt=0, le=86400, description="The longest wait between retries.")
    restart_after: int = Field(2, ge=1, le=100, description="Failures in a row after which the game restarts.")
    give_up_after: int = Field(4, ge=1, le=100, description="Failures in a row after which the task is put off.")
    put_off_s: float = Field(
        1800, gt=0, le=7 * 86400, description="Seconds a task is put off after `give_up_after` failures."
    )


class Entry(Model):
    task: TaskName = Field(description="The task to run (a task of the graph, or alas:<Task>).")
    priority: int = Field(5, ge=0, le=1000, description="Lower runs first among due tasks.")
    due: Due = Field(description="When the task is due: the daily reset, an interval, or a time the run reported.")
    retry: Retry | None = Field(None, description="This task's own retry rules (default: the file's).")


class ScheduleFile(Model):
    resets: dict[Name, Reset] = Field(
        default_factory=dict, description="Each server's daily reset: its time of day and zone."
    )
    start_task: TaskName | None = Field(None, description="The task run after a game restart (login).")
    retry: Retry = Field(Retry(), description="Retry rules for every task that has none of its own.")
    tasks: list[Entry] = Field(default_factory=list, description="The scheduled tasks.")


@dataclass(frozen=True)
class Schedule:
    """A checked schedule for one server of a graph: the entries in order, the reset, the rules."""

    entries: tuple[Entry, ...]
    reset_times: tuple[str, ...]
    zone: tzinfo
    retry: Retry
    start_task: str | None
    file: str | None = None

    def entry(self, task: str) -> Entry:
        for entry in self.entries:
            if entry.task == task:
                return entry
        raise KeyError(task)

    def names(self) -> list[str]:
        return [e.task for e in self.entries]

    def rules_of(self, task: str) -> Retry:
        return self.entry(task).retry or self.retry

    def order(self, task: str) -> tuple[int, int]:
        """Sort key among due tasks: priority, then the file's order."""
        names = self.names()
        return self.entry(task).priority, names.index(task)


def schedule_json_schema() -> dict[str, Any]:
    """The JSON Schema of a schedule file (pages/schedule.schema.json), for editors."""
    body = ScheduleFile.model_json_schema()
    body.pop("title", None)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Schedule file (engine.config.schedule.ScheduleFile)", **body}


def schedule_file(graph_dir: str | Path | None) -> Path:
    from engine.core.paths import builtin_graph_dir

    folder = Path(graph_dir) if graph_dir is not None else builtin_graph_dir()
    return (folder.parent if folder.is_file() else folder) / SCHEDULE_FILE


def load_schedule(graph_dir: str | Path | None, graph: Any, task_names: set[str]) -> Schedule | None:
    """The schedule beside a graph folder, checked against the graph's servers and `task_names`, for the graph's
    server; None when the folder has no schedule.yaml.

    Raises:
        GraphError: every problem, with file:line:col.
    """
    path = schedule_file(graph_dir)
    if not path.is_file():
        return None
    schedule, problems = read_schedule(path, graph, task_names)
    if problems:
        raise GraphError(problems, message=f"{len(problems)} problem(s) in {path.name}")
    return schedule


def read_schedule(path: Path, graph: Any, task_names: set[str]) -> tuple[Schedule | None, list[Problem]]:
    """(the schedule for the graph's server, or None; every problem of the file)."""
    source = read_yaml(path)
    problems: list[Problem] = list(source.problems)
    parsed: ScheduleFile | None = None
    if not problems:
        try:
            parsed = ScheduleFile.model_validate(source.data or {})
        except ValidationError as exc:
            problems = problems_from_validation_error(exc, str(path), source.locator, model=ScheduleFile)
    if parsed is None:
        return None, problems
    at = source.locator.problem
    for server in parsed.resets:
        if server not in graph.servers:
            problems.append(at(("resets", server), f"unknown server {server!r}; the graph has "
                                                   f"{', '.join(graph.servers)}"))
    seen: set[str] = set()
    for i, entry in enumerate(parsed.tasks):
        if entry.task not in task_names:
            problems.append(at(("tasks", i, "task"), f"unknown task {entry.task!r}; tasks: "
                                                     f"{', '.join(sorted(task_names)) or 'none'}"))
        if entry.task in seen:
            problems.append(at(("tasks", i, "task"), f"task {entry.task!r} is scheduled twice"))
        seen.add(entry.task)
        if entry.due.reset and not parsed.resets:
            problems.append(at(("tasks", i, "due", "reset"), "due at a reset, but the file declares no resets"))
    if parsed.start_task is not None and parsed.start_task not in task_names:
        problems.append(at(("start_task",), f"unknown task {parsed.start_task!r}"))
    if problems:
        return None, problems
    server = graph.server or graph.servers[0]
    reset = parsed.resets.get(server) or parsed.resets.get(graph.fallback_server) or Reset(zone="UTC+00:00")
    return Schedule(tuple(parsed.tasks), (reset.at,), parse_zone(reset.zone), parsed.retry, parsed.start_task,
                    str(path)), []
