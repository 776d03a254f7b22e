"""SimGame: taps, keys and swipes move between pages exactly as the graph declares, and nothing else does."""

from __future__ import annotations

import pytest

from engine.sim import SimGame
from engine.sim.game import key_name


def centre(area):
    x1, y1, x2, y2 = area
    return (x1 + x2) // 2, (y1 + y2) // 2


def test_starts_on_login_and_its_link_leads_to_main(game):
    assert game.truth()["page"] == "page_login"
    game.tap(*centre((220, 250, 420, 300)))
    truth = game.truth()
    assert truth["page"] == "page_main"
    assert truth["hops"] == 1 and truth["taps"] == 1


def test_a_graph_without_start_page_starts_on_its_first_page(tiny_graph):
    graph = tiny_graph.model_copy(update={"start_page": None})
    assert SimGame(graph).truth()["page"] == "page_login"


def test_tap_outside_every_click_area_does_nothing(game):
    game.goto("page_main")
    game.tap(300, 150)
    truth = game.truth()
    assert truth["page"] == "page_main" and truth["taps"] == 1 and truth["hops"] == 0


def test_tap_edges_of_a_click_area(game):
    game.goto("page_main")
    game.tap(600, 225)  # x2 is exclusive
    assert game.truth()["page"] == "page_main"
    game.tap(599, 249)
    assert game.truth()["page"] == "page_shop"


def test_click_area_overrides_area_and_follows_the_server(tiny_graph_all_servers, clock):
    en = SimGame(tiny_graph_all_servers.resolve("en"), clock=clock)
    cn = SimGame(tiny_graph_all_servers.resolve("cn"), clock=clock)
    for g in (en, cn):
        g.goto("page_main")
        g.tap(452, 262)  # inside en's click area [450,260,610,330], outside cn's [455,265,605,325]
    assert en.truth()["loading_target"] == "page_dock"
    assert cn.truth()["page"] == "page_main" and not cn.truth()["loading"]


def test_shared_back_button_and_back_key(game):
    game.goto("page_shop")
    game.tap(*centre((10, 300, 90, 350)))
    assert game.truth()["page"] == "page_main"
    game.goto("page_shop")
    game.key("back")
    assert game.truth()["page"] == "page_main"


def test_back_key_without_a_declared_back_link_does_nothing(game):
    game.goto("page_dock")  # dock has a BACK button but no key link
    game.key(4)
    assert game.truth()["page"] == "page_dock"


def test_swipe_follows_a_link_in_roughly_the_same_direction_only(game):
    game.goto("page_main")
    game.swipe(100, 180, 500, 180)  # opposite direction
    assert game.truth()["page"] == "page_main"
    game.swipe(600, 200, 150, 160)
    assert game.truth()["page"] == "page_event"


def test_point_tap_link(game):
    game.goto("page_event")
    game.tap(55, 330)
    assert game.truth()["page"] == "page_main"


def test_loading_screen_lasts_on_the_clock(game, clock):
    game.goto("page_main")
    game.tap(*centre((460, 270, 600, 320)))  # page_dock declares loading: 2.0 -> half of it on screen
    truth = game.truth()
    assert truth["loading"] and truth["loading_target"] == "page_dock" and truth["page"] == "page_main"
    game.tap(*centre((10, 300, 90, 350)))  # taps during loading are lost
    clock.advance(0.99)
    assert game.truth()["loading"]
    clock.advance(0.02)
    truth = game.truth()
    assert not truth["loading"] and truth["page"] == "page_dock"


def test_blocking_popup_only_goes_through_its_dismiss_action(game):
    game.goto("page_shop")
    game.show_popup("popup_news")
    game.tap(*centre((10, 300, 90, 350)))  # BACK under the popup
    game.key("back")
    assert game.truth()["popups"] == ["popup_news"] and game.truth()["page"] == "page_shop"
    game.tap(*centre((500, 60, 560, 110)))  # NEWS_CLOSE
    assert game.truth()["popups"] == []
    game.tap(*centre((10, 300, 90, 350)))
    assert game.truth()["page"] == "page_main"


