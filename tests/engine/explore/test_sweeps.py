"""Two rules found on the simulator's Azur Lane at 20 minutes (issue 45 point 6): a page whose content changed is
the page the same button led to before, when another piece of that button is pressed; and the hubs are swept with a
coarse grid before the low-rated rest once half the time is spent."""

from __future__ import annotations

from collections import Counter

import numpy as np
from conftest import GOOD

from engine.config.loader import load_graph
from engine.explore.atlas import Atlas, action_key
from engine.explore.recording import Recording
from engine.explore.routes import EARLY_SWEEP_AFTER, HUB_EXITS, early_sweep
from engine.explore.sketch import sketch
from engine.sim import SimGame

WHOLE = {"type": "tap", "point": [453, 281], "area": [408, 272, 498, 290]}
LEFT = {"type": "tap", "point": [417, 281], "area": [408, 272, 426, 290]}  # pieces its words cut it into
RIGHT = {"type": "tap", "point": [489, 281], "area": [480, 272, 498, 290]}
ELSEWHERE = {"type": "tap", "point": [900, 600], "area": [880, 580, 920, 620]}
BACK = {"type": "key", "key": "back"}


def frames(*pages: str) -> dict[str, np.ndarray]:
    game = SimGame(load_graph(GOOD).resolve(None))
    out = {}
    for page in pages:
        game.goto(page)
        out[page] = game.frame()
    return out


def changed(frame: np.ndarray) -> np.ndarray:
    """The page with a list's rows gone: a block of it drawn anew (more cells than a page may differ in for good,
    fewer than make another page)."""
    out = frame.copy()
    out[400:560, 320:720] = 255
    out[400:560:8, 320:720] = 0  # rows of text
    return out


def test_another_piece_of_a_button_leads_where_the_button_led_though_the_page_changed_since():
    """The reward page's commission button offered as the whole and its two pieces: one piece led to the commission
    page; after a job started there (its list changed) the other piece led to it again, and it was taken for a new
    page, then a third: three drafts of one page, each with forty actions to try (Azur Lane's run at 8180c65)."""
    shown = frames("page_shop", "page_main")
    atlas = Atlas()
    shop = atlas.absorb({"type": "screenshot"}, sketch(shown["page_shop"])).page
    atlas.pages[shop].actions = [WHOLE, LEFT, RIGHT, ELSEWHERE]
    main = atlas.absorb(LEFT, sketch(shown["page_main"])).page
    assert main != shop
    atlas.absorb(BACK, sketch(shown["page_shop"]))
    assert atlas.led_to(RIGHT).page == main and atlas.led_to(WHOLE).page == main  # one button
    assert atlas.led_to(ELSEWHERE).page is None
    now = atlas.absorb(RIGHT, sketch(changed(shown["page_main"])))
    assert (now.kind, now.page) == ("page", main) and len(atlas.pages) == 2

    # Without a piece of that button, the changed page is another page (the rule is the button's, not a looser match)
    other = Atlas()
    other.absorb({"type": "screenshot"}, sketch(shown["page_shop"]))
    other.pages[0].actions = [WHOLE, LEFT, RIGHT, ELSEWHERE]
    other.absorb(LEFT, sketch(shown["page_main"]))
    other.absorb(BACK, sketch(shown["page_shop"]))
    assert other.absorb(ELSEWHERE, sketch(changed(shown["page_main"]))).page not in (0, 1)


def _atlas_with_hub(exits: int) -> Atlas:
    """A hub page 0 whose taps led to `exits` pages, and those pages (each led back by the back key)."""
    shown = frames("page_main", "page_shop", "page_mail", "page_settings", "page_login")
    names = ["page_shop", "page_mail", "page_settings", "page_login"][:exits]
    atlas = Atlas()
    atlas.absorb({"type": "screenshot"}, sketch(shown["page_main"]))
    for i, name in enumerate(names):
        door = {"type": "tap", "point": [100 + 100 * i, 650], "area": [80 + 100 * i, 630, 120 + 100 * i, 670]}
        atlas.absorb(door, sketch(shown[name]))
        atlas.pages[atlas.here.page].actions = [BACK]
        atlas.absorb(BACK, sketch(shown["page_main"]))
    atlas.pages[0].actions = [dict(t) for t in atlas.pages[0].taken.values()]
    return atlas


