"""Reading a graph folder: its YAML files, each validated, gathered into items and graph-wide fields with their source.

Nothing here compares one item with another (that is ``engine.config.graphcheck``): this module only finds the files,
parses and validates each on its own, and remembers where every value was written so later problems can name
file:line:col.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic
from pydantic import BaseModel

from engine.config import schema
from engine.config.schema import Button, GraphFile, Page, Popup
from engine.config.yamlmessages import problems_from_validation_error
from engine.config.yamlsrc import Locator, LocPath, Problem, read_yaml

GRAPH_WIDE_FIELDS = (
    "game",
    "resolution",
    "servers",
    "fallback_server",
    "unknown_page",
    "start_page",
    "app",
    "defaults",
    "loading_signatures",
    "spending_words",
)
REQUIRED_FIELDS = ("game", "resolution", "servers", "fallback_server")
ITEM_MODELS: dict[str, type[BaseModel]] = {"buttons": Button, "pages": Page, "popups": Popup}
SKIPPED_FILE_PREFIX = "tasks"
"""Files whose name starts with this are task lists, not graph files."""
COMPANION_PREFIXES = (SKIPPED_FILE_PREFIX, "goals", "sim_state", "schedule", "draft", "sim_style")
"""Files beside the graph that are not graph files (tasks, goals, the simulator's state, the schedule, the
explorer's draft.yaml, the simulator's drawing style); ``engine.config.loader`` checks them with their own loaders
(the draft is checked by engine.explore.draft and the style by engine.sim.style, above this floor)."""


def _all_field_names() -> list[str]:
    names: set[str] = set()
    for model in vars(schema).values():
        if isinstance(model, type) and issubclass(model, BaseModel):
            names.update(model.model_fields)
    return sorted(names)


_FIELD_NAMES = _all_field_names()


@dataclass(frozen=True)
class Src:
    """Where a value was written: its file's locator and its path in that file."""

    locator: Locator
    path: LocPath

    def where(self) -> str:
        line, col = self.locator.locate(self.path)
        return ":".join(str(p) for p in (self.locator.file, line, col) if p is not None)

    def problem(self, message: str, severity: str = "error", *sub: str | int) -> Problem:
        return self.locator.problem(self.path + sub, message, severity)  # type: ignore[arg-type]


@dataclass
class Collected:
    """What the files of one graph hold, each value with its Src, before any cross-item check."""

    wide: dict[str, tuple[Any, Src]] = field(default_factory=dict)
    items: dict[str, list[tuple[Any, Src]]] = field(default_factory=lambda: {k: [] for k in ITEM_MODELS})
    raw_names: dict[str, set[str]] = field(default_factory=lambda: {k: set() for k in ITEM_MODELS})
    problems: list[Problem] = field(default_factory=list)
    items_read: int = 0
    unreadable: int = 0
    """Files whose YAML could not be parsed at all: what they would have set is unknown."""


def graph_files(path: str | Path) -> list[Path]:
    """The YAML files that make up the graph at `path` (a folder or a single file), in load order."""
    path = Path(path)
    if path.is_file():
        return [path]
    return sorted(
        p
        for p in path.iterdir()
        if p.suffix in (".yaml", ".yml") and p.is_file() and not p.name.startswith(COMPANION_PREFIXES)
    )


def read_files(path: Path) -> Collected:
    """Read and validate every file of the graph at `path`, each on its own; never raises for a bad file."""
    out = Collected()
    if not path.exists():
        out.problems.append(Problem(str(path), None, None, "no such graph folder or file"))
        return out
    if not (path.is_dir() or path.is_file()):
        out.problems.append(Problem(str(path), None, None, "not a graph folder or a YAML file"))
        return out
    files = graph_files(path)
    if not files:
        out.problems.append(Problem(str(path), None, None, "no graph files (*.yaml) in this folder"))
    for file in files:
        _read_one(file, out)
    out.items_read = len(files)
    return out


def _read_one(file: Path, out: Collected) -> None:
    source = read_yaml(file)
    out.problems.extend(source.problems)
    data, locator = source.data, source.locator
    if data is None:
        if source.problems:
            out.unreadable += 1
        else:
            out.problems.append(locator.problem((), "empty graph file", "warning"))
        return
    if not isinstance(data, dict):
        out.problems.append(locator.problem((), f"a graph file is a mapping of fields, got {type(data).__name__}"))
        return
    try:
        parsed = GraphFile.model_validate(data)
    except pydantic.ValidationError as exc:
        out.problems.extend(
            problems_from_validation_error(exc, locator.file, locator, fields=_FIELD_NAMES, model=GraphFile)
        )
        parsed = None
    for kind, model in ITEM_MODELS.items():
        raw = data.get(kind)
        if not isinstance(raw, list):
            continue
        for index, item in enumerate(raw):
            if isinstance(item, dict) and isinstance(item.get("name"), str):
                # Names of items that fail validation still count as defined, so one typo does not cascade into
                # "unknown page" errors everywhere it is referenced.
                out.raw_names[kind].add(item["name"])
            if parsed is not None:
                value = getattr(parsed, kind)[index]
            else:
                try:
                    value = model.model_validate(item)
                except pydantic.ValidationError:
                    continue  # already reported through the whole-file validation
            out.items[kind].append((value, Src(locator, (kind, index))))
    for key in GRAPH_WIDE_FIELDS:
        if key not in data:
            continue
        if parsed is not None:
            value = getattr(parsed, key)
        else:
            try:
                value = getattr(GraphFile.model_validate({key: data[key]}), key)
            except pydantic.ValidationError:
                continue
        src = Src(locator, (key,))
        if key in out.wide:
            out.problems.append(src.problem(f"graph-wide field {key!r} is already set at {out.wide[key][1].where()}"))
            continue
        out.wide[key] = (value, src)
