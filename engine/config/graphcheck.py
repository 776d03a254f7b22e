"""Checking a read graph as a whole: duplicate names, dangling references (pages, buttons, popups, policies),
areas off the screen, unsafe asset names, per-server mappings naming unknown servers, pages that can never be reached
or told apart.

Everything that can be checked before the first tap is checked here (MaaFramework's PipelineChecker); each problem
is a ``yamlsrc.Problem`` with file:line:col, found through the ``graphfiles.Src`` of the value at fault.
"""

from __future__ import annotations

import re
from collections import deque
from pathlib import Path
from typing import Any, Iterable, Iterator

import pydantic
from pydantic import BaseModel

from engine.config.graphfiles import ITEM_MODELS, REQUIRED_FIELDS, Collected, Src
from engine.config.schema import (
    AnyOfSignature,
    Button,
    ColorSignature,
    Graph,
    OcrSignature,
    Page,
    Popup,
    SwipeAction,
    TapAction,
    TemplateSignature,
)
from engine.config.yamlsrc import LocPath, Problem
from engine.core.results import closest

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
    close = closest(name, choices)
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


class Checker:
    """Every cross-item check of one read graph; ``run()`` appends to the problems, ``build()`` makes the Graph."""

    def __init__(self, collected: Collected, origin: Path, policy_names: set[str] | None = None) -> None:
        self.c = collected
        self.policy_names = policy_names
        """The policies a hop may name (None: not checked)."""
        self.origin = origin
        self.problems = collected.problems
        self.wide = {k: v for k, (v, _) in collected.wide.items()}
        self.buttons: dict[str, tuple[Button, Src]] = {}
        self.pages: dict[str, tuple[Page, Src]] = {}
        self.popups: dict[str, tuple[Popup, Src]] = {}
        self.servers: list[str] = list(self.wide.get("servers") or [])
        self.fallback: str | None = self.wide.get("fallback_server")
        self.resolution: tuple[int, int] | None = self.wide.get("resolution")

    def error(self, src: Src, message: str, *sub: str | int) -> None:
        self.problems.append(src.problem(message, "error", *sub))

    def warn(self, src: Src, message: str, *sub: str | int) -> None:
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
                self.check_signature(sig, Src(src.locator, src.path + path))
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
        if "defaults" in self.c.wide:
            defaults, src = self.c.wide["defaults"]
            self.check_policy_ref(defaults.policy, src, "defaults.policy", "policy")

    # ---- per-item checks

    def check_page(self, page: Page, src: Src) -> None:
        self.check_areas_and_assets(page, src)
        if page.defaults is not None:
            self.check_policy_ref(page.defaults.policy, src, "defaults.policy", "defaults", "policy")
        for sig, path in self._signatures(page.signatures, ("signatures",)):
            self.check_signature(sig, Src(src.locator, src.path + path))
        for i, link in enumerate(page.links):
            lsrc = Src(src.locator, src.path + ("links", i))
            self.check_page_ref(link.to, lsrc, "link to", "to")
            if link.expect is not None:
                self.check_page_ref(link.expect, lsrc, "link expects", "expect")
            self.check_action(link.action, Src(src.locator, lsrc.path + ("action",)))
            self.check_policy_ref(link.policy, lsrc, "link policy", "policy")
        for i, control in enumerate(page.controls):
            csrc = Src(src.locator, src.path + ("controls", i))
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

    def check_popup(self, popup: Popup, src: Src) -> None:
        self.check_areas_and_assets(popup, src)
        for sig, path in self._signatures(popup.signatures, ("signatures",)):
            self.check_signature(sig, Src(src.locator, src.path + path))
        for i, action in enumerate(popup.dismiss):
            self.check_action(action, Src(src.locator, src.path + ("dismiss", i)))
        for i, name in enumerate(popup.pages or []):
            self.check_page_ref(name, Src(src.locator, src.path + ("pages", i)), "popup shows on")

    def _signatures(self, sigs: list, path: LocPath) -> Iterator[tuple[Any, LocPath]]:
        for i, sig in enumerate(sigs):
            yield sig, path + (i,)
            if isinstance(sig, AnyOfSignature):
                yield from self._signatures(sig.of, path + (i, "of"))

    def check_signature(self, sig: Any, src: Src) -> None:
        if not isinstance(sig, (ColorSignature, TemplateSignature)) or sig.button is None:
            return
        button = self.check_button_ref(sig.button, src, "signature")
        if button is None:
            return
        if isinstance(sig, TemplateSignature) and sig.asset is None and button.asset is None:
            self.error(src, f"template signature uses button {sig.button!r}, which has no asset", "button")
        if isinstance(sig, ColorSignature) and sig.rgb is None and button.color is None:
            self.error(src, f"color signature uses button {sig.button!r}, which has no color", "button")

    def check_action(self, action: Any, src: Src) -> None:
        if isinstance(action, TapAction) and action.button is not None:
            self.check_button_ref(action.button, src, "tap")

    def check_button_ref(self, name: str, src: Src, what: str) -> Button | None:
        if name in self.buttons:
            return self.buttons[name][0]
        if name not in self.c.raw_names["buttons"]:
            self.error(src, f"{what} names unknown button {name!r}{_suggest(name, self.buttons)}", "button")
        return None

    def check_page_ref(self, name: str, src: Src, what: str, *sub: str | int) -> None:
        if name not in self.pages and name not in self.c.raw_names["pages"]:
            self.error(src, f"{what} unknown page {name!r}{_suggest(name, self.pages)}", *sub)

    def check_policy_ref(self, name: str | None, src: Src, what: str, *sub: str | int) -> None:
        if name is None or self.policy_names is None or name in self.policy_names:
            return
        hint = _suggest(name, self.policy_names) or f" (known: {', '.join(sorted(self.policy_names))})"
        self.error(src, f"{what} names unknown policy {name!r}{hint}; policies come from policies/*.yaml", *sub)

    def _popup_names(self) -> set[str]:
        return set(self.popups) | self.c.raw_names["popups"]

    # ---- areas, points, assets, per-server keys (generic over every model)

    def check_areas_and_assets(self, root: Any, src: Src) -> None:
        for node, path in _walk_models(root, ()):
            here = Src(src.locator, src.path + path)
            if isinstance(node, dict):
                self.check_server_keys(node, here)
                continue
            for name in ("area", "click"):
                for area, sub in _per_server(getattr(node, name, None)):
                    if isinstance(area, tuple) and len(area) == 4:
                        self.check_area(area, Src(here.locator, here.path + (name,) + sub), name)
            if isinstance(node, TapAction) and node.point is not None:
                self.check_point(node.point, Src(here.locator, here.path + ("point",)), "tap point")
            if isinstance(node, SwipeAction):
                self.check_point(node.start, Src(here.locator, here.path + ("start",)), "swipe start")
                self.check_point(node.end, Src(here.locator, here.path + ("end",)), "swipe end")
            if isinstance(node, (Button, TemplateSignature)):
                for asset, sub in _per_server(node.asset):
                    message = _asset_problem(asset)
                    if message:
                        self.error(here, message, "asset", *sub)

    def check_area(self, area: tuple[int, int, int, int], src: Src, what: str) -> None:
        x1, y1, x2, y2 = area
        if x2 <= x1 or y2 <= y1:
            self.error(src, f"{what} {list(area)} is empty (needs x2 > x1 and y2 > y1)")
        elif self.resolution is not None:
            width, height = self.resolution
            if x1 < 0 or y1 < 0 or x2 > width or y2 > height:
                self.error(src, f"{what} {list(area)} is outside the {width}x{height} screen")

    def check_point(self, point: tuple[int, int], src: Src, what: str) -> None:
        if self.resolution is None:
            return
        width, height = self.resolution
        x, y = point
        if not (0 <= x < width and 0 <= y < height):
            self.error(src, f"{what} {list(point)} is outside the {width}x{height} screen")

    def check_server_keys(self, mapping: dict[str, Any], src: Src) -> None:
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
        if "unknown_page" in self.c.wide:
            self.check_page_ref(unknown, self.c.wide["unknown_page"][1], "unknown_page names an")
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
