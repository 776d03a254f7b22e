"""How close an explorer's draft (issue 37, /work/draft-spec.md) comes to the graph that drives the simulator.

The ground truth is a graph, its asset pack and its page state; its observer labels every member frame of every
draft page (and popup), and a one-to-one matching on those label counts (the Hungarian method, maximising the
frames agreed on) pairs draft pages with true pages. A pair needs the true page on at least half of the draft
page's frames, so a draft page that is mostly something else never counts. From the pairing:

- pages: recall = true pages matched / true pages the simulator can reach from its start page;
  precision = draft pages matched / draft pages. Two true pages merged into one draft page lose one in recall;
  one true page split in two loses one in precision (the usual one-to-one reading, as Yandrapally et al.).
- links: a draft link is right when its two ends are matched to the two ends of a true link and its action does
  what the true one does: a tap inside the true button's click area (the simulator's own test), a swipe in the
  same direction (the simulator's cosine), the same key. Recall = true links found / true links the simulator
  honours from reachable pages (of links sharing one spot, the simulator takes the first); precision = right
  draft links / draft links.
- popups: matched the same way on the popups the observer sees on each member frame; recall counts the popups
  that can show in the run (quiet: those a page control or the page state shows; with a scenario that pops
  popups after hops: every popup allowed on a reachable page).
- gotos (``run_gotos``): the engine's own goto tool on the draft graph and asset pack, driving a simulator of the
  ground truth; each arrival is confirmed by the truth's observer on the frame the game then shows.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import cv2
import yaml

from engine.config.assetpacks import load_pack
from engine.config.loader import load_graph
from engine.config.schema import Graph, KeyAction, SwipeAction, TapAction
from engine.config.simstate import state_beside
from engine.observe.observer import Observer
from engine.sim.game import SWIPE_COSINE
from engine.sim.render import POINT_BOX, SyntheticAssets
from engine.sim.style import style_beside
from engine.sim.styled import StyledRenderer

DRAFT_FORMAT = "engine-draft/1"


# ------------------------------------------------------------------------------------------------ the ground truth


@dataclass
class Truth:
    """A ground-truth game: its server-resolved graph, the pack the simulator draws with, its page state."""

    name: str
    graph: Graph
    assets: Any
    graph_dir: Path | None = None
    state: Any = None
    style: Any = None
    """The graph's drawing style (engine.sim.style), or None: the simulator of the truth is built with it."""

    @cached_property
    def observer(self) -> Observer:
        return Observer(self.graph, self.assets)

    @cached_property
    def buttons(self) -> dict[str, Any]:
        return {b.name: b for b in self.graph.buttons}

    def honoured_links(self, page: str) -> list[Any]:
        """The links of `page` the simulator can take: of tap links with the same click area, only the first."""
        seen, out = set(), []
        for link in self.graph.page(page).links:
            key = None
            if isinstance(link.action, TapAction):
                key = tuple(tap_area(self, link.action))
            elif isinstance(link.action, KeyAction):
                key = ("key", link.action.key)
            if key is not None:
                if key in seen:
                    continue
                seen.add(key)
            out.append(link)
        return out

    @cached_property
    def reachable(self) -> frozenset[str]:
        """Pages the simulator reaches from its start page by the links it honours."""
        start = self.graph.start_page or self.graph.pages[0].name
        seen, todo = {start}, [start]
        while todo:
            for link in self.honoured_links(todo.pop()):
                if link.to not in seen:
                    seen.add(link.to)
                    todo.append(link.to)
        return frozenset(seen - {self.graph.unknown_page})

    def links(self) -> list[tuple[str, Any]]:
        """(source, link) for every honoured link of every reachable page: what link recall counts."""
        return [(page, link) for page in sorted(self.reachable) for link in self.honoured_links(page)]

    def possible_popups(self, scenario: Any = None) -> frozenset[str]:
        """Popups that can show in a run under `scenario` (None: quiet), on the reachable pages."""
        shown = {c.shows for p in self.reachable for c in self.graph.page(p).controls if c.shows}
        shown |= _state_shows(self.state, self.reachable)
        if scenario is not None and getattr(scenario, "popup_p", 0) > 0:
            allowed = set(scenario.popups) if scenario.popups is not None else None
            for popup in self.graph.popups:
                if (popup.pages is None or set(popup.pages) & self.reachable) and \
                        (allowed is None or popup.name in allowed):
                    shown.add(popup.name)
        return frozenset(shown)


