"""Writing a draft as an ordinary graph: game.yaml, pages.yaml and popups.yaml through the graph language's own
models, and the draft's asset pack (the project layout: index.json and draft/NAME.png crops cut from evidence).

The written folder is what ``python -m engine validate DIR`` checks and what ``goto --graph DIR --assets
DIR/assets`` navigates with; draft.yaml stays the source of truth and is never read back from the YAML.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cv2

from engine.config.assetpacks import new_index, save_index, write_template
from engine.config.assets import Template
from engine.config.schema import Graph
from engine.core.errors import ConfigError
from engine.explore.draft import Draft, Signature, Step, dump_yaml

UNKNOWN_PAGE = "page_unknown"
ASSETS = "assets"
LOADING_SECONDS = 15.0
"""How long a page reached through a loading screen may take to show when no arrival there was measured, and the
most any measured allowance gives."""
LOADING_FACTOR, LOADING_LEAST = 2.0, 3.0
"""A measured allowance: twice the longest arrival the explorer timed (a device slower on another day, a longer load
than the ones seen), 3 s at least. A flat 15 s made every dropped tap and every screen nobody names on the way to
such a page cost 15 s of a goto's 30 (generated game 1's draft under chaos: 129 of 200 gotos arrived)."""


def allowance(longest: float) -> float:
    """The loading allowance written for a page whose slowest measured arrival took `longest` seconds (0: none)."""
    if longest <= 0:
        return LOADING_SECONDS
    return round(min(LOADING_SECONDS, max(LOADING_LEAST, LOADING_FACTOR * longest)), 1)
SCHEMA_LINE = "# Written by `python -m engine explore` from draft.yaml: review it (studio) before trusting it.\n"


def _signature(sig: Signature) -> dict[str, Any]:
    if sig.type == "template":
        return {"type": "template", "asset": sig.asset, "area": list(sig.area), "color": True}
    if sig.type == "color":
        return {"type": "color", "area": list(sig.area), "rgb": list(sig.rgb or (0, 0, 0))}
    return {"type": "ocr", "area": list(sig.area), "pattern": sig.pattern or ""}


def _action(step: Step) -> dict[str, Any]:
    if step.type == "tap":
        return {"type": "tap", "point": list(step.point)}
    if step.type == "swipe":
        return {"type": "swipe", "start": list(step.start), "end": list(step.end)}
    return {"type": "key", "key": step.key}


def alike_pages(draft: Draft) -> set[str]:
    """Pages whose signatures, as written, are another page's too: the observer could never tell them apart, and the
    loader refuses such a graph (generated game 9: six pages on one backdrop given the same two colour samples, no
    region found that told them apart; the whole draft failed to load and no goto could run). They stay in the draft
    (and its review list, as weak signatures) and are left out of the graph, with their links: naming one of them
    when another shows would be a false success."""
    groups: dict[str, list[str]] = {}
    for page in draft.pages:
        if page.signatures:
            key = json.dumps(sorted(json.dumps(_signature(s), sort_keys=True).lower() for s in page.signatures))
            groups.setdefault(key, []).append(page.name)
    return {name for group in groups.values() if len(group) > 1 for name in group}


def graph_data(draft: Draft) -> dict[str, Any]:
    """The graph as plain data (one mapping, split into files by ``write_graph``), checked against the graph
    language's models so a draft never writes YAML the loader refuses."""
    alike = alike_pages(draft)
    names = {p.name for p in draft.pages} - alike
    pages: list[dict[str, Any]] = [{"name": UNKNOWN_PAGE, "description": "Anything the observer cannot name."}]
    for page in draft.pages:
        if page.name in alike:
            continue
        entry: dict[str, Any] = {"name": page.name}
        if page.title:
            entry["description"] = f"Titled {page.title!r} on screen."
        if page.loading:
            entry["loading"] = page.loading_s or LOADING_SECONDS
        entry["signatures"] = [_signature(s) for s in page.signatures]
        links = []
        for link in draft.links:
            if link.from_ == page.name and link.to in names and link.to != page.name and link.seen > 0:
                item: dict[str, Any] = {"to": link.to, "action": _action(link.action)}
                if link.seen < 2:
                    item["cost"] = 2.0  # seen once: a route prefers links confirmed by a second visit
                links.append(item)
        if links:
            entry["links"] = links
        pages.append(entry)
    popups = []
    for popup in draft.popups:
        if not popup.signatures or popup.dismiss is None:
            continue
        popups.append({"name": popup.name, "description": f"Seen over {', '.join(popup.over) or 'a page'}.",
                       "signatures": [_signature(s) for s in popup.signatures],
                       "dismiss": [_action(popup.dismiss)]})
    game: dict[str, Any] = {"game": draft.game, "resolution": list(draft.resolution), "servers": [draft.server],
                            "fallback_server": draft.server, "unknown_page": UNKNOWN_PAGE}
    if draft.start_page in names:
        game["start_page"] = draft.start_page
    if draft.app:
        game["app"] = dict(draft.app)
    loading = [s for screen in draft.loading for s in screen.signatures[:2]]
    if loading:
        game["loading_signatures"] = [{"type": "any_of", "of": [_signature(s) for s in screen.signatures[:2]]}
                                      if len(screen.signatures) > 1 else _signature(screen.signatures[0])
                                      for screen in draft.loading if screen.signatures]
    data = {**game, "pages": pages, "popups": popups}
    Graph.model_validate(data)  # the same models the loader uses: a draft that cannot load is our bug, found here
    return data


def _dump(path: Path, data: dict[str, Any]) -> None:
    text = SCHEMA_LINE + dump_yaml(data)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def write_assets(draft: Draft, folder: Path) -> int:
    """Cut every template signature's crop from its owner's first member frame into folder/assets; the count."""
    root = folder / ASSETS
    index = new_index(draft.server)
    count = 0
    owners = [(p.members, p.signatures) for p in draft.pages] + [(p.members, p.signatures) for p in draft.popups] \
        + [(s.members, s.signatures) for s in draft.loading]
    for members, signatures in owners:
        templates = [s for s in signatures if s.type == "template"]
        if not templates:
            continue
        if not members:
            raise ConfigError(f"template signature {templates[0].asset} has no member frame to cut it from")
        frame = cv2.imread(str(folder / members[0]), cv2.IMREAD_COLOR)
        if frame is None:
            raise ConfigError(f"cannot read the member frame {members[0]}", file=str(folder / members[0]))
        for sig in templates:
            x1, y1, x2, y2 = sig.area
            crop = frame[y1:y2, x1:x2].copy()
            write_template(root, Template(str(sig.asset), (crop,), area=tuple(sig.area)), index)
            count += 1
    save_index(root, index)
    return count


def write_graph(draft: Draft, folder: str | Path) -> Path:
    """Write `draft` as graph YAML (game.yaml, pages.yaml, popups.yaml) and its asset pack into `folder`.

    Raises:
        ConfigError: a member frame a template is cut from is missing or unreadable.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    data = graph_data(draft)
    pages, popups = data.pop("pages"), data.pop("popups")
    _dump(folder / "game.yaml", data)
    _dump(folder / "pages.yaml", {"pages": pages})
    _dump(folder / "popups.yaml", {"popups": popups})
    write_assets(draft, folder)
    return folder
