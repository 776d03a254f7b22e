"""Graph and renderer fidelity (issue 13, part 5) on the shipped Azur Lane graph.

A tap target that borrows another page's check crop is not painted (page_channel must not look like
page_campaign_menu), a small label can have a click area as large as what the game takes, and the scenario's
running event decides where an event entry leads.
"""

from __future__ import annotations

import pytest

from engine.config.loader import load_graph
from engine.config.schema import TapAction
from engine.observe.observer import Observer
from engine.sim import Scenario, SimGame, SyntheticAssets


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def graph():
    return load_graph(server="en")


@pytest.fixture(scope="module")
def synthetic(graph):
    assets = SyntheticAssets(graph)
    return SimGame(graph, assets=assets), Observer(graph, assets)


def _not_campaign_menu(game, observer) -> None:
    game.goto("page_channel")
    frame = game.frame()
    assert observer.observe(frame).page == "page_channel"
    ok, _ = observer.verify_page(frame, "page_campaign_menu")
    assert not ok, "page_channel's frame passes page_campaign_menu's check"


def test_channel_is_not_painted_as_the_campaign_menu(synthetic, graph):
    game, observer = synthetic
    link = graph.page("page_channel").links[0]
    assert game.renderer.borrows_check("page_channel", link.action)
    assert not game.renderer.borrows_check("page_campaign_menu", link.action)  # its own check: painted
    _not_campaign_menu(game, observer)
    game.goto("page_campaign_menu")
    assert observer.observe(game.frame()).page == "page_campaign_menu"


def test_channel_is_not_the_campaign_menu_with_alas_templates(shared_dir, graph):
    """With ALAS's own pixels CAMPAIGN_MENU_GOTO_CAMPAIGN and CAMPAIGN_MENU_CHECK are the same crop."""
    from engine.config.assetpacks import AlasAssetPack

    pack = AlasAssetPack(shared_dir / "alas" / "assets", "en", fallback=graph.fallback_server)
    game = SimGame(graph, assets=pack)
    _not_campaign_menu(game, Observer(graph, pack))
    # The channel still closes where ALAS taps.
    x1, y1, x2, y2 = graph.button("CAMPAIGN_MENU_GOTO_CAMPAIGN").click_area
    game.tap((x1 + x2) // 2, (y1 + y2) // 2)
    assert game.truth()["page"] == "page_main"


def test_munitions_take_a_tap_on_the_building(graph):
    button = graph.button("ACADEMY_GOTO_MUNITIONS")
    x1, y1, x2, y2 = button.area
    cx1, cy1, cx2, cy2 = button.click_area
    assert cx1 <= x1 and cy1 <= y1 and cx2 >= x2 and cy2 >= y2
    game = SimGame(graph, clock=Clock())
    game.goto("page_academy")
    game.tap((x1 + x2) // 2, y2 + 20)  # 20 px below the 24 px label
    assert game.truth()["loading_target"] == "page_munitions" or game.truth()["page"] == "page_munitions"
    # No other tap target of the academy is swallowed by the larger area.
    for link in graph.page("page_academy").links:
        if isinstance(link.action, TapAction) and link.action.button != button.name:
            ox1, oy1, ox2, oy2 = graph.button(link.action.button).click_area
            assert ox2 <= cx1 or ox1 >= cx2 or oy2 <= cy1 or oy1 >= cy2, link.action.button


EVENT_PAGES = ["page_event", "page_sp", "page_coalition", "page_raid", "page_rpg_stage", "page_hospital"]


def _tap(game, graph, button: str) -> None:
    x1, y1, x2, y2 = graph.button(button).click_area
    game.tap((x1 + x2) // 2, (y1 + y2) // 2)


@pytest.mark.parametrize("event", EVENT_PAGES)
def test_the_running_event_decides_where_the_entry_leads(graph, event):
    clock = Clock()
    game = SimGame(graph, scenario=Scenario(event=event), clock=clock)
    game.goto("page_campaign_menu")
    _tap(game, graph, "CAMPAIGN_MENU_GOTO_EVENT")
    clock.now += 60
    assert game.truth()["page"] == event
    if event == "page_rpg_stage":
        _tap(game, graph, "RPG_GOTO_STORY")
        clock.now += 60
        assert game.truth()["page"] == "page_rpg_story"


def test_without_an_event_the_first_link_is_followed(graph):
    clock = Clock()
    game = SimGame(graph, clock=clock)
    game.goto("page_campaign_menu")
    _tap(game, graph, "CAMPAIGN_MENU_GOTO_EVENT")
    clock.now += 60
    first = next(link.to for link in graph.page("page_campaign_menu").links
                 if getattr(link.action, "button", None) == "CAMPAIGN_MENU_GOTO_EVENT")
    assert game.truth()["page"] == first