def _state_shows(node: Any, pages: frozenset[str], page: str | None = None) -> set[str]:
    """Every popup a page-state tap shows (an Effect's `show`) under a reachable page."""
    if node is None or isinstance(node, (str, int, float, bool)):
        return set()
    if isinstance(node, (list, tuple)):
        return set().union(*(_state_shows(n, pages, page) for n in node)) if node else set()
    if isinstance(node, dict):
        return set().union(*(_state_shows(n, pages, page) for n in node.values())) if node else set()
    fields = getattr(type(node), "model_fields", None)
    if fields is None:
        return set()
    page = getattr(node, "page", None) if isinstance(getattr(node, "page", None), str) else page
    found = {node.show} if isinstance(getattr(node, "show", None), str) and (page is None or page in pages) else set()
    for name in fields:
        found |= _state_shows(getattr(node, name), pages, page)
    return found


def load_truth(name: str, graph_dir: str | Path | None, server: str | None = None,
               assets_dir: str | Path | None = None) -> Truth:
    """The ground truth in `graph_dir` (None: the shipped graph) drawn with `assets_dir` (ALAS's or ours), else
    with the simulator's synthetic pack (or, for a graph with a drawing style, the templates cut from its drawings:
    a generated game, engine.sim.generate); its page state and style are the ones declared beside the graph."""
    graph = load_graph(graph_dir).resolve(server)
    style = style_beside(graph_dir)
    if assets_dir:
        assets = load_pack(assets_dir, graph.server, fallback=graph.fallback_server)
    else:
        assets = StyledRenderer(graph, style).assets if style is not None else SyntheticAssets(graph)
    return Truth(name, graph, assets, Path(graph_dir) if graph_dir else None, state_beside(graph_dir, graph), style)


def tap_area(truth: Truth, action: TapAction) -> tuple[int, int, int, int]:
    """Where the simulator accepts a tap for `action` (engine.sim.game.SimGame._inside)."""
    if action.button is not None:
        return tuple(truth.buttons[action.button].click_area)
    x, y = action.point
    return (x - POINT_BOX, y - POINT_BOX, x + POINT_BOX, y + POINT_BOX)


# ------------------------------------------------------------------------------------------------ the draft


def load_draft(folder: str | Path) -> dict[str, Any]:
    """draft.yaml as plain data (the explorer's pydantic models are its own; the scorer reads only the contract)."""
    path = Path(folder) / "draft.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != DRAFT_FORMAT:
        raise ValueError(f"{path}: not an {DRAFT_FORMAT} draft")
    return data


class Labeller:
    """The truth observer's reading of draft frames, each frame read once."""

    def __init__(self, truth: Truth, folder: Path) -> None:
        self.truth, self.folder, self._seen = truth, folder, {}

    def __call__(self, member: str) -> tuple[str | None, tuple[str, ...]]:
        if member not in self._seen:
            frame = cv2.imread(str(self.folder / member), cv2.IMREAD_COLOR)
            if frame is None:
                self._seen[member] = (None, ())
            else:
                seen = self.truth.observer.observe(frame)
                self._seen[member] = (seen.page, tuple(seen.popups))
        return self._seen[member]


# ------------------------------------------------------------------------------------------------ matching


def assign(weights: list[list[float]]) -> list[tuple[int, int]]:
    """A one-to-one matching of rows to columns with the largest total weight (Hungarian method, O(n^2 m));
    pairs of weight 0 are left out."""
    rows, cols = len(weights), len(weights[0]) if weights else 0
    if not rows or not cols:
        return []
    flip = rows > cols
    w = [list(col) for col in zip(*weights)] if flip else weights
    n, m = len(w), len(w[0])
    top = max(max(r) for r in w)
    cost = [[top - x for x in r] for r in w]
    u, v, p, way = [0.0] * (n + 1), [0.0] * (m + 1), [0] * (m + 1), [0] * (m + 1)
    for i in range(1, n + 1):
        p[0], j0 = i, 0
        minv, used = [math.inf] * (m + 1), [False] * (m + 1)
        while True:
            used[j0] = True
            i0, delta, j1 = p[j0], math.inf, 0
            for j in range(1, m + 1):
                if not used[j]:
                    cur = cost[i0 - 1][j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j], way[j] = cur, j0
                    if minv[j] < delta:
                        delta, j1 = minv[j], j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
    pairs = [(p[j] - 1, j - 1) for j in range(1, m + 1) if p[j] and w[p[j] - 1][j - 1] > 0]
    return sorted((c, r) if flip else (r, c) for r, c in pairs)


