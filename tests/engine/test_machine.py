"""The belief machine: compiled from a graph, moved only by verified observations."""

import pytest
from transitions import Machine

from engine.config.schema import Graph
from engine.navigation.machine import BeliefMachine


@pytest.fixture
def graph() -> Graph:
    tap = lambda b: {"type": "tap", "button": b}  # noqa: E731
    return Graph(
        game="demo",
        resolution=(1280, 720),
        servers=["en"],
        fallback_server="en",
        buttons=[{"name": n, "area": (10 * i, 10, 10 * i + 8, 18)} for i, n in enumerate("ABC", 1)],
        pages=[
            {"name": "main", "links": [{"to": "menu", "action": tap("A")}]},
            {"name": "menu", "links": [{"to": "main", "action": tap("B")}, {"to": "shop", "action": tap("C")}]},
            {"name": "shop", "links": [{"to": "menu", "action": {"type": "key", "key": "back"}}]},
        ],
    )


def test_states_are_pages_plus_unknown_and_triggers_are_links(graph):
    bm = BeliefMachine(graph, clock=lambda: 0.0)
    assert isinstance(bm.machine, Machine)
    assert set(bm.machine.states) == {"main", "menu", "shop", "page_unknown"}
    assert bm.page == "page_unknown"
    # auto_transitions=False: no to_<state> triggers exist
    assert not hasattr(bm.belief, "to_main")


def test_arrive_follows_a_link_and_marks_the_belief_verified(graph):
    now = [5.0]
    bm = BeliefMachine(graph, clock=lambda: now[0])
    bm.relocalise("main", 0.9)
    assert bm.can_take("menu") and not bm.can_take("shop")
    bm.arrive("menu", 0.8)
    assert bm.page == "menu"
    b = bm.belief.to_dict(now=7.0)
    assert b["screenshot_verified"] is True and b["confidence"] == 0.8 and b["verified_age_s"] == 2.0


def test_observation_wins_when_the_link_was_not_from_the_believed_page(graph):
    bm = BeliefMachine(graph, clock=lambda: 0.0)
    bm.relocalise("main", 1.0)
    bm.arrive("shop", 0.7)  # no link main -> shop: what was seen wins
    assert bm.page == "shop"


def test_unknown_observation_relocalises_to_unknown_and_is_unverified(graph):
    bm = BeliefMachine(graph, clock=lambda: 0.0)
    bm.relocalise("menu", 1.0)
    bm.relocalise(None, 0.1)
    assert bm.page == "page_unknown"
    assert bm.belief.screenshot_verified is False


def test_staleness(graph):
    now = [0.0]
    bm = BeliefMachine(graph, clock=lambda: now[0])
    assert bm.is_stale(10)
    bm.relocalise("main", 1.0)
    assert not bm.is_stale(10)
    now[0] = 11.0
    assert bm.is_stale(10)


def test_a_declared_link_is_an_arrival_and_anything_else_a_jump(graph):
    bm = BeliefMachine(graph, clock=lambda: 0.0)
    bm.relocalise("main", 1.0)
    assert bm.belief.last_change == "jump" and bm.belief.previous_page == "page_unknown"
    bm.arrive("menu", 0.9)  # main -> menu is declared
    assert (bm.page, bm.belief.last_change, bm.belief.previous_page) == ("menu", "link", "main")
    bm.arrive("menu", 0.9)  # no link menu -> menu: the observation still wins, as a jump
    assert (bm.page, bm.belief.last_change) == ("menu", "jump")


def test_a_link_arrival_on_weak_evidence_counts_as_a_jump(graph):
    bm = BeliefMachine(graph, clock=lambda: 0.0)
    bm.relocalise("main", 1.0)
    bm.arrive("menu", 0.2)  # the condition refuses the link; what was seen still moves the belief
    assert (bm.page, bm.belief.last_change, bm.belief.confidence) == ("menu", "jump", 0.2)


def test_the_machine_refuses_a_link_the_graph_does_not_declare(graph):
    from transitions import MachineError

    bm = BeliefMachine(graph, clock=lambda: 0.0)
    bm.relocalise("main", 1.0)
    with pytest.raises(MachineError):
        bm.belief.trigger("link_shop", confidence=1.0)  # main has no link to shop
    assert bm.page == "main"
    bm.relocalise(None, 0.0)
    assert bm.belief.last_change == "lost" and bm.belief.to_dict()["believed_page"] == "page_unknown"
