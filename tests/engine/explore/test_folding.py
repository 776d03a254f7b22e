"""A dialog the atlas placed over the page the action was taken on, closed onto the page it covered
(engine.explore.folding): the action leads to that page.

Generated game 13 under chaos (portrait, 1080x2340): the title screen's tap opened the main page under a notice,
which the atlas took for a dialog over the title screen (an action's dialog is placed over the page it was taken on
when the rest of the frame allows it); the notice closed onto the main page, and the title screen's one link was
never drafted. The title screen was the draft's start page, with no way out: all 200 gotos `no_route`."""

from __future__ import annotations

from engine.config.loader import load_graph
from engine.explore.atlas import Atlas
from engine.explore.sketch import sketch
from engine.sim.generate import generate
from engine.sim.style import style_beside
from engine.sim.styled import StyledRenderer


def test_a_dialog_taken_for_one_over_the_title_screen_that_closes_onto_the_main_page_makes_the_tap_a_link(tmp_path):
    folder = generate(13, tmp_path / "game13")
    graph = load_graph(folder).resolve()
    renderer = StyledRenderer(graph, style_beside(folder))
    title, main = renderer.page("page_title"), renderer.page("page_main")
    notice = graph.popup("popup_2_ok")
    over_main = renderer.with_popups(main, [notice])
    atlas = Atlas()
    start = atlas.absorb({"type": "screenshot"}, sketch(title), "title.png")
    tap = {"type": "tap", "point": [626, 510]}
    shown = atlas.absorb(tap, sketch(over_main), "notice.png")
    assert shown.kind == "popup" and shown.page == start.page  # at first sight: a dialog over the title screen
    closed = atlas.absorb({"type": "tap", "point": [540, 1410]}, sketch(main), "main.png")
    assert closed.kind == "page" and closed.page != start.page
    assert atlas.outcome(start.page, "tap:626,510") == ("page", closed.page)  # the title screen's link
    assert atlas.popups[shown.popup].over == {closed.page}


def test_a_crash_from_under_a_dialog_makes_no_link_to_the_start_page(tmp_path):
    """A crash (or a restart) shows the start page whatever covered what: the notice over the main page, tapped, and
    the game crashed to its title screen, stays over the main page, and the tap that opened it is no link to the
    title screen (the notice's frame is the title screen dimmed,
    too, as far as the atlas's cover check can tell: both pages share the backdrop around its box)."""
    folder = generate(13, tmp_path / "game13")
    graph = load_graph(folder).resolve()
    renderer = StyledRenderer(graph, style_beside(folder))
    title, main = renderer.page("page_title"), renderer.page("page_main")
    over_main = renderer.with_popups(main, [graph.popup("popup_2_ok")])
    atlas = Atlas()
    start = atlas.absorb({"type": "screenshot"}, sketch(title), "title.png")
    here = atlas.absorb({"type": "tap", "point": [626, 510]}, sketch(main), "main.png")
    shown = atlas.absorb({"type": "tap", "point": [300, 900]}, sketch(over_main), "notice.png")
    assert shown.kind == "popup" and shown.page == here.page
    again = atlas.absorb({"type": "tap", "point": [540, 1410]}, sketch(title), "title2.png")  # a crash
    assert again.page == start.page
    assert atlas.popups[shown.popup].over == {here.page}
    assert atlas.outcome(here.page, "tap:300,900") != ("page", start.page)