def match(counts: dict[str, Counter], sizes: dict[str, int]) -> dict[str, str]:
    """Draft name -> true name, one to one, over pairs where the true name holds at least half the draft's frames."""
    drafts = sorted(counts)
    truths = sorted({t for c in counts.values() for t in c if t is not None})
    weights = [[float(counts[d][t]) if 2 * counts[d][t] >= max(sizes[d], 1) else 0.0 for t in truths]
               for d in drafts]
    return {drafts[i]: truths[j] for i, j in assign(weights)}


def majority(counter: Counter, size: int) -> str | None:
    """The true name on at least half of `size` frames (the most frequent one), else None."""
    best = max((t for t in counter if t is not None), key=lambda t: (counter[t], t), default=None)
    return best if best is not None and 2 * counter[best] >= max(size, 1) else None


def ratio(part: int, whole: int) -> float:
    return part / whole if whole else 1.0


# ------------------------------------------------------------------------------------------------ scores


@dataclass
class Score:
    """Every figure of one draft against one ground truth (``as_dict`` for printing and the results file)."""

    truth: str
    pages: dict[str, Any] = field(default_factory=dict)
    links: dict[str, Any] = field(default_factory=dict)
    popups: dict[str, Any] = field(default_factory=dict)
    cost: dict[str, Any] = field(default_factory=dict)
    gotos: dict[str, Any] = field(default_factory=dict)
    page_of: dict[str, str | None] = field(default_factory=dict)
    """Each draft page's true page (``goto_page``: what a goto to it must reach), or None."""

    def as_dict(self) -> dict[str, Any]:
        return {"truth": self.truth, "pages": self.pages, "links": self.links, "popups": self.popups,
                "cost": self.cost, "gotos": self.gotos}


def score_pages(draft: dict, truth: Truth, label: Labeller) -> tuple[dict[str, Any], dict[str, str], dict]:
    counts = {p["name"]: Counter(label(m)[0] for m in p.get("members") or []) for p in draft.get("pages") or []}
    sizes = {p["name"]: len(p.get("members") or []) for p in draft.get("pages") or []}
    pairs = match(counts, sizes)
    found = {t for t in pairs.values() if t in truth.reachable}
    recall, precision = ratio(len(found), len(truth.reachable)), ratio(len(pairs), len(counts))
    figures = {
        "draft": len(counts), "true": len(truth.reachable), "matched": len(pairs), "recall": recall,
        "precision": precision, "f1": 2 * recall * precision / (recall + precision) if recall + precision else 0.0,
        "missed": sorted(truth.reachable - found),
        "unmatched": {d: dict(counts[d]) for d in sorted(counts) if d not in pairs},
    }
    return figures, pairs, {p["name"]: goto_page(p.get("members") or [], label) for p in draft.get("pages") or []}


def goto_page(members: list[str], label: Labeller) -> str | None:
    """The true page a goto to a draft page must reach: the one most of its frames show with nothing over it, or
    None when most show a popup (a dialog the draft took for a page: it shows over whatever page it came on, so no
    one page judges an arrival there) or a screen the truth cannot name."""
    clean = Counter(page for page, popups in map(label, members) if not popups)
    return majority(clean, len(members))


