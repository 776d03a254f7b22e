"""Route planning: the cheapest sequence of links from one page to another (Dijkstra over link costs).

A link's cost is its effective ``link_cost`` (link beats page beats graph beats built-in, see
``Graph.settings``). Ties are broken deterministically: fewer hops first, then the alphabetically smaller sequence
of pages, then the link declared first; so the same graph always yields the same route, whatever order its files
were merged in. Two more questions about the graph's shape live here: what a page name means (``canonical_page``)
and which buttons lead home from many pages (``home_buttons``, the recovery ladder's second rung).
"""

from __future__ import annotations

import heapq
import threading
from dataclasses import dataclass
from typing import Callable, NamedTuple

from engine.config.schema import Graph, Link, TapAction
from engine.core.errors import NoRoute, UnknownPage
from engine.core.results import closest


class Hop(NamedTuple):
    """One step of a route: take `link` from `from_page` (arriving at ``link.to``) for `cost`."""

    from_page: str
    link: Link
    cost: float

    @property
    def to(self) -> str:
        return self.link.to


@dataclass(frozen=True)
class Route:
    src: str
    dst: str
    hops: tuple[Hop, ...]

    @property
    def cost(self) -> float:
        return sum(hop.cost for hop in self.hops)

    @property
    def pages(self) -> list[str]:
        """Every page the route passes through, `src` and `dst` included."""
        return [self.src] + [hop.to for hop in self.hops]

    def __len__(self) -> int:
        return len(self.hops)

    def to_dict(self) -> dict[str, object]:
        return {
            "src": self.src,
            "dst": self.dst,
            "cost": self.cost,
            "hops": [
                {"from": h.from_page, "to": h.to, "cost": h.cost, "action": describe_link(h.link)} for h in self.hops
            ],
        }


def describe_link(link: Link) -> str:
    """A short human label for a link's action, e.g. ``tap MAIN_GOTO_REWARD`` or ``key back``."""
    action = link.action
    detail = getattr(action, "button", None) or getattr(action, "key", None) or getattr(action, "point", None)
    if detail is None and action.type == "swipe":
        detail = f"{list(action.start)}->{list(action.end)}"
    if detail is None and action.type == "wait":
        detail = f"{action.seconds}s"
    return f"{action.type} {detail}"


class _Adjacency:
    """Outgoing hops per page, cheapest link per destination, computed once per graph."""

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.names = set(graph.page_names)
        self.all_out = {
            page.name: [
                Hop(page.name, link, float(graph.settings(page, link).link_cost))
                for link in page.links
                if link.to in self.names
            ]
            for page in graph.pages
        }
        self.out = {name: _cheapest(hops) for name, hops in self.all_out.items()}


_CACHE: dict[int, _Adjacency] = {}
_CACHE_LIMIT = 16
_LOCK = threading.Lock()


def _adjacency(graph: Graph) -> _Adjacency:
    # Graphs are frozen, so the adjacency is cached by identity (the entry keeps the graph alive, so the id stays
    # valid); a small bound keeps repeated loads from growing it without limit.
    with _LOCK:
        entry = _CACHE.get(id(graph))
        if entry is not None and entry.graph is graph:
            return entry
        entry = _Adjacency(graph)
        if len(_CACHE) >= _CACHE_LIMIT:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[id(graph)] = entry
        return entry


def _require(adjacency: _Adjacency, name: str) -> None:
    if name not in adjacency.names:
        raise UnknownPage(name, closest(name, sorted(adjacency.names)))


def neighbours(graph: Graph, page: str) -> list[Hop]:
    """Every link out of `page` to an existing page, in declaration order, with its effective cost.

    Raises:
        UnknownPage: `page` is not in the graph.
    """
    adjacency = _adjacency(graph)
    _require(adjacency, page)
    return list(adjacency.all_out[page])


def plan_route(graph: Graph, src: str, dst: str, avoid: Callable[[Hop], bool] | None = None) -> Route:
    """The cheapest route from `src` to `dst` (empty when they are the same page), taking no hop that `avoid` names
    (the navigator's links that led where the graph cannot name, engine.navigation.recovery.first_link).

    Raises:
        UnknownPage: either name is not a page of the graph (with the closest names as suggestions).
        NoRoute: no chain of links leads there.
    """
    adjacency = _adjacency(graph)
    _require(adjacency, src)
    _require(adjacency, dst)
    if src == dst:
        return Route(src, dst, ())
    # Labels are (cost, hops, pages-so-far): a total order that extending a path preserves, so Dijkstra stays exact
    # and equal-cost routes always resolve the same way.
    start = (0.0, 0, (src,))
    best: dict[str, tuple[float, int, tuple[str, ...]]] = {src: start}
    via: dict[str, Hop] = {}
    heap: list[tuple[float, int, tuple[str, ...]]] = [start]
    done: set[str] = set()
    while heap:
        label = heapq.heappop(heap)
        page = label[2][-1]
        if page in done:
            continue
        done.add(page)
        if page == dst:
            break
        cost, hops, pages = label
        for hop in adjacency.out[page] if avoid is None else _cheapest(adjacency.all_out[page], avoid):
            if hop.to in done:
                continue
            candidate = (cost + hop.cost, hops + 1, pages + (hop.to,))
            if hop.to not in best or candidate < best[hop.to]:
                best[hop.to] = candidate
                via[hop.to] = hop
                heapq.heappush(heap, candidate)
    if dst not in done:
        raise NoRoute(src, dst)
    hops_back: list[Hop] = []
    page = dst
    while page != src:
        hop = via[page]
        hops_back.append(hop)
        page = hop.from_page
    return Route(src, dst, tuple(reversed(hops_back)))


def _cheapest(hops: list[Hop], avoid: Callable[[Hop], bool] | None = None) -> list[Hop]:
    """The cheapest hop per destination among `hops` not avoided (the first declared on a tie), by destination."""
    best: dict[str, Hop] = {}
    for hop in hops:
        if not (avoid and avoid(hop)) and (hop.to not in best or hop.cost < best[hop.to].cost):
            best[hop.to] = hop
    return sorted(best.values(), key=lambda hop: hop.to)


def canonical_page(graph: Graph, name: str) -> str:
    """`name` as the graph spells it: a `page_` prefix may be left out (`shop` = `page_shop`)."""
    if name not in graph.page_names and f"page_{name}" in graph.page_names:
        return f"page_{name}"
    return name


def home_buttons(graph: Graph) -> list[str]:
    """Buttons that lead to the main page from at least three pages (ALAS's GOTO_MAIN): the ladder's second rung."""
    start = graph.start_page
    main = next((link.to for link in graph.page(start).links), None) if start else None
    main = main or graph.pages[0].name
    counts: dict[str, int] = {}
    for page in graph.pages:
        for link in page.links:
            if isinstance(link.action, TapAction) and link.action.button and link.to in (graph.pages[0].name, main):
                counts[link.action.button] = counts.get(link.action.button, 0) + 1
    return [b for b, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n >= 3]
