"""A generated game's structure, before any pixel: its pages and how they link, its popups and what shows them.

``plan(rng)`` draws, per seed: 5 to 60 pages; a title screen (one way into the game, through a loading screen), a
hub, areas (each a hub of its own, some behind a loading screen of their own length), and in each area a mix of
plain pages (dead ends with back), pages left only with the back key, pages whose only way out is a small icon,
lists whose rows open detail pages, tab groups switched by tap, by swipe or both; one-way links across areas; popups
of the usual kinds (a close cross in a corner or anywhere on the panel, OK or Confirm low on the panel, tap anywhere
to continue, back key only), shown by a page's button, as a chain of two or three, or over a page on arriving there
(the first time: a page first seen under a dialog). engine.sim.generate.layout turns it into a graph and a style.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from engine.sim.generate.words import Labels

MIN_PAGES, MAX_PAGES = 5, 60
POPUP_KINDS = ("cross", "ok", "tap_anywhere", "back_only")
CORNERS = ("tl", "tr", "bl", "br", "panel")


@dataclass
class Link:
    to: str
    how: str
    """tap (a button), swipe_left / swipe_right (a swipe), key (the back key)."""
    role: str
    """What the tapped button is: menu, back, home, icon_exit, tab, row, shortcut, start."""
    label: str = ""


@dataclass
class PageSpec:
    name: str
    kind: str
    """title, hub, area, plain, backkey, icon, list, detail, tab."""
    area: str
    label: str
    titled: bool = True
    parent: str | None = None
    links: list[Link] = field(default_factory=list)
    controls: list[tuple[str, str]] = field(default_factory=list)
    """(label, popup) of buttons that show a popup."""
    loading: float = 0.0
    tab_group: str | None = None
    tab_index: int = 0
    tab_labels: tuple[str, ...] = ()
    tab_mode: str = ""
    """tap, swipe or both."""


@dataclass
class PopupSpec:
    name: str
    kind: str
    label: str
    corner: str = "tr"
    button_label: str = "OK"
    page: str | None = None
    """Only on this page (a dialog shown on arrival), else anywhere."""


@dataclass
class Plan:
    pages: list[PageSpec]
    popups: list[PopupSpec]
    arrivals: list[tuple[str, str, bool]]
    """(page, popup, first only)."""
    chains: dict[str, str]

    def page(self, name: str) -> PageSpec:
        return next(p for p in self.pages if p.name == name)


def _name(label: str) -> str:
    return "_".join(label.lower().split())


def plan(rng: random.Random, labels: Labels) -> Plan:
    """A game's structure drawn from `rng` (see the module docstring)."""
    target = MIN_PAGES + int((MAX_PAGES - MIN_PAGES) * rng.random() ** 1.4)
    title = PageSpec("page_title", "title", "main", labels.word())
    hub = PageSpec("page_main", "hub", "main", labels.word(), loading=round(rng.uniform(1.0, 4.0), 1))
    title.links.append(Link(hub.name, "tap", "start", "TAP TO START"))
    pages = [title, hub]
    n_areas = max(1, min(7, (target - 2) // rng.randint(4, 8)))
    budget = target - 2 - n_areas
    areas = []
    for i in range(n_areas):
        label = labels.word()
        area = PageSpec(f"page_{_name(label)}", "area", f"area{i}", label, parent=hub.name,
                        loading=round(rng.uniform(0.6, 3.0), 1) if rng.random() < 0.4 else 0.0)
        hub.links.append(Link(area.name, "tap", "menu", label))
        area.links += [Link(hub.name, "tap", "back"), Link(hub.name, "key", "back")]
        pages.append(area)
        areas.append(area)
    shares = [0] * n_areas
    for _ in range(max(0, budget)):
        shares[rng.randrange(n_areas)] += 1
    for area, share in zip(areas, shares):
        pages += _fill_area(rng, labels, area, share)
    if rng.random() < 0.5:  # a home icon on the pages that have a back button
        for page in pages:
            if page.kind in ("plain", "list", "detail", "tab") and page.parent != hub.name:
                page.links.append(Link(hub.name, "tap", "home"))
    _one_way_links(rng, pages)
    popups, arrivals, chains = _popups(rng, labels, pages)
    untitled = rng.random() < 0.2  # a game with no titles at all
    for page in pages:
        if page.kind != "title" and (untitled or rng.random() < 0.12):
            page.titled = False
    return Plan(pages, popups, arrivals, chains)


def _fill_area(rng: random.Random, labels: Labels, area: PageSpec, share: int) -> list[PageSpec]:
    out: list[PageSpec] = []
    menu_slots = 7
    while share > 0 and len([lk for lk in area.links if lk.role == "menu"]) < menu_slots:
        kind = rng.choices(["plain", "backkey", "icon", "list", "tabs"], [4, 2, 2, 2, 2])[0]
        if kind == "list" and share >= 3:
            rows = min(share - 1, rng.randint(2, 4))
            out += _list(labels, area, rows)
            share -= rows + 1
        elif kind == "tabs" and share >= 2:
            tabs = min(share, rng.randint(2, 4))
            out += _tabs(rng, labels, area, tabs)
            share -= tabs
        else:
            kind = kind if kind in ("plain", "backkey", "icon") else "plain"
            out.append(_leaf(labels, area, kind))
            share -= 1
    return out


def _leaf(labels: Labels, area: PageSpec, kind: str, parent: PageSpec | None = None) -> PageSpec:
    parent = parent or area
    label = labels.word()
    page = PageSpec(f"page_{_name(label)}", kind, area.area, label, parent=parent.name)
    parent.links.append(Link(page.name, "tap", "menu", label))
    if kind == "plain":
        page.links += [Link(parent.name, "tap", "back"), Link(parent.name, "key", "back")]
    elif kind == "backkey":
        page.links.append(Link(parent.name, "key", "back"))
    else:
        page.links.append(Link(parent.name, "tap", "icon_exit"))
    return page


def _list(labels: Labels, area: PageSpec, rows: int) -> list[PageSpec]:
    lst = _leaf(labels, area, "plain")
    lst.kind = "list"
    out = [lst]
    for _ in range(rows):
        label = labels.word()
        detail = PageSpec(f"page_{_name(label)}", "detail", area.area, label, parent=lst.name)
        lst.links.append(Link(detail.name, "tap", "row", label))
        detail.links += [Link(lst.name, "tap", "back"), Link(lst.name, "key", "back")]
        out.append(detail)
    return out


def _tabs(rng: random.Random, labels: Labels, area: PageSpec, count: int) -> list[PageSpec]:
    title = labels.word()
    tab_labels = tuple(labels.word() for _ in range(count))
    mode = rng.choice(["tap", "swipe", "both"])
    group = f"tabs_{_name(title)}"
    names = [f"page_{_name(title)}_{_name(t)}" for t in tab_labels]
    area.links.append(Link(names[0], "tap", "menu", title))
    out = []
    for i, name in enumerate(names):
        page = PageSpec(name, "tab", area.area, title, parent=area.name, tab_group=group, tab_index=i,
                        tab_labels=tab_labels, tab_mode=mode)
        page.links += [Link(area.name, "tap", "back"), Link(area.name, "key", "back")]
        if mode in ("tap", "both"):
            page.links += [Link(other, "tap", "tab", tab_labels[j]) for j, other in enumerate(names) if j != i]
        if mode in ("swipe", "both"):
            if i + 1 < count:
                page.links.append(Link(names[i + 1], "swipe_left", "swipe"))
            if i > 0:
                page.links.append(Link(names[i - 1], "swipe_right", "swipe"))
        out.append(page)
    return out


def _one_way_links(rng: random.Random, pages: list[PageSpec]) -> None:
    """A few shortcuts from a page of one area to a page of another, never back the same way."""
    leaves = [p for p in pages if p.kind in ("plain", "detail", "area")]
    targets = [p for p in pages if p.kind in ("plain", "list", "area", "backkey")]
    for _ in range(rng.randint(0, 3)):
        if not leaves or not targets:
            return
        src, dst = rng.choice(leaves), rng.choice(targets)
        if src.area == dst.area or any(lk.to == dst.name for lk in src.links) or \
                len([lk for lk in src.links if lk.how == "tap"]) >= 8:
            continue
        src.links.append(Link(dst.name, "tap", "shortcut", dst.label))


def _popups(rng: random.Random, labels: Labels, pages: list[PageSpec]
            ) -> tuple[list[PopupSpec], list[tuple[str, str, bool]], dict[str, str]]:
    inner = [p for p in pages if p.kind not in ("title",)]
    popups: list[PopupSpec] = []
    arrivals: list[tuple[str, str, bool]] = []
    chains: dict[str, str] = {}

    def new(page: str | None = None) -> PopupSpec:
        kind = rng.choice(POPUP_KINDS)
        popup = PopupSpec(f"popup_{len(popups) + 1}_{kind}", kind, labels.word(), rng.choice(CORNERS),
                          rng.choice(["OK", "CONFIRM", "CLAIM"]), page)
        popups.append(popup)
        return popup

    for _ in range(rng.randint(1, 3)):  # a page's button shows a popup
        page = rng.choice(inner)
        if len([lk for lk in page.links if lk.how == "tap"]) + len(page.controls) < 8:
            page.controls.append((labels.word(), new().name))
    if rng.random() < 0.6:  # a chain of two or three, started by a page's button
        page = rng.choice(inner)
        chain = [new() for _ in range(rng.randint(2, 3))]
        page.controls.append((labels.word(), chain[0].name))
        for a, b in zip(chain, chain[1:]):
            chains[a.name] = b.name
    for _ in range(rng.randint(0, 2)):  # a dialog over a page on arriving there
        page = rng.choice([p for p in inner if p.kind != "hub"] or inner)
        if any(a[0] == page.name for a in arrivals):
            continue
        arrivals.append((page.name, new(page.name).name, rng.random() < 0.7))
    return popups, arrivals, chains
