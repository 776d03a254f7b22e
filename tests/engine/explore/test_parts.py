"""The explorer's parts on their own: frame sketches and covers, tappable regions, titles and names, the recording
(a torn last line, resuming), candidate grids."""

from __future__ import annotations

import json
from collections import Counter

import cv2
import numpy as np
import pytest
from conftest import GOOD

from engine.config.loader import load_graph
from engine.explore.atlas import action_key
from engine.explore.drafting import slug, title_of
from engine.explore.recording import FILE, Recording
from engine.explore.regions import grid_actions, tappable
from engine.explore.sketch import cover, similarity, sketch
from engine.sim import SimGame


@pytest.fixture(scope="module")
def screens():
    game = SimGame(load_graph(GOOD).resolve(None))
    out = {}
    for page in ("page_main", "page_shop", "page_mail"):
        game.goto(page)
        out[page] = game.frame()
    game.goto("page_main")
    game.show_popup("popup_announcement")
    out["popup"] = game.frame()
    game.goto("page_main")
    game.show_popup("popup_reward")
    out["reward"] = game.frame()
    return out



def _options(explorer, popup):
    """The explorer's ways to close `popup`, visible ones and a grid (engine.explore.dismiss.options)."""
    from engine.explore import dismiss

    return dismiss.options(popup, explorer._popup_frame(popup), explorer._panels.box(popup, explorer.atlas.pages))

def drawn(*pages: str):
    """The demo game drawing `pages`, each alone and under its reward popup ("<page>+reward")."""
    game = SimGame(load_graph(GOOD).resolve(None))
    frames = {}
    for page in pages:
        game.goto(page)
        frames[page] = game.frame()
        game.show_popup("popup_reward")
        frames[page + "+reward"] = game.frame()
    return game, frames


def test_a_changed_counter_is_the_same_page_another_page_is_not(screens):
    main = screens["page_main"]
    counter = main.copy()
    counter[660:700, 1000:1240] = 255 - counter[660:700, 1000:1240]  # the gold counter redrawn
    assert similarity(sketch(main), sketch(counter)) >= 0.9
    assert similarity(sketch(main), sketch(screens["page_shop"])) < 0.5


def test_a_panel_over_a_dimmed_page_is_a_cover_of_it(screens):
    found = cover(sketch(screens["popup"]), sketch(screens["page_main"]))
    assert found is not None and found.gain < 0.6
    x1, y1, x2, y2 = found.box
    assert x1 <= 930 < x2 and y1 <= 170 < y2  # the close button's panel
    assert cover(sketch(screens["page_shop"]), sketch(screens["page_main"])) is None


