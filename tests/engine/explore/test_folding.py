"""A dialog the atlas placed over the page the action was taken on, closed onto the page it covered
(engine.explore.folding): the action leads to that page.

Generated game 13 under chaos (portrait, 1080x2340): the title screen's tap opened the main page under a notice,
which the atlas took for a dialog over the title screen (an action's dialog is placed over the page it was taken on
when the rest of the frame allows it); the notice closed onto the main page, and the title screen's one link was
never drafted. The title screen was the draft's start page, with no way out: all 200 gotos `no_route`."""

from __future__ import annotations

from collections import Counter

import pytest

from engine.config.loader import load_graph
from engine.explore import dismiss
from engine.explore.atlas import Atlas
from engine.explore.sketch import sketch
from engine.sim.generate import generate
from engine.sim.style import style_beside
from engine.sim.styled import StyledRenderer
from engine.navigation.dismissal import action_key, inside


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


def _game8(tmp_path):
    folder = generate(8, tmp_path / "game8")
    graph = load_graph(folder).resolve()
    return graph, StyledRenderer(graph, style_beside(folder))


@pytest.mark.parametrize("closing", [{"type": "tap", "point": [540, 1413]}, {"type": "key", "key": "back"}],
                         ids=["its_ok", "the_back_key"])
def test_a_dialog_over_a_page_never_seen_without_it_placed_over_a_look_alike_makes_the_tap_a_link_to_its_page(
        tmp_path, closing):
    """Generated game 8 under chaos: page_enigma shows under its CONFIRM dialog on every arrival; never seen without
    it, its dimmed rest looks most like page_portal, and the dialog was placed over page_portal. Once the dialog
    closes onto page_enigma, the tap that opened it leads to page_enigma, not to page_portal (the draft's link to
    page_portal there took every goto to page_portal through page_enigma, whose frame page_portal's signature held:
    two false successes). Closed by the back key too (generated game 7 under chaos: a page under a dialog only the
    back key closes, placed over a look-alike; the tap stayed a link to the look-alike, the page was never reached
    again and the six pages behind it never found): the back key may leave a page too, so only a dialog whose dimmed
    rest is the page it closed onto (engine.explore.folding.closed_onto) moves the tap's link then."""
    graph, renderer = _game8(tmp_path)
    page = {name: renderer.page(name) for name in ("page_title", "page_portal", "page_warden", "page_enigma")}
    atlas = Atlas()
    atlas.absorb({"type": "screenshot"}, sketch(page["page_title"]), "title.png")
    portal = atlas.absorb({"type": "tap", "point": [10, 10]}, sketch(page["page_portal"]), "portal.png")
    warden = atlas.absorb({"type": "tap", "point": [20, 20]}, sketch(page["page_warden"]), "warden.png")
    dialog = renderer.with_popups(page["page_enigma"], [graph.popup("popup_6_ok")])
    shown = atlas.absorb({"type": "tap", "point": [540, 856]}, sketch(dialog), "dialog.png")
    assert shown.kind == "popup" and shown.page == portal.page  # at first sight: over the look-alike
    enigma = atlas.absorb(closing, sketch(page["page_enigma"]), "enigma.png")
    assert enigma.kind == "page" and enigma.page not in (portal.page, warden.page)
    assert atlas.outcome(warden.page, "tap:540,856") == ("page", enigma.page)
    assert ("page", portal.page) not in atlas.pages[warden.page].results["tap:540,856"]


def test_two_dialogs_drawn_on_one_panel_are_two_popups_and_one_s_failed_taps_leave_the_other_s_button_in(tmp_path):
    """Generated game 8 draws its dialogs on one panel: a cross dialog and a CONFIRM dialog, 0.86 of the box's cells
    alike. Taken for one popup, the grid taps that failed on the cross dialog where the CONFIRM sits left the CONFIRM
    out of the CONFIRM dialog's search (engine.navigation.dismissal.VISIBLE_FAILS): never closed, its page never
    seen (engine.explore.sketch.same_dialog)."""
    graph, renderer = _game8(tmp_path)
    warden = renderer.page("page_warden")
    cross = renderer.with_popups(warden, [graph.popup("popup_1_cross")])
    confirm = renderer.with_popups(warden, [graph.popup("popup_6_ok")])
    atlas = Atlas()
    atlas.absorb({"type": "screenshot"}, sketch(warden), "warden.png")
    first = atlas.absorb({"type": "tap", "point": [10, 10]}, sketch(cross), "cross.png")
    button = graph.button("POPUP_6_OK_OK").area
    spot = {"type": "tap", "point": [(button[0] + button[2]) // 2, (button[1] + button[3]) // 2]}
    for _ in range(2):  # the spot tried on the cross dialog, in vain
        atlas.absorb(spot, sketch(cross), "cross.png")
    atlas.absorb({"type": "tap", "point": [127, 891]}, sketch(warden), "warden2.png")
    second = atlas.absorb({"type": "tap", "point": [10, 10]}, sketch(confirm), "confirm.png")
    assert second.kind == "popup" and second.popup != first.popup
    popup, tries, taken = atlas.popups[second.popup], Counter(), []
    for _ in range(dismiss.SHOWING_TRIES + dismiss.CLOSER_TRIES + dismiss.DISMISS_TRIES):
        action = dismiss.next_try(atlas.popups, popup, tries, lambda: confirm)
        if action is None:
            break
        tries[action_key(action)] += 1
        taken.append(action)
    assert any(a["type"] == "tap" and inside(a, button) for a in taken)

