"""Route planning over the demo graph, small hand-built graphs, and the shipped Azur Lane graph."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from engine.config.loader import graph_files, load_graph
from engine.config.schema import Graph, KeyAction, Link, Page
from engine.core import paths
from engine.core.errors import NavigationError
from engine.navigation.routes import NoRoute, UnknownPage, neighbours, plan_route

GOOD = Path(__file__).resolve().parents[1] / "data" / "graphs" / "good"


@pytest.fixture(scope="module")
def demo() -> Graph:
    return load_graph(GOOD)


def _graph(edges: list[tuple[str, str, float | None]], extra_pages: tuple[str, ...] = ()) -> Graph:
    """A graph from (from, to, cost) edges; pages are declared in first-mention order."""
    names = list(dict.fromkeys([n for a, b, _ in edges for n in (a, b)] + list(extra_pages)))
    back = KeyAction(type="key", key="back")
    pages = [
        Page(name=name, links=[Link(to=b, action=back, cost=c) for a, b, c in edges if a == name]) for name in names
    ]
    return Graph(game="t", resolution=(1280, 720), servers=["en"], fallback_server="en", pages=pages)


def test_route_follows_links_and_layered_costs(demo: Graph) -> None:
    route = plan_route(demo, "page_login", "page_settings")
    assert route.pages == ["page_login", "page_main", "page_settings"]
    assert [hop.cost for hop in route.hops] == [5.0, 2.0]  # link cost 5; link cost 2
    assert route.cost == 7.0 and len(route) == 2
    assert route.hops[0].link.action.button == "LOGIN_START"
    # page_settings sets `defaults.link_cost: 2`, so even its plain links cost 2
    back = plan_route(demo, "page_settings", "page_main")
    assert back.cost == 2.0 and back.hops[0].link.action.type == "key"


def test_cheapest_of_parallel_links_is_taken(demo: Graph) -> None:
    route = plan_route(demo, "page_shop", "page_main")
    assert route.hops[0].link.action.button == "BACK" and route.cost == 1.0
    assert [(h.to, h.cost) for h in neighbours(demo, "page_shop")] == [("page_main", 1.0), ("page_main", 1.5)]


def test_cheaper_detour_beats_expensive_direct_link() -> None:
    graph = _graph([("a", "d", 10), ("a", "b", 1), ("b", "c", 1), ("c", "d", 1)])
    assert plan_route(graph, "a", "d").pages == ["a", "b", "c", "d"]


def test_ties_prefer_fewer_hops_then_alphabetical_pages_whatever_the_declaration_order() -> None:
    edges = [("s", "z", 1), ("z", "t", 1), ("s", "m", 1), ("m", "t", 1)]
    edges += [("s", "a", 0.5), ("a", "b", None), ("b", "t", 0.5)]
    # s->a->b->t also costs 2 (a->b uses the built-in 1.0) but takes three hops; s->z->t ties s->m->t
    orders = [edges, edges[::-1], sorted(edges, key=str), sorted(edges, key=str, reverse=True), edges[2:] + edges[:2]]
    for order in orders:
        assert plan_route(_graph(order), "s", "t").pages == ["s", "m", "t"]
    assert plan_route(_graph(edges), "s", "b").pages == ["s", "a", "b"]


def test_same_page_is_an_empty_route(demo: Graph) -> None:
    route = plan_route(demo, "page_main", "page_main")
    assert route.hops == () and route.cost == 0 and route.pages == ["page_main"]


def test_no_route_is_a_navigation_error_naming_both_pages(demo: Graph) -> None:
    with pytest.raises(NoRoute) as info:
        plan_route(demo, "page_unknown", "page_main")
    assert isinstance(info.value, NavigationError)
    assert (info.value.src, info.value.dst) == ("page_unknown", "page_main")
    assert info.value.to_dict()["status"] == "no_route"


def test_unknown_page_suggests_close_names(demo: Graph) -> None:
    with pytest.raises(UnknownPage) as info:
        plan_route(demo, "page_main", "page_mial")
    assert info.value.page == "page_mial"
    assert info.value.suggestions[0] == "page_mail"
    assert "did you mean page_mail" in str(info.value)
    with pytest.raises(UnknownPage):
        neighbours(demo, "nowhere")


def test_route_to_dict_describes_actions(demo: Graph) -> None:
    data = plan_route(demo, "page_settings", "page_shop").to_dict()
    assert data["hops"] == [
        {"from": "page_settings", "to": "page_shop", "cost": 2.0, "action": "swipe [640, 400]->[200, 400]"}
    ]


# --------------------------------------------------------------------------------------------------- shipped


@pytest.fixture(scope="module")
def azurlane() -> Graph:
    folder = paths.builtin_graph_dir("azurlane")
    if not folder.is_dir() or not graph_files(folder):
        pytest.skip("pages/azurlane has no graph files yet")
    return load_graph(folder)


def test_main_to_commission_goes_through_reward(azurlane: Graph) -> None:
    route = plan_route(azurlane, "page_main", "page_commission")
    assert route.pages == ["page_main", "page_reward", "page_commission"]


def test_every_route_is_optimal_and_made_of_real_links(azurlane: Graph) -> None:
    # Floyd-Warshall as an independent oracle for the cheapest cost between every pair of pages.
    names = azurlane.page_names
    inf = float("inf")
    dist = {(a, b): (0.0 if a == b else inf) for a in names for b in names}
    for page in azurlane.pages:
        for link in page.links:
            cost = azurlane.settings(page, link).link_cost
            dist[page.name, link.to] = min(dist[page.name, link.to], cost)
    for k, i, j in itertools.product(names, repeat=3):
        if dist[i, k] + dist[k, j] < dist[i, j]:
            dist[i, j] = dist[i, k] + dist[k, j]
    for a, b in itertools.product(names, repeat=2):
        if dist[a, b] == inf:
            with pytest.raises(NoRoute):
                plan_route(azurlane, a, b)
            continue
        route = plan_route(azurlane, a, b)
        assert route.cost == pytest.approx(dist[a, b]), (a, b)
        for hop in route.hops:
            assert hop.link in azurlane.page(hop.from_page).links
        assert route.pages[0] == a and route.pages[-1] == b