def test_tappable_regions_cover_the_buttons_one_tap_each(screens):
    centres = [((a[0] + a[2]) // 2, (a[1] + a[3]) // 2) for a in tappable(screens["page_main"])]
    for x1, y1, x2, y2 in ((900, 300, 1060, 360), (900, 380, 1060, 440), (900, 460, 1060, 520)):  # shop, mail, ...
        assert sum(x1 <= x < x2 and y1 <= y < y2 for x, y in centres) >= 1
    back = [c for c in (((a[0] + a[2]) // 2, (a[1] + a[3]) // 2) for a in tappable(screens["page_shop"]))
            if 20 <= c[0] < 80 and 20 <= c[1] < 70]
    assert back  # the back arrow beside the title is a tap of its own


def test_a_title_is_the_tallest_confident_line_in_the_top_quarter():
    frame = np.zeros((720, 1280, 3), np.uint8)

    def reader(_frame):
        return [("Gold 1200", 0.99, (1000, 660, 1240, 700)), ("Shop", 0.95, (100, 20, 400, 70)),
                ("x", 0.99, (10, 10, 20, 20)), ("Daily Deals", 0.9, (100, 100, 300, 120)),
                ("Blurry", 0.3, (100, 10, 600, 90))]

    area, text = title_of(frame, reader)
    assert text == "Shop" and area[0] <= 100 and area[2] >= 400
    assert title_of(frame, None) is None
    assert slug("Shop — Daily!") == "shop_daily"


def test_the_recording_skips_a_torn_last_line_and_continues_numbering(tmp_path):
    frame = np.full((72, 128, 3), 90, np.uint8)
    recording = Recording(tmp_path)
    recording.add({"type": "screenshot"}, frame)
    recording.add({"type": "tap", "point": [5, 5]}, frame, transients=[frame])
    recording.close()
    with (tmp_path / FILE).open("a") as out:
        out.write('{"seq": 3, "action": {"type": "ta')  # killed mid-write
    again = Recording(tmp_path)
    assert [e["seq"] for e in again.entries] == [1, 2]
    assert again.read(again.entries[1]["transients"][0]) is not None
    assert again.read("../outside.png") is None
    entry = again.add({"type": "key", "key": "back"}, None, same_as=again.entries[0]["frame"])
    again.close()
    assert entry["seq"] == 3 and entry["frame"] == "frames/000001.png"
    lines = (tmp_path / FILE).read_text().splitlines()
    assert json.loads(lines[-1])["seq"] == 3


def test_grid_rounds_leave_out_what_was_tried_and_each_other():
    tried = [{"type": "tap", "point": [100, 100], "area": [0, 0, 200, 200]}]
    coarse = grid_actions((1280, 720), tried, 1)
    fine = grid_actions((1280, 720), tried + coarse, 2)
    points = {tuple(a["point"]) for a in coarse} | {tuple(a["point"]) for a in fine}
    assert len(points) == len(coarse) + len(fine)
    assert not any(x < 200 and y < 200 for x, y in points)
    assert len(coarse) < len(fine)


def test_a_page_seen_under_a_popup_first_is_folded_even_when_its_dismissal_had_other_effects(screens):
    """Under faults the tap that closed the popup went elsewhere on other tries (the demo's main page was drafted
    twice under chaos): one try that led to the page under it is enough, and that tap is the popup's dismissal."""
    from collections import Counter

    from engine.explore.atlas import Atlas, PageNode
    from engine.explore.drafting import covered_pages, fold_covered

    atlas = Atlas()
    login = PageNode(0, sketches=[sketch(screens["page_shop"])])
    under = PageNode(1, sketches=[sketch(screens["page_main"])])
    seen_first = PageNode(2, sketches=[sketch(screens["reward"])])
    ok, back = "tap:639,529", "key:back"
    seen_first.taken = {ok: {"type": "tap", "point": [639, 529]}, back: {"type": "key", "key": "back"}}
    seen_first.results = {ok: Counter({("page", 0): 1, ("page", 1): 1, ("same",): 1}), back: Counter({("same",): 2})}
    login.results = {"tap:1,1": Counter({("page", 2): 1})}
    atlas.pages, atlas.start = [login, under, seen_first], 0
    covered = covered_pages(atlas)
    assert list(covered) == [2] and covered[2][0] == 1
    fold_covered(atlas, covered)
    [popup] = atlas.popups
    assert popup.over == {1} and popup.dismiss == {"type": "tap", "point": [639, 529]}
    assert seen_first.loading and login.results["tap:1,1"] == Counter({("page", 1): 1})


def test_a_close_cross_alone_over_a_dimmed_page_is_a_cover_a_speck_on_the_page_is_not(screens):
    """A dialog that is only a close cross in a corner over the dimmed page changes one sketch cell: the dim says it
    is a popup. The same cross on the undimmed page is a speck (a dot, a counter), not a cover."""
    main = screens["page_main"]
    dimmed = (main * 0.4).astype(np.uint8)
    for frame in (dimmed, main.copy()):
        frame[1:79, 1201:1279] = (120, 200, 60)
        frame[20:60, 1220:1260] = 255
    found = cover(sketch(dimmed), sketch(main))
    assert found is not None and found.box == (1200, 0, 1280, 80) and found.gain < 0.6
    assert cover(sketch(frame), sketch(main)) is None


def test_a_page_seen_first_under_a_popup_is_folded_as_soon_as_a_tap_on_it_leads_to_the_page_under(screens):
    """Exploring, not drafting: the covered page stops being a page (its actions are not all tried), the tap that
    led to the page under is the popup's dismissal, what led to the covered page leads to the page under, and the
    next showing of the popup over it is a popup."""
    from engine.explore.atlas import Atlas

    atlas = Atlas()
    atlas.absorb({"type": "screenshot"}, sketch(screens["page_shop"]))
    opened, closed = {"type": "tap", "point": [60, 40]}, {"type": "tap", "point": [639, 529]}
    covered = atlas.absorb(opened, sketch(screens["reward"]))
    assert covered.kind == "page"  # page_main was not known yet
    under = atlas.absorb(closed, sketch(screens["page_main"]))
    assert under.kind == "page" and under.page != covered.page
    node = atlas.pages[covered.page]
    assert node.folded is not None and node not in atlas.live_pages()
    popup = atlas.popups[node.folded]
    assert popup.over == {under.page} and popup.dismiss == closed
    assert atlas.outcome(0, "tap:60,40") == ("page", under.page)
    again = atlas.absorb({"type": "tap", "point": [5, 5]}, sketch(screens["reward"]))
    assert (again.kind, again.page) == ("popup", under.page)


def test_a_popup_box_grid_tries_its_corners_then_goes_coarse_to_fine_from_low_on_the_right():
    """A dialog's close cross sits in a top corner, a back arrow top left, "continue" low on the right: the four
    corners a step in come first, then a grid coarse to fine; tried regions are left out."""
    from engine.explore.regions import box_grid

    box = (400, 200, 880, 520)
    tried = [{"type": "tap", "point": [840, 480], "area": [800, 440, 880, 520]}]
    points = [tuple(a["point"]) for a in box_grid(box, (1280, 720), tried)]
    assert all(400 < x < 880 and 200 < y < 520 for x, y in points)
    assert not any(800 <= x < 880 and 440 <= y < 520 for x, y in points)
    assert len(points) == len(set(points)) >= 40
    assert points[:3] == [(840, 240), (440, 240), (440, 480)]  # the bottom right one is a tried region's
    rest = points[3:]
    assert rest[0][1] == max(y for _, y in rest)
    coarse = rest[:5]  # the first level: four half cells apart, spread over the whole box
    assert min(abs(a[0] - b[0]) + abs(a[1] - b[1]) for i, a in enumerate(coarse) for b in coarse[i + 1:]) >= 160
    assert max(y for _, y in coarse) - min(y for _, y in coarse) >= 160


def test_a_tried_region_that_covers_the_box_is_its_panel_and_leaves_the_grid_whole():
    """A region covering most of a dialog's box (its panel, one blob on the whole frame) was tapped once at its
    centre and hid every grid point: the search of a small card closed by a spot nothing marks ended after its
    visible options. A button's region still leaves its points out (a tap anywhere on it does the same)."""
    from engine.observe.spots import box_grid

    box = (896, 560, 1056, 704)
    alone = [tuple(a["point"]) for a in box_grid(box, (1280, 720), [])]
    panel = [{"type": "tap", "point": [1003, 635], "area": [898, 560, 1108, 710]}]  # (its centre: one spot tried)
    assert [tuple(a["point"]) for a in box_grid(box, (1280, 720), panel)] == \
        [(x, y) for x, y in alone if not (abs(x - 1003) < 20 and abs(y - 635) < 20)]
    assert len(alone) >= 16
    button = [{"type": "tap", "point": [1019, 600], "area": [1000, 580, 1040, 620]}]
    kept = [tuple(a["point"]) for a in box_grid(box, (1280, 720), button)]
    assert kept and not any(1000 <= x < 1040 and 580 <= y < 620 for x, y in kept) and len(kept) < len(alone)


def test_a_grid_point_beside_a_spot_tried_already_is_left_out():
    """The guard's top corner of a large box and the grid's lie 10-14 px apart: a showing of ten tries spent one on
    each, and the corner that closed the dialog (bottom right) came eleventh."""
    from engine.observe.spots import box_grid

    box = (308, 62, 1280, 678)
    alone = [tuple(a["point"]) for a in box_grid(box, (1280, 720), [])]
    assert alone[0] == (1240, 102)
    tried = [{"type": "tap", "point": [1250, 92]}]
    points = [tuple(a["point"]) for a in box_grid(box, (1280, 720), tried)]
    assert (1240, 102) not in points and points[0] == (1240, 638)
    assert not any(abs(x - 1250) < 20 and abs(y - 92) < 20 for x, y in points)


def test_what_closed_one_popup_is_tried_first_on_another_whose_box_holds_it(screens):
    """Games reuse a dialog's layout ("tap to continue" at one spot): a tap that closed one popup comes before the
    back key and the regions on a new popup whose box holds its point; one outside the box does not."""
    from engine.explore.atlas import Here, PopupNode
    from engine.explore.explorer import Explorer

    class Frames:
        def read(self, rel):
            return screens["reward"]

    explorer = Explorer(device=None, folder="unused")
    explorer.recording = Frames()
    closed = {"type": "tap", "point": [1020, 660]}
    far = {"type": "tap", "point": [40, 40]}
    explorer.atlas.popups = [PopupNode(0, (480, 160, 1120, 720), dismiss=closed, closed=Counter([action_key(closed)])),
                             PopupNode(1, (0, 0, 80, 80), dismiss=far, closed=Counter([action_key(far)])),
                             PopupNode(2, (560, 240, 1200, 720), members=["frames/000001.png"])]
    assert explorer._dismiss(Here("popup", 0, 2)) == closed
    explorer._showing.tries[action_key(closed)] += 1
    assert explorer._dismiss(Here("popup", 0, 2)) == {"type": "key", "key": "back"}


def test_a_tap_that_led_to_a_page_under_a_popup_led_to_that_page():
    """Under chaos a popup shows on arrival at random: the tap that led to page X under it led to X (a link
    confirmed, X no transient page seen once), and a tap that opened a popup over its own page led nowhere."""
    from engine.explore.atlas import Atlas
    from engine.explore.drafting import transient_pages

    frames = {name: sketch(frame) for name, frame in drawn("page_shop", "page_main")[1].items()}
    atlas = Atlas()
    tap, back, other = ({"type": "tap", "point": [60, 40]}, {"type": "key", "key": "back"},
                        {"type": "tap", "point": [900, 600]})
    shop = atlas.absorb({"type": "screenshot"}, frames["page_shop"]).page
    main = atlas.absorb(tap, frames["page_main"]).page
    atlas.absorb(back, frames["page_shop"])
    assert atlas.absorb(tap, frames["page_main+reward"]).kind == "popup"
    assert atlas.pages[shop].results["tap:60,40"] == {("page", main): 2}
    assert main not in transient_pages(atlas)
    atlas.absorb({"type": "key", "key": "back"}, frames["page_main"])
    atlas.absorb(other, frames["page_main+reward"])  # a tap on the page that opened a popup over it
    assert atlas.outcome(main, "tap:900,600") == ("same",)


class _Still:
    """A device that shows `frame` until told otherwise and takes every tap."""

    resolution = (1280, 720)

    def __init__(self, frame) -> None:
        self.frame = frame

    def screenshot(self, **kw):
        return self.frame.copy()

    def tap(self, x, y):
        pass


def _explorer_on(frame, folder):
    """(an Explorer on a still device showing `frame`, its first look taken, the device, the fake clock's now)."""
    from engine.explore.explorer import Explorer

    now, device = [0.0], _Still(frame)
    explorer = Explorer(device, folder, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    explorer.recording = Recording(folder)
    explorer._do({"type": "screenshot"})
    return explorer, device, now


def test_a_try_on_a_popup_over_a_known_page_waits_as_long_as_on_a_known_page(tmp_path, screens):
    """A new screen is watched longer (a slow loading screen is no page); a popup over a known page is no new
    screen: a dismissal that changed nothing costs the short wait, not the long one (under chaos a third of the
    actions are such tries)."""
    from engine.explore.effects import QUIET_NEW

    explorer, device, now = _explorer_on(screens["page_main"], tmp_path)
    device.frame = screens["reward"]
    start = now[0]
    explorer._do({"type": "tap", "point": [10, 10]})
    assert explorer.atlas.here.kind == "popup" and now[0] - start < QUIET_NEW
    start = now[0]
    explorer._do({"type": "tap", "point": [20, 20]})
    assert explorer.atlas.here.kind == "popup" and now[0] - start < QUIET_NEW


def test_a_box_that_a_tap_opened_undimmed_over_the_page_waits_as_long_as_a_known_page(tmp_path, screens):
    """An undimmed box is a popup only over the page the action was taken on (engine.explore.atlas.classify's `on`);
    settling asked without it, so such a box was a new screen while settling and a popup once learnt: on Azur Lane
    125 of 1073 actions waited the new-screen time (1.6 s, not 0.5)."""
    from engine.explore.effects import QUIET_NEW

    explorer, device, now = _explorer_on(screens["page_main"], tmp_path)
    boxed = screens["page_main"].copy()
    boxed[240:400, 480:800] = (40, 200, 240)  # a box, the page around it as it was (not dimmed)
    device.frame = boxed
    start = now[0]
    explorer._do({"type": "tap", "point": [640, 320]})
    assert explorer.atlas.here.kind == "popup" and now[0] - start < QUIET_NEW


def test_each_showing_retries_what_is_visible_and_goes_on_with_the_grid_where_its_family_left_off(screens):
    """A visible option that failed on an earlier showing of a like popup is tried again (a dropped tap or a black
    frame may have hidden that it worked); a grid point that failed is not (the search goes on)."""
    from engine.explore.atlas import Here, PopupNode
    from engine.explore.dismiss import SHOWING_TRIES
    from engine.explore.explorer import Explorer

    class Frames:
        def read(self, rel):
            return screens["reward"]

    explorer = Explorer(device=None, folder="unused")
    explorer.recording = Frames()
    box = (480, 400, 800, 640)
    earlier, now = PopupNode(0, box, members=["f.png"]), PopupNode(1, box, members=["f.png"])
    explorer.atlas.popups = [earlier, now]
    visible, grid = _options(explorer, now)
    for action in [*visible, grid[0]]:
        earlier.tried[action_key(action)] += 1
    answers = []
    for _ in range(SHOWING_TRIES):
        action = explorer._dismiss(Here("popup", 0, 1))
        answers.append(action_key(action))
        explorer._showing.tries[answers[-1]] += 1
    assert answers[:len(visible)] == [action_key(a) for a in visible]
    assert action_key(grid[0]) not in answers and action_key(grid[1]) in answers


def test_closers_tried_first_do_not_starve_the_search_of_a_family_that_keeps_failing(screens):
    """Under chaos a "tap to continue" dialog shows again and again; when what closed other popups is tried first on
    each showing, those tries must not use up the showing: its own search still goes on, where the family left off,
    and finds the spot nothing marks within a bounded number of showings."""
    from engine.explore.atlas import PopupNode
    from engine.explore.dismiss import CLOSER_TRIES, FAILED_TRIES, next_try, options

    box = (480, 200, 1040, 700)
    closers = [PopupNode(i, (300 + 10 * i, 100, 1100, 720), dismiss={"type": "tap", "point": [600 + 40 * i, 300]},
                         closed=Counter([f"tap:{600 + 40 * i},300"])) for i in range(5)]
    failing = PopupNode(5, box, members=["f.png"], failures=3)
    popups = [*closers, failing]
    visible, grid = options(failing, screens["reward"])
    spot = grid[40]["point"]  # where the game takes a tap: found only by the grid
    showings, closed = 0, False
    while not closed and showings < 30:
        showings += 1
        tries: Counter = Counter()
        answers = []
        while (action := next_try(popups, failing, tries, lambda: screens["reward"])) is not None:
            answers.append(action)
            tries[action_key(action)] += 1
            failing.tried[action_key(action)] += 1
            if action.get("point") == spot:
                closed = True
                break
        assert sum(a in [c.dismiss for c in closers] for a in answers) == CLOSER_TRIES
        assert closed or len(answers) == CLOSER_TRIES + FAILED_TRIES
        failing.failures += 0 if closed else 1
    assert closed and showings <= (len(visible) + 41) // FAILED_TRIES + 2


def test_a_visible_option_that_failed_on_two_showings_of_a_family_is_left_out(screens):
    """A dropped tap hides one failure, seldom two: the back key and the regions that failed on two showings of like
    popups give way to the grid, so the search is not spent on them again."""
    from engine.explore.atlas import Here, PopupNode
    from engine.explore.explorer import Explorer

    class Frames:
        def read(self, rel):
            return screens["reward"]

    explorer = Explorer(device=None, folder="unused")
    explorer.recording = Frames()
    box = (480, 400, 800, 640)
    first, second, now = (PopupNode(i, box, members=["f.png"]) for i in range(3))
    explorer.atlas.popups = [first, second, now]
    visible, grid = _options(explorer, now)
    for earlier in (first, second):
        for option in visible:  # a region's tap lands a little apart on another showing: the same spot still
            x, y = option.get("point", (0, 0))
            moved = {**option, "point": [x + 1, y + 1]} if option["type"] == "tap" and option.get("area") else option
            earlier.tried[action_key(moved)] += 1
    action = explorer._dismiss(Here("popup", 0, 2))
    assert action == grid[0]
    first.tried.clear()
    assert explorer._dismiss(Here("popup", 0, 2)) == visible[0]


def test_what_failed_on_a_dialog_that_looks_otherwise_on_the_same_panel_is_still_tried(screens):
    """Dialogs drawn on one panel are told apart by what their boxes show (generated game 6: four on one panel): the
    spots that failed on another dialog there, however often, do not leave this one's visible options out (its close
    cross was left out after taps on the others at its spot, and most of its showings ended in a restart)."""
    from engine.explore.atlas import Here, PopupNode
    from engine.explore.explorer import Explorer

    frames = {"popup.png": screens["popup"], "reward.png": screens["reward"]}

    class Frames:
        def read(self, rel):
            return frames[rel]

    explorer = Explorer(device=None, folder="unused")
    explorer.recording = Frames()
    box = (480, 400, 800, 640)
    other = PopupNode(0, box, members=["reward.png"], sketches=[sketch(screens["reward"])])
    now = PopupNode(1, box, members=["popup.png"], sketches=[sketch(screens["popup"])])
    explorer.atlas.popups = [other, now]
    visible, _ = _options(explorer, now)
    for option in visible:
        other.tried[action_key(option)] += 3
    assert explorer._dismiss(Here("popup", 0, 1)) == visible[0]
    other.sketches = [sketch(screens["popup"])]  # one that looks like it: one family, its failures count
    assert explorer._dismiss(Here("popup", 0, 1)) != visible[0]


def test_a_dialog_the_atlas_takes_now_for_one_popup_now_for_another_is_given_up_after_a_bounded_streak(screens):
    """Generated game 12 under chaos: a dialog nothing closed, placed by the atlas over and over on one of two popups
    (what moved under it), began a new showing at each switch with its tries afresh, and the explorer tapped and
    pressed back on it 370 times. However the showings follow one another, the search gives up within STREAK_MAX
    actions on popups in a row (the explorer then restarts the game), and a page between starts the count again."""
    from engine.explore.atlas import Here, PopupNode
    from engine.explore.dismiss import STREAK_MAX, Showing

    box = (480, 400, 800, 640)
    popups = [PopupNode(i, box, members=["f.png"], dismiss={"type": "tap", "point": [700, 420]}) for i in range(2)]
    showing, taken, here = Showing(), 0, Here("page", 0)
    while taken <= STREAK_MAX + 1:
        now = Here("popup", 0, taken % 2)
        showing = showing.ended(popups, here, now)
        action = showing.next(popups, popups[now.popup], lambda: screens["reward"], lambda p: p.box)
        if action is None:
            break
        taken, here = taken + 1, now
    assert action is None and taken == STREAK_MAX
    assert Showing().ended(popups, Here("popup", 0, 1), Here("page", 0)).ended(
        popups, Here("page", 0), Here("popup", 0, 0)).next(popups, popups[0], lambda: None, lambda p: p.box) is not None


def test_two_dialogs_that_look_one_each_keep_the_button_that_closed_them():
    """Two dialogs may look the same and take different buttons ("Confirm" on one, "Cancel" on the other): every tap
    that closed the popup is kept and tried in turn after its first dismissal, and a tap that closed it is never
    counted as a failure that would leave it out of the search."""
    from engine.explore.atlas import Atlas, PopupNode
    from engine.explore.dismiss import DISMISS_TRIES, next_try, spot_failures

    confirm, cancel = {"type": "tap", "point": [768, 505]}, {"type": "tap", "point": [510, 503]}
    popup = PopupNode(0, (440, 460, 840, 540), over={0}, dismiss=confirm)
    atlas = Atlas()
    atlas.popups = [popup]
    popup.closed.update([action_key(confirm), action_key(cancel), action_key(cancel)])
    popup.tried.update([action_key(confirm), action_key(cancel), action_key(cancel), action_key(cancel)])
    tries: Counter = Counter()
    answers = []
    for _ in range(DISMISS_TRIES + 1):
        answers.append(next_try(atlas.popups, popup, tries, lambda: None))
        tries[action_key(answers[-1])] += 1
    assert answers == [confirm] * DISMISS_TRIES + [cancel]
    area = {"type": "tap", "point": [510, 503], "area": [480, 490, 540, 516]}
    assert spot_failures([popup], area) == 1


def test_a_new_screen_where_a_known_link_led_before_is_a_detour_left_with_the_back_key_first(screens):
    """A game may show a screen at random on the way (an event's splash, an unknown screen only the back key
    leaves): when an action that led to a known page before leads to a screen never seen, the back key is tried there
    first instead of after every region; a link's first outcome is an ordinary new page, its regions first."""
    from engine.explore.explorer import Explorer

    explorer = Explorer(device=None, folder="unused")
    atlas = explorer.atlas
    splash = np.full_like(screens["page_main"], 90)
    for i, colour in enumerate([(40, 200, 240), (220, 60, 60), (60, 220, 90), (250, 250, 250)]):
        splash[120 + 120 * i:180 + 120 * i, 200 + 180 * i:340 + 180 * i] = colour  # four buttons of a screen unseen
    tap, back = {"type": "tap", "point": [60, 40]}, {"type": "key", "key": "back"}

    def act(action, frame):
        return _step(explorer, action, frame)

    act({"type": "screenshot"}, screens["page_main"])
    shop = act(tap, screens["page_shop"])
    assert shop.actions[0]["type"] == "tap"
    act(back, screens["page_main"])
    detour = act(tap, splash)
    assert detour.id != shop.id and detour.actions[0] == back
    assert sum(a["type"] == "tap" for a in detour.actions) >= 4


def test_a_known_popup_over_a_page_never_seen_is_closed_first_with_what_closed_it():
    """Under chaos a popup shows on a third of arrivals, on pages not seen yet too, where no cover can tell it from a
    new page: a new screen whose box holds a known popup starts with the tap that closed that popup, not with every
    region of the popup taken for a page's."""
    from engine.explore.atlas import Atlas
    from engine.explore.explorer import Explorer

    game, frames = drawn("page_main", "page_shop")
    class Frames:
        def read(self, rel):
            return frames[rel]

    explorer = Explorer(device=None, folder="unused")
    explorer.recording = Frames()
    atlas: Atlas = explorer.atlas
    closer = {"type": "tap", "point": [1000, 650]}

    def act(action, name):
        came_by = explorer._came_by(action)
        atlas.absorb(action, sketch(frames[name]), name)
        explorer._prepare(frames[name], came_by)
        return atlas.here

    act({"type": "screenshot"}, "page_main")
    assert act({"type": "tap", "point": [60, 600]}, "page_main+reward").kind == "popup"
    act(closer, "page_main")
    here = act({"type": "tap", "point": [60, 40]}, "page_shop+reward")
    assert here.kind == "page"  # the page under it was never seen: no cover tells it
    assert atlas.pages[here.page].actions[0] == closer
    act(closer, "page_shop")
    game.goto("page_mail")  # a page never seen, no popup over it: its own regions first
    frames["page_mail"] = game.frame()
    assert atlas.pages[act({"type": "tap", "point": [60, 100]}, "page_mail").page].actions[0] != closer


def test_what_closed_a_popup_with_a_like_box_comes_before_what_closed_many_others():
    """A spot found on one "tap to continue" dialog is the likeliest on the next of its kind: a family's closers come
    before the closers of unrelated popups, however often those worked."""
    from engine.explore.atlas import PopupNode
    from engine.explore.dismiss import next_try

    box = (520, 200, 1080, 720)
    spot = {"type": "tap", "point": [1030, 660]}
    kin = PopupNode(0, (527, 190, 1071, 715), closed=Counter({action_key(spot): 1}))
    others = [PopupNode(i, (440, 460, 840, 540), closed=Counter({f"tap:{500 + 100 * i},500": 5 + i}))
              for i in range(1, 4)]
    new = PopupNode(4, box)
    assert next_try([kin, *others, new], new, Counter(), lambda: None) == spot


def test_a_page_seen_only_under_a_popup_is_folded_when_the_page_under_it_is_first_seen_by_another_way():
    """Under chaos a popup may cover a page on its first showing and no try closes it; when that page is reached
    later by another way, the screen seen first becomes a popup over it at once: the tap that led there leads to the
    page (a route to it), instead of to a page of its own nobody can get back to."""
    from engine.explore.atlas import Atlas

    frames = {name: sketch(frame) for name, frame in drawn("page_main", "page_shop")[1].items()}
    atlas = Atlas()
    tap, back = {"type": "tap", "point": [60, 600]}, {"type": "key", "key": "back"}
    main = atlas.absorb({"type": "screenshot"}, frames["page_main"]).page
    covered = atlas.absorb(tap, frames["page_shop+reward"]).page  # the page under it never seen: a page for now
    atlas.absorb(back, frames["page_main"])
    atlas.absorb({"type": "tap", "point": [60, 40]}, frames["page_shop"])  # another way to the page under it
    shop = atlas.here.page
    assert atlas.pages[covered].folded is not None and covered not in [p.id for p in atlas.live_pages()]
    assert atlas.outcome(main, action_key(tap)) == ("page", shop)


def test_a_dialog_over_two_pages_is_one_family_searched_over_its_own_panel():
    """A cover's box is whole sketch cells and takes in some of the page under it, so one dialog over two pages may
    get boxes too unlike to be one family; its own panel (where its frame differs from the dimmed page under it) is
    the same over any page: the search is over the panel, and what closed it over one page comes first over the
    other."""
    from engine.explore.atlas import PageNode, PopupNode
    from engine.explore.dismiss import Panels, next_try, options

    _, frames = drawn("page_main", "page_shop")
    pages = [PageNode(0, members=["page_main"]), PageNode(1, members=["page_shop"])]
    one = PopupNode(0, (400, 400, 880, 720), over={0}, members=["page_main+reward"])
    two = PopupNode(1, (160, 320, 960, 720), over={1}, members=["page_shop+reward"])
    panels = Panels(frames.get)
    rect = panels.box(one, pages)
    assert rect == panels.box(two, pages) and rect[2] - rect[0] < 400 and rect[3] - rect[1] < 200
    visible, grid = options(one, frames["page_main+reward"], rect)
    assert all(rect[0] <= a["point"][0] < rect[2] and rect[1] <= a["point"][1] < rect[3] for a in visible[1:-1] + grid)
    spot = {"type": "tap", "point": visible[1]["point"]}  # what closed it over the first page
    one.closed[action_key(spot)] += 1
    stranger = PopupNode(2, (0, 0, 1280, 720), closed=Counter({"tap:600,500": 5}))  # another dialog's, more often
    shown = lambda: frames["page_shop+reward"]  # noqa: E731
    assert next_try([one, two, stranger], two, Counter(), shown) == {"type": "tap", "point": [600, 500]}
    assert next_try([one, two, stranger], two, Counter(), shown, lambda p: panels.box(p, pages)) == spot


def test_a_tap_that_closed_a_popup_into_the_next_of_a_chain_closed_it(screens):
    """Under chaos three popups in ten are followed at once by another over the same page: the tap that closed the
    first is its dismissal though the page under it never showed in between."""
    from engine.explore.atlas import Atlas

    atlas = Atlas()
    closer = {"type": "tap", "point": [640, 520]}
    atlas.absorb({"type": "screenshot"}, sketch(screens["page_main"]))
    first = atlas.absorb({"type": "tap", "point": [60, 600]}, sketch(screens["reward"]))
    second = atlas.absorb(closer, sketch(screens["popup"]))
    assert (first.kind, second.kind) == ("popup", "popup") and first.popup != second.popup
    assert atlas.popups[first.popup].closed == Counter([action_key(closer)])
    assert atlas.popups[first.popup].dismiss == closer
    atlas.absorb({"type": "tap", "point": [5, 5]}, sketch(screens["popup"]))  # a tap that changed nothing
    assert not atlas.popups[second.popup].closed


def test_once_the_grid_is_spent_what_failed_on_a_lookalike_is_tried_again():
    """Two dialogs that look one ("Confirm" closes one, "Cancel" the other) share a family: "Cancel" failed on the
    first so often that it is left out, and the small dialog's grid is soon spent; then the visible options come back
    before a restart, or the second dialog could never be closed."""
    from engine.explore.atlas import PopupNode
    from engine.explore.dismiss import next_try, options

    h, w = 720, 1280
    frame = np.full((h, w, 3), 30, np.uint8)
    frame[470:540, 440:840] = (200, 200, 200)
    frame[490:515, 470:550] = (90, 90, 90)  # Cancel
    frame[490:515, 725:810] = (220, 120, 40)  # Confirm
    box = (440, 470, 840, 540)
    first, second = PopupNode(0, box, members=["f"]), PopupNode(1, box, members=["f"])
    visible, grid = options(first, frame)
    for action in visible + grid:
        first.tried[action_key(action)] += 2
    tries: Counter = Counter()
    answers = []
    while (action := next_try([first, second], second, tries, lambda: frame)) is not None and len(answers) < 20:
        answers.append(action)
        tries[action_key(action)] += 1
    assert [action_key(a) for a in answers] == [action_key(a) for a in visible][:len(answers)] and answers


def test_a_game_seen_dropping_taps_gets_a_second_try_of_what_did_nothing_once_on_a_hub():
    """Under chaos one tap in ten is dropped: a hub's button that did nothing on its one try hid a whole subtree.
    Once a known link is seen leaving the screen as it was, what did nothing once on a page with several ways out is
    tried again; a game that never dropped a tap is not. "The same" once and another page once is a link."""
    from engine.explore.explorer import Explorer

    _, frames = drawn("page_main", "page_shop", "page_mail", "page_settings")
    explorer = Explorer(device=None, folder="unused")
    atlas = explorer.atlas
    to_shop, to_mail, dud = ({"type": "tap", "point": [x, 40]} for x in (60, 160, 260))
    back = {"type": "key", "key": "back"}

    def act(action, page):
        atlas.absorb(action, sketch(frames[page]), "f.png")
        explorer._prepare(frames[page], None)
        return atlas.pages[atlas.here.page]

    main = act({"type": "screenshot"}, "page_main")
    for _ in range(2):
        act(to_shop, "page_shop"), act(back, "page_main"), act(to_mail, "page_mail"), act(back, "page_main")
    act(dud, "page_main")
    main.actions = [to_shop, to_mail, dud, back]
    act(back, "page_main")  # the back key on the hub does nothing
    assert not atlas.drops_taps() and explorer._work(main) is None

    act(to_shop, "page_main"), act(to_shop, "page_main")  # a link leaves the screen as it was, twice: dropped taps
    assert atlas.drops_taps() and atlas.outcome(main.id, action_key(to_shop))[0] == "page"
    assert explorer._work(main) == dud
    settings = act(dud, "page_settings")
    assert atlas.outcome(main.id, action_key(dud)) == ("page", settings.id)
    assert any(src == main.id and dst == settings.id for src, _, dst, _, _ in atlas.links())


def test_a_tap_whose_outcomes_never_repeat_is_tried_again_until_one_does():
    """Under chaos the page a button leads to may show under a popup, a crash may show the title screen instead:
    each try is a page of its own. The button on the hub led three ways in three tries and is tried a fourth time
    (the clean page behind it held a whole subtree); one that led to the same page twice is not tried again."""
    from engine.explore.explorer import CONFIRM_TRIES, Explorer

    _, frames = drawn("page_main", "page_shop", "page_mail", "page_settings")
    explorer = Explorer(device=None, folder="unused")
    atlas = explorer.atlas
    unclear, clear, back = {"type": "tap", "point": [60, 40]}, {"type": "tap", "point": [160, 40]}, \
        {"type": "key", "key": "back"}

    def act(action, page):
        atlas.absorb(action, sketch(frames[page]), "f.png")
        explorer._prepare(frames[page], None)
        return atlas.pages[atlas.here.page]

    main = act({"type": "screenshot"}, "page_main")
    main.actions = [unclear, clear, back]
    act(back, "page_main")  # the back key does nothing on the hub
    act(clear, "page_mail"), act(back, "page_main"), act(clear, "page_mail"), act(back, "page_main")
    for page in ("page_shop+reward", "page_mail+reward", "page_settings")[:CONFIRM_TRIES - 1]:
        assert explorer._work(main) == unclear
        act(unclear, page), act(back, "page_main")
    assert explorer._work(main) == unclear and main.tried[action_key(unclear)] == CONFIRM_TRIES - 1
    act(unclear, "page_shop"), act(back, "page_main")
    assert explorer._work(main) is None and main.tried[action_key(clear)] == 2


def test_a_button_that_led_to_a_page_once_and_did_nothing_twice_is_tried_until_it_leads_there_again():
    """Dropped taps again: a hub's button led to its page once, then two taps were dropped. It is tried a fourth
    time, and once it led there twice, leading there is what it does (a tie with doing nothing goes to the page)."""
    from engine.explore.explorer import Explorer

    _, frames = drawn("page_main", "page_shop")
    explorer = Explorer(device=None, folder="unused")
    atlas = explorer.atlas
    button, back = {"type": "tap", "point": [60, 40]}, {"type": "key", "key": "back"}

    def act(action, page):
        atlas.absorb(action, sketch(frames[page]), "f.png")
        explorer._prepare(frames[page], None)
        return atlas.pages[atlas.here.page]

    main = act({"type": "screenshot"}, "page_main")
    main.actions = [button, back]
    act(back, "page_main")
    shop = act(button, "page_shop")
    act(back, "page_main"), act(button, "page_main"), act(button, "page_main")
    assert atlas.outcome(main.id, action_key(button)) == ("same",) and explorer._work(main) == button
    act(button, "page_shop")
    assert atlas.outcome(main.id, action_key(button)) == ("page", shop.id)


def test_known_links_that_stay_three_times_in_a_row_are_a_frozen_game_restarted_and_not_held_against_them():
    """An idle screen that only a small spot wakes (ALAS's IDLE, 9 x 16 px in a corner) looks like the page it
    dims: every tap is swallowed. Known links that leave the screen as it was three times in a row, nothing changing
    in between, mean the game stopped taking input: those tries are taken back and the game is restarted. Two such
    stays with a change between are dropped taps, and count."""
    from engine.explore.atlas import FROZEN_AFTER
    from engine.explore.explorer import Explorer

    _, frames = drawn("page_main", "page_shop", "page_mail")
    explorer = Explorer(device=None, folder="unused", restart=lambda: None)
    atlas = explorer.atlas
    to_shop, to_mail, back = {"type": "tap", "point": [60, 40]}, {"type": "tap", "point": [160, 40]}, \
        {"type": "key", "key": "back"}

    def act(action, page):
        atlas.absorb(action, sketch(frames[page]), "f.png")
        return atlas.pages[atlas.here.page]

    main = act({"type": "screenshot"}, "page_main")
    for _ in range(2):
        act(to_shop, "page_shop"), act(back, "page_main"), act(to_mail, "page_mail"), act(back, "page_main")
    act(to_shop, "page_main"), act(to_mail, "page_main+reward"), act(back, "page_main")  # a change between
    assert not atlas.frozen and main.results[action_key(to_shop)][("same",)] == 1
    tried = main.tried.copy()
    for action in [to_shop, to_mail, to_shop][:FROZEN_AFTER]:
        act(action, "page_main")
    assert atlas.frozen and explorer._choose() == {"type": "restart"}
    assert main.tried == tried and main.results[action_key(to_mail)] == Counter({("page", 2): 2, ("same",): 1})
    act({"type": "restart"}, "page_main")
    assert not atlas.frozen


def test_an_action_that_changes_nothing_is_not_repeated_more_than_the_limit_in_a_row(tmp_path, screens):
    """Issue 45, point 3: whatever keeps picking one action (here a chooser stuck on one spot, as the frozen-game
    rule could be on a game it cannot restart), a spot that changes nothing is taken at most REPEAT_LIMIT times in a
    row on that screen, then the back key, then a restart; a screen that swallows them all stops the run, and the
    review names it."""
    from engine.explore.drafting import Drafter
    from engine.explore.draft import Made
    from engine.explore.explorer import Budget, Explorer
    from engine.explore.repeats import REPEAT_LIMIT

    class Still:
        resolution = (1280, 720)
        serial = "still"

        def __init__(self):
            self.done = []

        def screenshot(self, **kw):
            return screens["page_main"].copy()

        def tap(self, x, y):
            self.done.append(f"tap:{x},{y}")

        def key(self, name):
            self.done.append(f"key:{name}")

    now = [0.0]
    device = Still()
    restarts = []
    explorer = Explorer(device, tmp_path, budget=Budget(taps=200, seconds=3600), restart=lambda: restarts.append(1),
                        clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    explorer._choose = lambda: {"type": "tap", "point": [1200, 40]}  # the stuck chooser
    explorer.run()
    taps = [d for d in device.done if d == "tap:1200,40"]
    assert len(taps) == REPEAT_LIMIT and device.done[REPEAT_LIMIT:] == ["key:back"] * REPEAT_LIMIT, device.done
    assert len(restarts) == REPEAT_LIMIT and explorer.repeats.longest == REPEAT_LIMIT
    assert "swallows every action" in explorer.stopped_because and explorer.taps < 20
    draft = Drafter(explorer.atlas, tmp_path, resolution=(1280, 720), game="g", server="en").build(Made())
    swallowed = [r for r in draft.review if r.kind == "swallows_input"]
    assert swallowed and "tap:1200,40" in swallowed[0].note and "restart" in swallowed[0].note


def test_the_app_in_front_is_read_as_adbutils_reads_it():
    from engine.device.apps import parse_foreground

    assert parse_foreground("  mCurrentFocus=Window{41b37570 u0 com.example.game/com.example.game.Main}\n") == \
        ("com.example.game", "com.example.game.Main")
    assert parse_foreground("  mFocusedApp=AppWindowToken{422df168 token=Token{422def98 ActivityRecord{422dee38 u0 "
                            "com.example/.UI.play.PlayActivity t14}}}") == ("com.example",
                                                                           "com.example.UI.play.PlayActivity")
    assert parse_foreground("  mCurrentFocus=Window{7f3a u0 com.android.launcher3/com.android.launcher3.Launcher}") \
        is None
    assert parse_foreground("mCurrentFocus=null") is None


def test_a_page_reached_by_a_swipe_tries_the_swipes_first(screens):
    """Tabs switched by swiping (a generated game's, a carousel's cards): the page a swipe led to has its neighbours
    a swipe away, so its swipes come before its regions; a page reached by a tap keeps its regions first."""
    from engine.explore.explorer import Explorer

    explorer = Explorer(device=None, folder="unused")
    atlas = explorer.atlas
    swipe = {"type": "swipe", "start": [896, 360], "end": [384, 360]}

    def act(action, frame):
        return _step(explorer, action, frame)

    act({"type": "screenshot"}, screens["page_main"])
    shop = act(swipe, screens["page_shop"])
    assert [a["type"] for a in shop.actions[:4]] == ["swipe"] * 4 and shop.actions[4]["type"] != "swipe"
    mail = act({"type": "tap", "point": [60, 40]}, screens["page_mail"])
    assert mail.actions[0]["type"] == "tap"


def _step(explorer, action, frame):
    """What the explorer's _do does after acting, without a device: where `action` led on `frame`, and the page's
    first order of actions (the page it stands on after)."""
    came_by = explorer._came_by(action)
    explorer.atlas.absorb(action, sketch(frame), "f.png")
    explorer._prepare(frame, came_by)
    return explorer.atlas.pages[explorer.atlas.here.page]


def test_on_a_dead_end_with_pages_left_to_sweep_elsewhere_the_explorer_restarts_instead_of_stopping(tmp_path, screens):
    """Azur Lane stopped at 15.6 of its 20 minutes, "every page's actions were tried", standing on a dead end while
    the hub was still to be swept with a grid of taps (four pages only a grid finds, never found): from a dead end
    no page is in reach, and that was taken for no page left. A restart brings them in reach."""
    from engine.explore.explorer import Explorer

    class Device:
        resolution = (1280, 720)

    explorer = Explorer(Device(), tmp_path, restart=lambda: None)
    explorer.recording = Recording(tmp_path)
    hub = _step(explorer, {"type": "screenshot"}, screens["page_main"])
    door = {"type": "tap", "point": [60, 40]}
    end = _step(explorer, door, screens["page_shop"])
    for page in (hub, end):  # every visible action tried; the hub's door twice, to the dead end
        for action in page.actions:
            page.tried[action_key(action)] = max(1, page.tried[action_key(action)])
            page.results.setdefault(action_key(action), Counter({("same",): 1}))
    hub.tried[action_key(door)], hub.results[action_key(door)] = 2, Counter({("page", end.id): 2})
    assert explorer.atlas.here.page == end.id and not explorer.atlas.leaves(end.id)
    assert explorer._choose() == {"type": "restart"} and not explorer.stopped_because


def _dialog_over(page: np.ndarray, title: str, panel=(44, 40, 64), cross: bool = True) -> np.ndarray:
    """`page` dimmed under a dialog's panel (an outlined box in the middle) with a title and, `cross`, a small cross
    in its bottom right corner (generated game 7's look)."""
    frame = (page * 0.35).astype(np.uint8)
    cv2.rectangle(frame, (248, 184), (1032, 536), panel, -1)
    cv2.rectangle(frame, (248, 184), (1032, 536), (220, 150, 230), 2)
    cv2.putText(frame, title, (560, 240), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (235, 240, 240), 2)
    if cross:
        cv2.line(frame, (984, 488), (1020, 524), (250, 250, 250), 4)
        cv2.line(frame, (1020, 488), (984, 524), (250, 250, 250), 4)
    return frame


def _plain_page() -> np.ndarray:
    page = np.full((720, 1280, 3), 24, np.uint8)
    for i, colour in enumerate([(120, 40, 30), (40, 120, 60), (30, 60, 140)]):
        page[100 + 150 * i:160 + 150 * i, 80:320] = colour  # three buttons on the left
    cv2.putText(page, "FIELD", (900, 60), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (200, 200, 200), 2)
    return page


def test_a_try_that_redraws_a_dialog_on_its_own_panel_is_a_chain_and_the_back_key_comes_again():
    """Generated game 7 under chaos: a cross closes a dialog and the next of its chain, which only the back key closes,
    comes on a panel of nearly the same colour with another title; the atlas takes both for one popup. Before, the
    cross counted as failed (left out of every later showing) and the back key, tried once on the first dialog, never
    again: every showing after was spent and the game restarted. Now, as the navigator's search does: a try after
    which the box looks otherwise (the quiet chain) brings the back key once more and is credited when the showing
    closes; a try after which the box is another panel closed it, and the tries start afresh; a try that changed
    nothing is neither."""
    from engine.explore.atlas import Here, PopupNode
    from engine.explore.dismiss import Showing

    page = _plain_page()
    first, second = _dialog_over(page, "CELLAR"), _dialog_over(page, "OBSIDIAN", cross=False)
    box = (248, 184, 1033, 537)
    back, cross, dud = {"type": "key", "key": "back"}, {"type": "tap", "point": [1002, 506]}, \
        {"type": "tap", "point": [400, 400]}
    popup = PopupNode(0, box, over={0})
    showing = Showing()
    showing.stayed(popup, back, first, first, box)  # the back key does nothing on the first
    showing.stayed(popup, dud, first, first, box)  # nor a tap on nothing
    assert showing.next([popup], popup, lambda: first, lambda p: p.box) != back and not showing.changed
    showing.stayed(popup, cross, first, second, box)  # the cross: the next dialog, another title on the same panel
    assert showing.next([popup], popup, lambda: second, lambda p: p.box) == back
    showing.ended([popup], Here("popup", 0, 0), Here("page", 0))  # the back key showed the page under it
    assert popup.closed == Counter({action_key(cross): 1})

    other = _dialog_over(page, "OBSIDIAN", panel=(150, 110, 40), cross=False)  # another panel in its place
    popup, showing = PopupNode(1, box, over={0}), Showing()
    showing.stayed(popup, back, first, first, box)
    showing.stayed(popup, cross, first, other, box)
    assert popup.closed == Counter({action_key(cross): 1}) and popup.dismiss == cross
    assert showing.next([popup], popup, lambda: other, lambda p: p.box) == cross  # afresh: its dismissal, then back
    assert sum(showing.tries.values()) == 0


def test_a_new_page_that_shows_a_dialogs_panel_tries_the_taps_inside_it_and_the_back_key_first():
    """Under chaos a dialog shows over a page on its first arrival, where no cover tells it from a new page: generated
    game 7 tapped one's page-wide regions 22 times before its small cross, another 27 times before the back key that
    alone closes it. A new page whose frame shows a dialog's panel (engine.observe.spots.panel_box) tries the taps the
    dismissal search would inside it first, then the back key; a page with no panel keeps its own order."""
    from engine.explore.explorer import Explorer

    page = _plain_page()
    explorer = Explorer(device=None, folder="unused")
    _step(explorer, {"type": "screenshot"}, _plain_page()[:, ::-1].copy())  # somewhere else first
    covered = _step(explorer, {"type": "tap", "point": [60, 40]}, _dialog_over(page, "CELLAR"))
    box = (248, 184, 1033, 537)
    first = covered.actions[:[a.get("key") for a in covered.actions].index("back") + 1]
    assert first[-1] == {"type": "key", "key": "back"} and len(first) <= 7
    assert all(box[0] <= a["point"][0] < box[2] and box[1] <= a["point"][1] < box[3] for a in first[:-1])
    assert any(980 <= a["point"][0] <= 1024 and 484 <= a["point"][1] <= 528 for a in first[:-1])  # the cross

    explorer = Explorer(device=None, folder="unused")
    _step(explorer, {"type": "screenshot"}, _plain_page()[:, ::-1].copy())
    plain = _step(explorer, {"type": "tap", "point": [60, 40]}, page)
    assert [a.get("key") for a in plain.actions].index("back") > 3


def test_the_retry_of_a_dialogs_own_dismissal_leaves_the_other_closers_their_tries():
    """Generated game 7 under chaos draws three dialogs on one panel (closed by the back key, by a cross on the left,
    by one on the right) and the atlas takes them for one popup whose dismissal is the back key. The back key's
    second try (against a dropped tap) once counted among the closers' three: the right cross, the least often seen,
    was never reached and half the showings ended in a restart. Each closer is tried once besides the dismissal's
    own tries."""
    from engine.explore.atlas import PopupNode
    from engine.explore.dismiss import CLOSER_TRIES, DISMISS_TRIES, OWN_CLOSERS, next_try

    back, left, right = {"type": "key", "key": "back"}, {"type": "tap", "point": [277, 507]}, \
        {"type": "tap", "point": [1003, 507]}
    popup = PopupNode(0, (240, 160, 1040, 560), dismiss=back,
                      closed=Counter({action_key(back): 6, action_key(left): 4, action_key(right): 1}))
    tries: Counter = Counter()
    answers = []
    while (action := next_try([popup], popup, tries, lambda: None)) is not None and len(answers) < 10:
        answers.append(action)
        tries[action_key(action)] += 1
    assert answers == [back] * DISMISS_TRIES + [left, right] and CLOSER_TRIES >= 2

    # Generated game 6: four crosses and an OK on one panel, one popup to the atlas; every one of its own closers
    # gets its try (up to OWN_CLOSERS), the least seen too, before the blind search; another popup's only one.
    spots = [{"type": "tap", "point": [85 + 100 * i, 827]} for i in range(OWN_CLOSERS)]
    popup = PopupNode(0, (40, 410, 680, 870), closed=Counter({action_key(a): 9 - i for i, a in enumerate(spots)}))
    stranger = PopupNode(1, (40, 410, 680, 870), closed=Counter({"tap:600,600": 20}))
    tries, answers = Counter(), []
    while (action := next_try([popup, stranger], popup, tries, lambda: None)) is not None and len(answers) < 12:
        answers.append(action)
        tries[action_key(action)] += 1
    assert answers[:len(spots)] == spots and {"type": "tap", "point": [600, 600]} not in answers
    assert OWN_CLOSERS > CLOSER_TRIES


def test_a_new_screen_that_swallows_its_first_taps_is_left_by_the_back_key_next():
    """Under chaos one hop in twenty shows a screen only the back key leaves (an event's splash, a screen the graph
    never drew): generated game 4 tapped each one's regions 4 to 12 times before its back key, 63 of 451 actions.
    After SWALLOWED taps that each left such a screen as it was, the back key comes next; a screen where a tap did
    something keeps its order, and the start page never gets it early (the back key may leave the game there)."""
    from engine.explore.explorer import Explorer
    from engine.explore.repeats import SWALLOWED

    back = {"type": "key", "key": "back"}
    splash = np.full((720, 1280, 3), 90, np.uint8)
    for i in range(12):  # a dozen blocks, none a button
        x, y = 80 + 95 * i, 120 + 40 * (i % 5)
        splash[y:y + 60, x:x + 70] = (30 + 17 * i, 200 - 11 * i, 60 + 13 * i)

    def swallowing(taps: int, start_is_splash: bool = False):
        explorer = Explorer(device=None, folder="unused")
        if not start_is_splash:
            _step(explorer, {"type": "screenshot"}, _plain_page())
            page = _step(explorer, {"type": "tap", "point": [200, 130]}, splash)
        else:
            page = _step(explorer, {"type": "screenshot"}, splash)
        for _ in range(taps):
            action = explorer._work(page)
            assert action != back
            page = _step(explorer, action, splash)
        return explorer, page

    explorer, page = swallowing(SWALLOWED - 1)
    assert explorer._work(page) != back
    explorer, page = swallowing(SWALLOWED)
    assert explorer._work(page) == back
    explorer, page = swallowing(SWALLOWED, start_is_splash=True)
    assert explorer._work(page) != back


def test_a_first_visit_that_swallows_the_back_key_too_retries_its_first_tap_once():
    """Generated game 6 under chaos: a cross dialog over a page first reached; the cross tap (the first, the
    dialog's own: panel_first) was dropped, the back key swallowed too, and the explorer tapped every region of the
    page under the dialog, 36 more actions, before a restart. Now the first tap comes again once (a dropped tap),
    then the page's other actions; never on a later visit (its first taps are known to do nothing there)."""
    from engine.explore.atlas import action_key
    from engine.explore.explorer import Explorer
    from engine.explore.repeats import SWALLOWED, swallowing_back

    splash = np.full((720, 1280, 3), 90, np.uint8)
    for i in range(12):
        x, y = 80 + 95 * i, 120 + 40 * (i % 5)
        splash[y:y + 60, x:x + 70] = (30 + 17 * i, 200 - 11 * i, 60 + 13 * i)
    explorer = Explorer(device=None, folder="unused", restart=lambda: None)
    _step(explorer, {"type": "screenshot"}, _plain_page())
    page = _step(explorer, {"type": "tap", "point": [200, 130]}, splash)
    taken = []
    for _ in range(SWALLOWED + 3):
        action = explorer._work(page)
        taken.append(action)
        page = _step(explorer, action, splash)
    assert taken[SWALLOWED] == {"type": "key", "key": "back"}
    assert action_key(taken[SWALLOWED + 1]) == action_key(taken[0])  # the first tap, again
    assert action_key(taken[SWALLOWED + 2]) not in {action_key(a) for a in taken[:SWALLOWED + 2]}  # then the rest
    page.tried[action_key(taken[0])] = 1
    page.visits = 2
    assert swallowing_back(page, explorer.atlas.start) is None
