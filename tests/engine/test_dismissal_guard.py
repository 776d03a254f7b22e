"""The dismissal search's order and its never-buy guard on synthetic frames (engine.navigation.dismissal,
engine.observe.guard, engine.config.words): what a button says decides, read by a stand-in reader (the OCR itself is
exercised end to end in tests/engine/test_dismissal_search.py), and the studio marks a proposal found by the search.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import pytest

from engine.config.words import CLOSING, SPENDING, says, spending
from engine.navigation.dismissal import Dialog, action_key, inside, next_try, options
from engine.observe.guard import Guard, corner_closer
from tests.engine import buy_dialog

ROOT = Path(__file__).resolve().parents[2]
BOX = (380, 200, 900, 520)
"""buy_dialog's panel on the screen."""


def frame() -> np.ndarray:
    rng = np.random.default_rng(3)
    screen = (rng.random((720, 1280, 3)) * 60 + 40).astype(np.uint8)
    h, w = buy_dialog.SIZE[1], buy_dialog.SIZE[0]
    screen[200:200 + h, 380:380 + w] = buy_dialog.panel()
    return screen


def reader(texts: dict[tuple[int, int, int, int], str]):
    """Reads the text drawn at an area (by where its centre is), as OCR would."""

    def read(frame, area):
        cx, cy = (area[0] + area[2]) // 2, (area[1] + area[3]) // 2
        for (x1, y1, x2, y2), text in texts.items():
            if x1 <= cx < x2 and y1 <= cy < y2:
                return text
        return ""

    return read


BUY = buy_dialog.on_screen(buy_dialog.BUY)
CROSS = buy_dialog.on_screen(buy_dialog.CROSS)


@pytest.mark.parametrize("text, spends", [
    ("BUY", True), ("Buy now", True), ("Top up", True), ("Use item", True), ("立即购买", True),
    ("購入する", True),
    ("구매", True), ("兌換", True), ("Pause", False), ("Close", False), ("Museum", False), ("later", False)])
def test_spending_words_match_whole_latin_words_and_any_cjk(text, spends):
    assert says(text, SPENDING) is spends


def test_a_graph_extends_the_spending_words_and_closing_words_are_their_own():
    assert says("Summon x10", spending(["summon"])) and not says("Summon x10", SPENDING)
    assert all(says(w, CLOSING) for w in ("Close", "CANCEL", "Later", "Skip", "关闭", "キャンセル", "닫기"))


def test_no_try_ever_lands_on_a_button_that_says_buy_and_closers_come_before_the_tap_outside_and_the_rest():
    shown = frame()
    guard = Guard(read=reader({BUY: "BUY", CROSS: "x"}))
    visible, grid = options(Dialog(0, BOX), shown, BOX, guard=guard)
    taps = [a for a in visible + grid if a["type"] == "tap"]
    assert taps and not [a for a in taps if inside(a, BUY)]
    order = [action_key(a) for a in visible]
    outside = next(i for i, a in enumerate(visible) if a["type"] == "tap" and not inside(a, BOX))
    corners = [i for i, a in enumerate(visible) if a["type"] == "tap" and inside(a, CROSS)]
    assert order[0] == "key:back" and corners and max(corners) < outside  # the faint cross before the tap outside
    assert all(inside(a, BOX) for a in visible[outside + 1:])  # the other regions only after it

    dialog, tries = Dialog(0, BOX), Counter()
    for _ in range(40):  # the whole search, spent: never BUY
        action = next_try([dialog], dialog, tries, lambda: shown, guard=guard)
        if action is None:
            break
        assert not inside(action, BUY) or action["type"] == "key", action
        tries[action_key(action)] += 1
        dialog.tried[action_key(action)] += 1


def test_what_closed_another_dialog_is_not_tried_where_this_one_says_buy():
    shown = frame()
    guard = Guard(read=reader({BUY: "BUY"}))
    other = Dialog(1, BOX, closed=Counter({f"tap:{(BUY[0] + BUY[2]) // 2},{(BUY[1] + BUY[3]) // 2}": 3}))
    dialog = Dialog(0, BOX)
    action = next_try([other, dialog], dialog, Counter({"key:back": 1}), lambda: shown, guard=guard)
    assert action is not None and not inside(action, BUY)


def test_without_a_reader_the_most_prominent_button_is_left_alone():
    shown = frame()
    guard = Guard(read=None)
    visible, grid = options(Dialog(0, BOX), shown, BOX, guard=guard)
    assert not [a for a in visible + grid if a["type"] == "tap" and inside(a, BUY)]


def test_a_button_the_graph_knows_as_spending_is_left_alone_whatever_it_reads():
    shown = frame()
    guard = Guard(read=reader({}), known=lambda f: [BUY])
    visible, grid = options(Dialog(0, BOX), shown, BOX, guard=guard)
    assert not [a for a in visible + grid if a["type"] == "tap" and inside(a, BUY)]