def test_stacked_popups_are_dismissed_top_first_by_priority(game):
    game.goto("page_shop")
    game.show_popup("popup_news")  # priority 1: on top even though it came first
    game.show_popup("popup_confirm")
    assert game.truth()["popups"] == ["popup_confirm", "popup_news"]
    game.tap(*centre((270, 260, 370, 300)))  # confirm's OK is covered by news
    assert game.truth()["popups"] == ["popup_confirm", "popup_news"]
    game.tap(*centre((500, 60, 560, 110)))
    game.tap(*centre((270, 260, 370, 300)))
    assert game.truth()["popups"] == []


def test_non_blocking_popup_lets_taps_through_and_stays_with_its_page(tiny_graph):
    popups = [p.model_copy(update={"blocking": False}) if p.name == "popup_news" else p for p in tiny_graph.popups]
    game = SimGame(tiny_graph.model_copy(update={"popups": popups}))
    game.goto("page_shop")
    game.show_popup("popup_news")
    game.tap(*centre((10, 300, 90, 350)))
    # It belongs to the shop: not drawn over the main page the tap led to.
    assert game.truth()["page"] == "page_main" and game.truth()["popups"] == []


def test_restart_goes_back_to_login(game):
    game.goto("page_shop")
    game.show_popup("popup_news")
    game.restart()
    assert game.truth()["page"] == "page_login" and game.truth()["popups"] == []


@pytest.mark.parametrize(
    "key, name",
    [("back", "back"), (4, "back"), ("4", "back"), ("KEYCODE_BACK", "back"), ("KEYCODE_HOME", "home"), (24, None)],
)
def test_key_names(key, name):
    assert key_name(key) == name


def test_frame_shape_and_type(game, tiny_graph):
    frame = game.frame()
    assert frame.shape == (tiny_graph.resolution[1], tiny_graph.resolution[0], 3)
    assert frame.dtype.name == "uint8"
    frame[:] = 0  # callers own their copy: the cached page must not change
    assert game.frame().any()


def test_azur_lane_graph_login_to_main():
    from engine.config.loader import load_graph

    game = SimGame(load_graph().resolve("en"))
    graph = game.graph
    start = graph.page(game.truth()["page"])
    link = next(link for link in start.links if link.to == "page_main")
    if link.action.type == "tap" and link.action.button:
        x1, y1, x2, y2 = graph.button(link.action.button).click_area
        game.tap((x1 + x2) // 2, (y1 + y2) // 2)
    elif link.action.type == "tap":
        game.tap(*link.action.point)
    else:
        game.key(link.action.key)
    assert game.truth()["page"] == "page_main" or game.truth()["loading_target"] == "page_main"


def test_an_overlay_no_graph_declares_swallows_input_until_its_close_box_is_tapped(game):
    import numpy as np

    from engine.sim import Overlay

    image = np.full((100, 200, 3), (10, 200, 30), np.uint8)
    later = Overlay("offer", image, (250, 50), (400, 50, 450, 100))  # its X elsewhere
    game.show_overlay(Overlay("offer", image, (250, 50), (260, 60, 300, 100), then=later, returns="at_once"))
    assert (game.frame()[60, 260] == (10, 200, 30)).all()
    game.tap(*centre((220, 250, 420, 300)))  # the login link beneath it
    game.key("back")
    truth = game.truth()
    assert truth["page"] == "page_login" and truth["overlays"] == ["offer"] and truth["hops"] == 0
    game.tap(280, 80)  # its X: closed, and back at once with its X elsewhere
    assert game.truth()["overlays"] == ["offer"]
    game.tap(280, 80)
    assert game.truth()["overlays"] == ["offer"]
    game.tap(425, 75)
    assert game.truth()["overlays"] == []

    game.show_overlay(Overlay("offer", image, (250, 50), (260, 60, 300, 100), then=later, returns="next_hop"))
    game.tap(280, 80)
    assert game.truth()["overlays"] == []  # it waits for the next page change
    game.tap(*centre((220, 250, 420, 300)))
    truth = game.truth()
    assert truth["page"] == "page_main" and truth["overlays"] == ["offer"]