def test_a_hub_is_swept_early_once_half_the_time_is_spent_and_its_sweep_is_finished_first():
    atlas = _atlas_with_hub(HUB_EXITS)
    assert len(atlas.exits(0)) == HUB_EXITS
    assert early_sweep(atlas, EARLY_SWEEP_AFTER - 0.01) is None
    assert early_sweep(atlas, EARLY_SWEEP_AFTER) == 0
    atlas.pages[0].swept = 1
    atlas.pages[0].actions.append({"type": "tap", "point": [40, 40], "grid": True})
    assert early_sweep(atlas, 0.9) is None  # swept: not again early
    assert early_sweep(atlas, 0.9, current=0) == 0  # but its grid is finished first
    atlas.pages[0].tried["tap:40,40"] = 1
    assert early_sweep(atlas, 0.9, current=0) is None
    assert early_sweep(_atlas_with_hub(HUB_EXITS - 1), 0.9) is None  # not a hub


def _explorer_on_hub(tmp_path):
    """(an Explorer whose atlas is _atlas_with_hub's, every back key tried twice off the hub, its fake clock): 100 s
    of budget, none spent yet."""
    from engine.explore.explorer import Budget, Explorer

    class Device:
        resolution = (1280, 720)

    now = [0.0]
    explorer = Explorer(Device(), tmp_path, restart=lambda: None, clock=lambda: now[0],
                        budget=Budget(seconds=100.0))
    explorer.recording = Recording(tmp_path)
    explorer.atlas = _atlas_with_hub(HUB_EXITS)
    for page in explorer.atlas.pages[1:]:
        page.tried[action_key(BACK)] = 2
    return explorer, now


def test_past_half_the_time_the_explorer_sweeps_a_hub_before_the_low_rated_rest(tmp_path):
    """On a hub with only low-rated actions left (swipes here), before half the time the explorer takes them; after
    it, a grid tap on the hub comes first. Without the rule, the grid waited until no page had work left, which on
    a game whose visible work fills the budget was never (four pages behind two hubs' grids, never found)."""
    explorer, now = _explorer_on_hub(tmp_path)
    hub = explorer.atlas.pages[0]
    swipe = {"type": "swipe", "start": [900, 360], "end": [380, 360]}
    hub.actions.append(swipe)
    explorer.priority.tried["swipe"], explorer.priority.changed["swipe"] = 10, 0  # swipes never changed the screen
    assert not explorer.priority.promising(0, swipe)
    assert explorer._choose() == swipe
    now[0] = 100.0 * EARLY_SWEEP_AFTER + 1
    chosen = explorer._choose()
    assert chosen.get("grid") and hub.swept == 1 and explorer.sweeping == 0, chosen
    assert hub.results.get(action_key(swipe), Counter()) == Counter()  # the swipe waits


def test_an_early_sweep_takes_the_hubs_taps_put_off_before_its_grid(tmp_path):
    """A grid leaves out the spots a visible tap covers, so a tap on the hub put off by the priority (it looked like
    one that did nothing elsewhere) was never taken: on Azur Lane's main page the only way to four pages."""
    explorer, now = _explorer_on_hub(tmp_path)
    now[0] = 100.0 * EARLY_SWEEP_AFTER + 1
    door = {"type": "tap", "point": [730, 691], "area": [650, 670, 810, 712], "kind": "gap/large/bottom-centre/still"}
    explorer.atlas.pages[0].actions.append(door)
    explorer.priority.off[0].add(action_key(door))
    assert explorer.priority.put_off(0, door)
    assert explorer._choose() == door


def test_when_the_game_drops_taps_a_hub_s_button_that_did_nothing_once_is_tried_again_before_its_grid(tmp_path):
    """Generated game 1 under chaos (one tap in ten dropped): the taps on two of a hub's buttons were dropped, and
    the hub's early sweep (26 grid taps) went before a second try of either: the pages behind them, and the seven
    behind those, were never found. Where the game is not seen dropping taps, the grid comes first as before."""
    door = {"type": "tap", "point": [730, 691], "area": [650, 670, 810, 712]}
    for drops in (False, True):
        explorer, now = _explorer_on_hub(tmp_path / str(drops))
        now[0] = 100.0 * EARLY_SWEEP_AFTER + 1
        hub = explorer.atlas.pages[0]
        hub.actions.append(door)
        hub.tried[action_key(door)], hub.results[action_key(door)] = 1, Counter({("same",): 1})
        if drops:  # two known links taken again stayed as they were
            explorer.atlas.link_retries, explorer.atlas.link_stays = 20, 2
        assert explorer.atlas.drops_taps() == drops
        chosen = explorer._choose()
        assert chosen == door if drops else chosen.get("grid"), chosen