def action_does(truth: Truth, true_action: Any, action: dict[str, Any]) -> bool:
    """Whether the draft's `action` (contract form) does what `true_action` does on the simulator."""
    kind = action.get("type")
    if isinstance(true_action, TapAction) and kind == "tap":
        point = action.get("point")
        if point is None and action.get("area"):
            x1, y1, x2, y2 = action["area"]
            point = ((x1 + x2) // 2, (y1 + y2) // 2)
        if point is None:
            return False
        x1, y1, x2, y2 = tap_area(truth, true_action)
        return x1 <= point[0] < x2 and y1 <= point[1] < y2
    if isinstance(true_action, SwipeAction) and kind == "swipe":
        (ax, ay), (bx, by) = true_action.start, true_action.end
        (cx, cy), (dx, dy) = action.get("start") or (0, 0), action.get("end") or (0, 0)
        u, v = (bx - ax, by - ay), (dx - cx, dy - cy)
        nu, nv = math.hypot(*u), math.hypot(*v)
        return bool(nu and nv) and (u[0] * v[0] + u[1] * v[1]) / (nu * nv) >= SWIPE_COSINE
    if isinstance(true_action, KeyAction) and kind == "key":
        return str(action.get("key", "")).lower() == true_action.key
    return False


def to_truth(draft: dict, truth: Truth, action: dict[str, Any]) -> dict[str, Any]:
    """A draft's action in the truth's pixels: the explorer draws a device bigger than 1280 on its long side at a
    reference size (engine.faces.commands.explore.REFERENCE_LONG_SIDE, the draft's `resolution`), as the engine
    scales a graph to the device; the true click areas are in the game's own resolution (1080x2340, 1920x1080)."""
    size = draft.get("resolution")
    if not size or tuple(size) == tuple(truth.graph.resolution):
        return action
    sx, sy = truth.graph.resolution[0] / size[0], truth.graph.resolution[1] / size[1]
    out = dict(action)
    for key in ("point", "start", "end"):
        if action.get(key):
            out[key] = [round(action[key][0] * sx), round(action[key][1] * sy)]
    if action.get("area"):
        x1, y1, x2, y2 = action["area"]
        out["area"] = [round(x1 * sx), round(y1 * sy), round(x2 * sx), round(y2 * sy)]
    return out


def score_links(draft: dict, truth: Truth, pairs: dict[str, str]) -> dict[str, Any]:
    true_links = truth.links()
    found: set[int] = set()
    right, wrong = 0, []
    for link in draft.get("links") or []:
        src, dst = pairs.get(link.get("from")), pairs.get(link.get("to"))
        action = to_truth(draft, truth, link.get("action") or {})
        hits = [i for i, (page, true) in enumerate(true_links)
                if page == src and true.to == dst and action_does(truth, true.action, action)]
        if hits and src is not None and dst is not None:
            right += 1
            found.update(hits)
        else:
            wrong.append(f"{link.get('from')} -> {link.get('to')} {link.get('action')}")
    drafts = len(draft.get("links") or [])
    return {
        "draft": drafts, "true": len(true_links), "right": right, "found": len(found),
        "recall": ratio(len(found), len(true_links)), "precision": ratio(right, drafts),
        "missed": [f"{p} -> {link.to}" for i, (p, link) in enumerate(true_links) if i not in found],
        "wrong": wrong,
    }


def score_popups(draft: dict, truth: Truth, label: Labeller, scenario: Any = None) -> dict[str, Any]:
    popups = draft.get("popups") or []
    counts = {p["name"]: Counter(n for m in p.get("members") or [] for n in label(m)[1]) for p in popups}
    sizes = {p["name"]: len(p.get("members") or []) for p in popups}
    pairs = match(counts, sizes)
    possible = truth.possible_popups(scenario)
    found = set(pairs.values()) & possible
    dismiss_right = 0
    for popup in popups:
        true = pairs.get(popup["name"])
        steps = [a for a in truth.graph.popup(true).dismiss if a.type != "wait"] if true else []
        if steps and popup.get("dismiss") and action_does(truth, steps[0], to_truth(draft, truth, popup["dismiss"])):
            dismiss_right += 1
    return {
        "draft": len(popups), "true": len(possible), "matched": len(pairs),
        "recall": ratio(len(found), len(possible)), "precision": ratio(len(pairs), len(popups)),
        "dismiss_right": dismiss_right, "missed": sorted(possible - found),
    }


def score_draft(folder: str | Path, truth: Truth, *, scenario: Any = None) -> Score:
    """Pages, links, popups and cost of the draft in `folder` (gotos: ``run_gotos`` with ``Score.page_of``)."""
    folder = Path(folder)
    draft = load_draft(folder)
    label = Labeller(truth, folder)
    pages, pairs, page_of = score_pages(draft, truth, label)
    made = draft.get("made") or {}
    found = max(len(pairs), 1)
    cost = {"taps": made.get("taps"), "minutes": made.get("minutes"),
            "taps_per_page": (made["taps"] / found) if made.get("taps") is not None else None,
            "minutes_per_page": (made["minutes"] / found) if made.get("minutes") is not None else None}
    return Score(truth.name, pages, score_links(draft, truth, pairs), score_popups(draft, truth, label, scenario),
                 cost, page_of=page_of)