def test_a_notices_ok_comes_before_its_other_regions_but_not_on_a_dialog_that_spends():
    """A notice closed only by its OK or Confirm, low in its panel, below a title and art (generated game 6: the
    search tapped the title's letters and the art first and the goto's 30 s ran out before CONFIRM). An OK is
    tried before the other regions, unless the dialog says it spends: then it may be what commits, and keeps its
    place after the others."""
    shown = frame()
    title, art, ok = (420, 220, 640, 260), (420, 300, 700, 380), (560, 440, 720, 490)
    guard = Guard(read=reader({title: "Notice", art: "", ok: "CONFIRM"}))
    judged = guard.judge(shown, BOX, [title, art, ok])
    assert judged.others[0] == ok and not judged.forbidden
    guard = Guard(read=reader({title: "Spend 100 gems?", art: "", ok: "CONFIRM"}))
    judged = guard.judge(shown, BOX, [title, art, ok])
    assert judged.forbidden and judged.others == [art, ok]


def test_a_small_square_in_a_top_corner_is_a_closer_and_a_wide_button_is_not():
    assert corner_closer((860, 210, 890, 240), BOX) and corner_closer((385, 205, 415, 235), BOX)
    assert not corner_closer(BUY, BOX) and not corner_closer((620, 300, 650, 330), BOX)


def test_the_corners_of_a_dialog_as_tall_as_the_screen_are_tried_where_a_screen_sized_back_arrow_sits():
    """A panel from the top of the screen down (as Azur Lane's fleet preparation) has its back arrow a few dozen
    pixels in, as on any screen: a twelfth of the panel's height in (48 px here) taps below it; at most a 24th of the
    screen's shorter side (30 px) taps on it."""
    shown = frame()
    box = (206, 0, 1122, 580)
    arrow = (234, 12, 278, 47)
    visible, _ = options(Dialog(0, box), shown, box, guard=Guard(read=None))
    corners = [a for a in visible if a["type"] == "tap" and "area" not in a and inside(a, box)]
    assert corners and any(inside(a, arrow) for a in corners[:2]), corners


def test_without_a_guard_the_order_is_the_explorers():
    shown = frame()
    visible, _ = options(Dialog(0, BOX), shown, BOX)
    assert visible[0] == {"type": "key", "key": "back"} and not inside(visible[-1], BOX)  # the tap outside last


def test_the_studio_marks_a_proposal_found_by_the_search():
    script = (ROOT / "engine" / "faces" / "studio" / "static" / "proposals.js").read_text()
    assert '["found by", foundBy(p)]' in script and "the search (no model)" in script


def test_a_lesson_found_by_the_search_says_so_in_its_proposal(tmp_path):
    from engine.learning.learner import Learner, Lesson
    from engine.learning.proposals import popup_yaml

    shown = frame()
    clean = shown.copy()
    clean[200:520, 380:900] = 60
    learner = Learner(tmp_path)
    learner.known["page_main"] = clean
    point = ((CROSS[0] + CROSS[2]) // 2, (CROSS[1] + CROSS[3]) // 2)
    _, proposal = learner.record(Lesson(shown, point, "dialog over page_main", found_by="search"), "page_main")
    assert proposal["found_by"] == "search" and "found by the search" in popup_yaml(proposal)
    _, model = Learner(tmp_path / "m").record(Lesson(shown, point, "offer"), "page_main")
    assert model["found_by"] == "model"
    assert cv2.imread(str(tmp_path / f"{proposal['name']}.crop.png")) is not None


def test_dialogs_on_one_panel_are_told_apart_by_their_look_and_the_one_seen_last_is_kept():
    """engine.navigation.search.Dialogs: a like box and a like look is the dialog seen before; the same panel with
    another title is another dialog; when KEPT_DIALOGS are kept, the one seen longest ago goes, not one seen again
    since (a chaos screen looks new at every showing and must not push out the dialog that shows every day)."""
    from engine.navigation.search import KEPT_DIALOGS, Dialogs

    def shown(title: str) -> np.ndarray:
        screen = frame()
        panel = buy_dialog.panel()
        cv2.putText(panel, title, (20, 40), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (255, 255, 255), 2)
        screen[200:200 + panel.shape[0], 380:380 + panel.shape[1]] = panel
        return screen

    dialogs = Dialogs()
    daily = dialogs.of(BOX, shown("Daily"))
    assert dialogs.of(BOX, shown("Daily")) is daily
    assert dialogs.of((382, 201, 902, 521), shown("Daily")) is daily  # (a box found a pixel apart)
    other = dialogs.of(BOX, shown("Notice"))
    assert other is not daily and dialogs.of(BOX, shown("Notice")) is other
    rng = np.random.default_rng(5)
    for _ in range(KEPT_DIALOGS - 1):
        screen = frame()
        screen[BOX[1]:BOX[3], BOX[0]:BOX[2]] = rng.integers(0, 255, (BOX[3] - BOX[1], BOX[2] - BOX[0], 3))
        assert dialogs.of(BOX, screen) not in (daily, other)
        assert dialogs.of(BOX, shown("Daily")) is daily  # seen again each time: kept
    assert other not in dialogs.known and len(dialogs.known) == KEPT_DIALOGS
