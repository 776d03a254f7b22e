"""Loading a graph folder: YAML files -> one cross-checked ``schema.Graph``, or every problem at once.

A graph is a folder of ``*.yaml`` files (sorted by name, not recursive), each a ``schema.GraphFile``; their buttons,
pages and popups are concatenated and the graph-wide fields (game, resolution, servers, ...) may each be set in one
file only. Files named ``tasks*.yaml`` are skipped: task lists may live beside the pages but are not graph files.
A single ``.yaml`` file is accepted too.

Everything that can be checked before the first tap is checked here (MaaFramework's PipelineChecker): schema errors,
duplicate names, dangling references, areas off the screen, unsafe asset names, per-server mappings naming unknown
servers, pages that can never be reached or told apart. Each problem is a ``yamlsrc.Problem`` with file:line:col.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import pydantic
from pydantic import BaseModel

from engine import paths, schema
from engine.errors import GraphError
from engine.schema import (
    AnyOfSignature,
    Button,
    ColorSignature,
    Graph,
    GraphFile,
    OcrSignature,
    Page,
    Popup,
    SwipeAction,
    TapAction,
    TemplateSignature,
)
from engine.yamlsrc import LocPath, Locator, Problem, problems_from_validation_error, read_yaml

logger = logging.getLogger(__name__)

GRAPH_WIDE_FIELDS = (
    "game",
    "resolution",
    "servers",
    "fallback_server",
    "unknown_page",
    "start_page",
    "defaults",
    "loading_signatures",
)
REQUIRED_FIELDS = ("game", "resolution", "servers", "fallback_server")
ITEM_MODELS: dict[str, type[BaseModel]] = {"buttons": Button, "pages": Page, "popups": Popup}
SKIPPED_FILE_PREFIX = "tasks"
"""Files whose name starts with this are task lists, not graph files."""


def _all_field_names() -> list[str]:
    names: set[str] = set()
    for model in vars(schema).values():
        if isinstance(model, type) and issubclass(model, BaseModel):
            names.update(model.model_fields)
    return sorted(names)


_FIELD_NAMES = _all_field_names()


@dataclass(frozen=True)
class Report:
    """The outcome of checking a graph: the graph (None when there are errors), problems, and sizes."""

    graph: Graph | None
    problems: tuple[Problem, ...]
    pages: int = 0
    links: int = 0
    popups: int = 0
    buttons: int = 0

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "warning")

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        head = "ok" if self.ok else f"{len(self.errors)} error(s)"
        return (
            f"{head}: {self.pages} pages, {self.links} links, {self.popups} popups, {self.buttons} buttons "
            f"({len(self.warnings)} warnings)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "summary": self.summary(),
            "counts": {"pages": self.pages, "links": self.links, "popups": self.popups, "buttons": self.buttons},
            "errors": [p.to_dict() for p in self.errors],
            "warnings": [p.to_dict() for p in self.warnings],
        }


@dataclass(frozen=True)
class _Src:
    """Where a value was written: its file's locator and its path in that file."""

    locator: Locator
    path: LocPath

    def where(self) -> str:
        line, col = self.locator.locate(self.path)
        return ":".join(str(p) for p in (self.locator.file, line, col) if p is not None)

    def problem(self, message: str, severity: str = "error", *sub: str | int) -> Problem:
        return self.locator.problem(self.path + sub, message, severity)  # type: ignore[arg-type]


@dataclass
class _Collected:
    wide: dict[str, tuple[Any, _Src]] = field(default_factory=dict)
    items: dict[str, list[tuple[Any, _Src]]] = field(default_factory=lambda: {k: [] for k in ITEM_MODELS})
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
        if p.suffix in (".yaml", ".yml") and p.is_file() and not p.name.startswith(SKIPPED_FILE_PREFIX)
    )


def _read_files(path: Path) -> _Collected:
    out = _Collected()
    if not path.exists():
        out.problems.append(Problem(str(path), None, None, "no such graph folder or file"))
        return out
    files = graph_files(path)
    if not files:
        out.problems.append(Problem(str(path), None, None, "no graph files (*.yaml) in this folder"))
    for file in files:
        _read_one(file, out)
    out.items_read = len(files)
    return out


def _read_one(file: Path, out: _Collected) -> None:
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
        out.problems.extend(problems_from_validation_error(exc, locator.file, locator, fields=_FIELD_NAMES))
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
            out.items[kind].append((value, _Src(locator, (kind, index))))
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
        src = _Src(locator, (key,))
        if key in out.wide:
            out.problems.append(src.problem(f"graph-wide field {key!r} is already set at {out.wide[key][1].where()}"))
            continue
        out.wide[key] = (value, src)


# --------------------------------------------------------------------------------------------------- walking


def _walk_models(value: Any, path: LocPath) -> Iterator[tuple[Any, LocPath]]:
    """Every pydantic model and per-server mapping under `value`, with its path (YAML keys are field names)."""
    if isinstance(value, BaseModel):
        yield value, path
        for name in type(value).model_fields:
            yield from _walk_models(getattr(value, name), path + (name,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk_models(item, path + (i,))
    elif isinstance(value, dict):
        yield value, path


def _per_server(value: Any) -> Iterator[tuple[Any, tuple[str, ...]]]:
    """Each concrete value of a maybe-per-server value, with the extra path segment that locates it."""
    if isinstance(value, dict):
        for server, item in value.items():
            yield item, (server,)
    elif value is not None:
        yield value, ()


def _suggest(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


_DRIVE = re.compile(r"^[A-Za-z]:")


def _asset_problem(name: Any) -> str | None:
    if not isinstance(name, str) or not name.strip():
        return "asset name is empty"
    if "\\" in name:
        return f"asset name {name!r} contains a backslash; use '/'"
    if name.startswith("/") or _DRIVE.match(name):
        return f"asset name {name!r} is absolute; names are relative to the asset pack root"
    if ".." in name.split("/"):
        return f"asset name {name!r} escapes the asset pack root ('..')"
    return None


# --------------------------------------------------------------------------------------------------- checks


class _Checker:
    def __init__(self, collected: _Collected, origin: Path) -> None:
        self.c = collected
        self.origin = origin
        self.problems = collected.problems
        self.wide = {k: v for k, (v, _) in collected.wide.items()}
        self.buttons: dict[str, tuple[Button, _Src]] = {}
        self.pages: dict[str, tuple[Page, _Src]] = {}
        self.popups: dict[str, tuple[Popup, _Src]] = {}
        self.servers: list[str] = list(self.wide.get("servers") or [])
        self.fallback: str | None = self.wide.get("fallback_server")
        self.resolution: tuple[int, int] | None = self.wide.get("resolution")

    def error(self, src: _Src, message: str, *sub: str | int) -> None:
        self.problems.append(src.problem(message, "error", *sub))

    def warn(self, src: _Src, message: str, *sub: str | int) -> None:
        self.problems.append(src.problem(message, "warning", *sub))

    def run(self) -> None:
        self.check_wide()
        for kind, table in (("button", self.buttons), ("page", self.pages), ("popup", self.popups)):
            for model, src in self.c.items[kind + "s"]:
                if model.name in table:
                    self.error(src, f"duplicate {kind} name {model.name!r} (first at {table[model.name][1].where()})")
                else:
                    table[model.name] = (model, src)
        for model, src in self.c.items["buttons"]:
            self.check_areas_and_assets(model, src)
        for model, src in self.c.items["pages"]:
            self.check_page(model, src)
        for model, src in self.c.items["popups"]:
            self.check_popup(model, src)
        if "loading_signatures" in self.c.wide:
            value, src = self.c.wide["loading_signatures"]
            self.check_areas_and_assets(value, src)
            for sig, path in self._signatures(value, ()):
                self.check_signature(sig, _Src(src.locator, src.path + path))
        self.check_reachability()
        self.check_distinguishable()

    # ---- graph-wide fields

    def check_wide(self) -> None:
        if not self.c.items_read or self.c.unreadable:
            return  # a file could not be read: the reason is reported, "not set" would only be noise
        for key in REQUIRED_FIELDS:
            if key not in self.c.wide:
                self.problems.append(
                    Problem(str(self.origin), None, None, f"graph-wide field {key!r} is not set in any file")
                )
        if "servers" in self.c.wide:
            servers, src = self.c.wide["servers"]
            if not servers:
                self.error(src, "`servers` needs at least one server")
            seen: set[str] = set()
            for i, server in enumerate(servers):
                if server in seen:
                    self.error(src, f"server {server!r} is listed twice", i)
                seen.add(server)
        if "fallback_server" in self.c.wide and self.servers:
            fallback, src = self.c.wide["fallback_server"]
            if fallback not in self.servers:
                self.error(src, f"fallback server {fallback!r} is not one of the servers ({', '.join(self.servers)})")
        if "resolution" in self.c.wide:
            (width, height), src = self.c.wide["resolution"]
            if width <= 0 or height <= 0:
                self.error(src, f"resolution must be positive, got {width}x{height}")
                self.resolution = None

    # ---- per-item checks

    def check_page(self, page: Page, src: _Src) -> None:
        self.check_areas_and_assets(page, src)
        for sig, path in self._signatures(page.signatures, ("signatures",)):
            self.check_signature(sig, _Src(src.locator, src.path + path))
        for i, link in enumerate(page.links):
            lsrc = _Src(src.locator, src.path + ("links", i))
            self.check_page_ref(link.to, lsrc, "link to", "to")
            if link.expect is not None:
                self.check_page_ref(link.expect, lsrc, "link expects", "expect")
            self.check_action(link.action, _Src(src.locator, lsrc.path + ("action",)))
        for i, control in enumerate(page.controls):
            csrc = _Src(src.locator, src.path + ("controls", i))
            self.check_button_ref(control.button, csrc, "control")
            if control.shows is not None and control.shows not in self._popup_names():
                hint = _suggest(control.shows, self._popup_names())
                self.error(csrc, f"control shows unknown popup {control.shows!r}{hint}", "shows")
        seen: set[str] = set()
        for i, text_field in enumerate(page.fields):
            if text_field.name in seen:
                self.error(src, f"duplicate field name {text_field.name!r} on page {page.name!r}", "fields", i, "name")
            seen.add(text_field.name)
        if not page.signatures and page.name != self.wide.get("unknown_page", "page_unknown"):
            self.warn(src, f"page {page.name!r} has no signatures, so it can never be observed", "name")

    def check_popup(self, popup: Popup, src: _Src) -> None:
        self.check_areas_and_assets(popup, src)
        for sig, path in self._signatures(popup.signatures, ("signatures",)):
            self.check_signature(sig, _Src(src.locator, src.path + path))
        for i, action in enumerate(popup.dismiss):
            self.check_action(action, _Src(src.locator, src.path + ("dismiss", i)))
        for i, name in enumerate(popup.pages or []):
            self.check_page_ref(name, _Src(src.locator, src.path + ("pages", i)), "popup shows on")

    def _signatures(self, sigs: list, path: LocPath) -> Iterator[tuple[Any, LocPath]]:
        for i, sig in enumerate(sigs):
            yield sig, path + (i,)
            if isinstance(sig, AnyOfSignature):
                yield from self._signatures(sig.of, path + (i, "of"))

    def check_signature(self, sig: Any, src: _Src) -> None:
        if not isinstance(sig, (ColorSignature, TemplateSignature)) or sig.button is None:
            return
        button = self.check_button_ref(sig.button, src, "signature")
        if button is None:
            return
        if isinstance(sig, TemplateSignature) and sig.asset is None and button.asset is None:
            self.error(src, f"template signature uses button {sig.button!r}, which has no asset", "button")
        if isinstance(sig, ColorSignature) and sig.rgb is None and button.color is None:
            self.error(src, f"color signature uses button {sig.button!r}, which has no color", "button")

    def check_action(self, action: Any, src: _Src) -> None:
        if isinstance(action, TapAction) and action.button is not None:
            self.check_button_ref(action.button, src, "tap")

    def check_button_ref(self, name: str, src: _Src, what: str) -> Button | None:
        if name in self.buttons:
            return self.buttons[name][0]
        if name not in self.c.raw_names["buttons"]:
            self.error(src, f"{what} names unknown button {name!r}{_suggest(name, self.buttons)}", "button")
        return None

    def check_page_ref(self, name: str, src: _Src, what: str, *sub: str | int) -> None:
        if name not in self.pages and name not in self.c.raw_names["pages"]:
            self.error(src, f"{what} unknown page {name!r}{_suggest(name, self.pages)}", *sub)

    def _popup_names(self) -> set[str]:
        return set(self.popups) | self.c.raw_names["popups"]

    # ---- areas, points, assets, per-server keys (generic over every model)

    def check_areas_and_assets(self, root: Any, src: _Src) -> None:
        for node, path in _walk_models(root, ()):
            here = _Src(src.locator, src.path + path)
            if isinstance(node, dict):
                self.check_server_keys(node, here)
                continue
            for name in ("area", "click"):
                for area, sub in _per_server(getattr(node, name, None)):
                    if isinstance(area, tuple) and len(area) == 4:
                        self.check_area(area, _Src(here.locator, here.path + (name,) + sub), name)
            if isinstance(node, TapAction) and node.point is not None:
                self.check_point(node.point, _Src(here.locator, here.path + ("point",)), "tap point")
            if isinstance(node, SwipeAction):
                self.check_point(node.start, _Src(here.locator, here.path + ("start",)), "swipe start")
                self.check_point(node.end, _Src(here.locator, here.path + ("end",)), "swipe end")
            if isinstance(node, (Button, TemplateSignature)):
                for asset, sub in _per_server(node.asset):
                    message = _asset_problem(asset)
                    if message:
                        self.error(here, message, "asset", *sub)

    def check_area(self, area: tuple[int, int, int, int], src: _Src, what: str) -> None:
        x1, y1, x2, y2 = area
        if x2 <= x1 or y2 <= y1:
            self.error(src, f"{what} {list(area)} is empty (needs x2 > x1 and y2 > y1)")
        elif self.resolution is not None:
            width, height = self.resolution
            if x1 < 0 or y1 < 0 or x2 > width or y2 > height:
                self.error(src, f"{what} {list(area)} is outside the {width}x{height} screen")

    def check_point(self, point: tuple[int, int], src: _Src, what: str) -> None:
        if self.resolution is None:
            return
        width, height = self.resolution
        x, y = point
        if not (0 <= x < width and 0 <= y < height):
            self.error(src, f"{what} {list(point)} is outside the {width}x{height} screen")

    def check_server_keys(self, mapping: dict[str, Any], src: _Src) -> None:
        if not self.servers:
            return
        if not mapping:
            self.error(src, "per-server mapping is empty")
            return
        for server in mapping:
            if server not in self.servers:
                self.error(
                    src, f"unknown server {server!r} (this graph has {', '.join(self.servers)})", server
                )
        uncovered = [s for s in self.servers if s not in mapping and self.fallback not in mapping]
        if uncovered:
            self.error(
                src,
                f"per-server value has no entry for {', '.join(uncovered)} and none for the fallback "
                f"server {self.fallback!r}",
            )

    # ---- whole-graph checks

    def check_reachability(self) -> None:
        incoming: dict[str, set[str]] = {name: set() for name in self.pages}
        for name, (page, _) in self.pages.items():
            for link in page.links:
                if link.to in incoming and link.to != name:
                    incoming[link.to].add(name)
        start = self.wide.get("start_page")
        if start is not None:
            _, start_src = self.c.wide["start_page"]
            self.check_page_ref(start, start_src, "start_page is an")
        unknown = self.wide.get("unknown_page", "page_unknown")
        reached: set[str] | None = None
        if start in self.pages:
            reached = {start}
            queue = deque([start])
            while queue:
                for link in self.pages[queue.popleft()][0].links:
                    if link.to in self.pages and link.to not in reached:
                        reached.add(link.to)
                        queue.append(link.to)
        for name, (_, src) in self.pages.items():
            if name == start or name == unknown:
                continue
            if not incoming[name]:
                self.warn(src, f"no page links to page {name!r}, so no route can reach it", "name")
            elif reached is not None and name not in reached:
                self.warn(src, f"page {name!r} cannot be reached from the start page {start!r}", "name")

    def check_distinguishable(self) -> None:
        if not self.servers:
            return
        reported: set[tuple[str, str]] = set()
        for server in self.servers:
            seen: dict[Any, str] = {}
            for name, (page, src) in self.pages.items():
                if not page.signatures:
                    continue
                try:
                    key = frozenset(self._canonical(sig, server) for sig in page.signatures)
                except (KeyError, TypeError):
                    continue  # an unknown button: already reported
                other = seen.setdefault(key, name)
                if other != name and (other, name) not in reported:
                    reported.add((other, name))
                    self.error(
                        src,
                        f"page {name!r} has the same signatures as page {other!r} "
                        f"({self.pages[other][1].where()}) on server {server!r}: "
                        "the observer could never tell them apart",
                        "signatures",
                    )

    def _pick(self, value: Any, server: str) -> Any:
        if isinstance(value, dict):
            return value[server] if server in value else value.get(self.fallback)
        return value

    def _canonical(self, sig: Any, server: str) -> tuple:
        pick = self._pick
        if isinstance(sig, AnyOfSignature):
            return ("any_of", frozenset(self._canonical(s, server) for s in sig.of))
        if isinstance(sig, OcrSignature):
            return ("ocr", pick(sig.area, server), str(pick(sig.pattern, server)).lower())
        button = self.buttons[sig.button][0] if sig.button is not None else None
        area = pick(sig.area if sig.area is not None else button.area, server)
        if isinstance(sig, ColorSignature):
            rgb = pick(sig.rgb if sig.rgb is not None else button.color, server)
            return ("color", area, rgb)
        asset = pick(sig.asset if sig.asset is not None else button.asset, server)
        return ("template", asset, area, sig.color)

    # ---- result

    def build(self) -> Graph | None:
        if any(p.severity == "error" for p in self.problems):
            return None
        data: dict[str, Any] = dict(self.wide)
        for kind in ITEM_MODELS:
            data[kind] = [model for model, _ in self.c.items[kind]]
        try:
            return Graph.model_validate(data)
        except pydantic.ValidationError as exc:
            for err in exc.errors(include_url=False):
                key = err["loc"][0] if err["loc"] else None
                src = self.c.wide.get(key, (None, None))[1] if isinstance(key, str) else None
                if src is None:
                    self.problems.append(Problem(str(self.origin), None, None, f"{key}: {err['msg']}"))
                else:
                    self.error(src, str(err["msg"]))
            return None


def check_graph(path: str | Path | None = None) -> Report:
    """Load and check the graph at `path` (default: the shipped Azur Lane graph), reporting every problem."""
    origin = Path(path) if path is not None else paths.builtin_graph_dir("azurlane")
    collected = _read_files(origin)
    checker = _Checker(collected, origin)
    checker.run()
    graph = checker.build()
    order = {str(file): i for i, file in enumerate(graph_files(origin))} if origin.exists() else {}
    problems = tuple(
        sorted(checker.problems, key=lambda p: (order.get(p.file, -1), p.file, p.line or 0, p.col or 0))
    )
    pages = [m for m, _ in collected.items["pages"]]
    return Report(
        graph=graph,
        problems=problems,
        pages=len(pages),
        links=sum(len(p.links) for p in pages),
        popups=len(collected.items["popups"]),
        buttons=len(collected.items["buttons"]),
    )


def load_graph(path: str | Path | None = None, *, server: str | None = None) -> Graph:
    """The checked graph at `path` (default: the shipped Azur Lane graph), collapsed to `server` when given.

    Warnings are logged; errors raise.

    Raises:
        GraphError: listing every error problem (``.problems``), each with file:line:col.
        ValueError: `server` is not one of the graph's servers.
    """
    report = check_graph(path)
    for warning in report.warnings:
        logger.info("%s", warning)
    if report.warnings:
        # One quiet line, not one per warning: every goto loads the graph, and `validate` lists them in full.
        logger.info(
            "%d warning(s) in the graph at %s; `python -m engine validate` lists them",
            len(report.warnings),
            path if path is not None else paths.builtin_graph_dir("azurlane"),
        )
    if report.graph is None:
        raise GraphError(list(report.errors))
    return report.graph.for_server(server) if server is not None else report.graph


def graph_json_schema() -> dict[str, Any]:
    """The JSON Schema of one graph file (pages/graph.schema.json), for editors and external checkers."""
    body = GraphFile.model_json_schema()
    body.pop("title", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Page graph file (engine.schema.GraphFile)",
        **body,
    }
