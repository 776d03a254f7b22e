"""Which untried tap the explorer takes first (engine.explore.priority): learnt from what taps of the same kind did,
and from taps that did nothing where another page shows the same thing."""

from __future__ import annotations

import numpy as np

from engine.explore.priority import Priority
from engine.explore.regions import page_actions, tap_kind

SIZE = (1280, 720)


def tap(x: int, y: int, kind: str, side: int = 40) -> dict:
    return {"type": "tap", "point": [x, y], "area": [x - side // 2, y - side // 2, x + side // 2, y + side // 2],
            "kind": kind}


def frame_with(*boxes: tuple[int, int, int, int, int]) -> np.ndarray:
    frame = np.full((SIZE[1], SIZE[0], 3), 30, np.uint8)
    for x1, y1, x2, y2, gray in boxes:
        frame[y1:y2, x1:x2] = gray
    return frame


def test_a_kind_is_never_put_off_by_its_rate_only_ordered():
    """Taps of a kind that did nothing on four pages are still work on the fifth (kinds conflate: a list's rows and a
    figure's pieces are both pieces of a bigger blob), behind a kind that led somewhere."""
    priority = Priority()
    frame = frame_with()
    pieces = [tap(100 + 30 * i, 300, "piece/small/middle/still", 20) for i in range(6)]
    button = tap(640, 500, "blob/large/middle/still", 120)
    for page in range(4):
        priority.describe(page, frame, [pieces[page], button])
        priority.saw(page, pieces[page], changed=False)
        priority.saw(page, button, changed=True)
    priority.describe(9, frame, [pieces[5], button])
    assert not priority.put_off(9, pieces[5])
    assert priority.order(9, [pieces[5], button]) == [button, pieces[5]]


def test_a_tap_where_another_page_shows_the_same_thing_and_a_tap_did_nothing_is_put_off():
    """A bar every page shows: its look at its place, tapped once in vain, is put off on every other page; the same
    place showing something else (a page's own button there) is not."""
    priority = Priority()
    bar = (20, 660, 220, 700, 200)
    first = frame_with(bar)
    hud = tap(120, 680, "blob/small/bottom-left/still")
    hud["area"] = [20, 660, 220, 700]
    priority.describe(0, first, [hud])
    priority.describe(1, frame_with(bar), [hud])          # known before the dud ...
    priority.describe(2, frame_with((20, 660, 220, 700, 90)), [hud])  # ... the same place, another look
    priority.saw(0, hud, changed=False)
    priority.describe(3, frame_with(bar), [hud])          # ... and seen after it
    assert priority.put_off(1, hud) and priority.put_off(3, hud)
    assert not priority.put_off(2, hud)
    priority.thorough = True  # once no page has other work: put off, never dropped
    assert not priority.put_off(1, hud)


def test_taps_are_ordered_by_their_kinds_rate_and_the_back_key_keeps_its_place():
    priority = Priority()
    frame = frame_with()
    good, poor = "blob/large/middle/still", "piece/small/middle/still"
    seen = [tap(100, 100, good), tap(200, 100, poor), tap(300, 100, good), tap(400, 100, poor)]
    priority.describe(0, frame, seen)
    priority.saw(0, seen[0], changed=True)
    priority.saw(0, seen[1], changed=False)
    a, b = tap(500, 300, poor), tap(600, 300, good)
    back, moving = {"type": "key", "key": "back"}, tap(700, 300, good + "-x")
    priority.describe(1, frame, [a, b, moving])
    order = priority.order(1, [a, b, back, moving])
    assert order == [b, a, back, moving]


def test_every_tap_a_page_offers_has_a_kind_naming_its_band_and_size():
    frame = frame_with((40, 10, 120, 60, 220), (500, 300, 780, 420, 180), (1180, 680, 1200, 700, 240))
    taps = [a for a in page_actions(frame) if a["type"] == "tap"]
    assert taps and all(a.get("kind") for a in taps)
    kinds = {tuple(a["area"]): a["kind"] for a in taps}
    assert any(k.startswith("blob/large/middle") for k in kinds.values())
    assert tap_kind((40, 10, 110, 60), SIZE, gap=False, piece=False, moving=False) == "blob/small/top-left/still"
    assert tap_kind((1180, 680, 1200, 700), SIZE, gap=False, piece=True, moving=True) == \
        "piece/tiny/bottom-right/moving"


def test_promising_work_is_a_tap_or_swipe_whose_kind_changed_the_screen_never_the_back_key():
    """The explorer goes to another page for promising work before it tries the rest where it stands."""
    priority = Priority()
    frame = frame_with()
    pieces = [tap(100 + 30 * i, 300, "piece/tiny/middle/still", 20) for i in range(6)]
    fresh = tap(640, 500, "blob/large/middle/still", 120)
    swipe = {"type": "swipe", "start": [900, 360], "end": [300, 360]}
    priority.describe(0, frame, pieces + [fresh])
    for action in pieces[:4]:
        priority.saw(0, action, changed=False)
    assert not priority.promising(0, pieces[5])  # 1 of 6: under PROMISING
    assert priority.promising(0, fresh)  # a kind never tried
    assert priority.promising(0, swipe)
    for _ in range(4):
        priority.saw(0, swipe, changed=False)
    assert not priority.promising(0, swipe)
    assert not priority.promising(0, {"type": "key", "key": "back"})


def test_a_tap_on_the_colour_of_buttons_that_led_somewhere_comes_before_one_of_its_kind_in_another_colour():
    """Generated seed 5: a list's rows, their words cutting each plate into pieces, rated as the pieces of the
    figures beside them (which do nothing), were left untried at 10 minutes. A game draws its buttons alike: a piece
    of a plate whose colour led somewhere comes first among its kind; a colour never tried leaves the kind's rate."""
    priority = Priority()
    plate, figure, other = (200, 70, 130), (60, 180, 90), (90, 90, 200)
    frame = np.full((SIZE[1], SIZE[0], 3), 30, np.uint8)
    frame[100:160, 560:900] = plate           # a button that leads somewhere
    frame[300:360, 560:900] = plate           # a list's row, cut into a piece by its word
    frame[300:400, 100:300] = figure          # a figure's piece
    frame[500:560, 560:900] = other           # a plate of a colour never tried
    button = tap(730, 130, "blob/large/middle/still", 60)
    row, piece, fresh = (tap(600, 330, "piece/large/middle/still", 40), tap(200, 350, "piece/large/middle/still", 40),
                         tap(600, 530, "piece/large/middle/still", 40))
    priority.describe(0, frame, [button, piece, row, fresh])
    priority.saw(0, button, changed=True)
    for page in (1, 2, 3):  # the figures' pieces do nothing, page after page
        priority.describe(page, frame, [piece])
        priority.saw(page, piece, changed=False)
    assert priority.rate("piece/large/middle/still") < 0.3
    assert priority.order(0, [piece, fresh, row])[0] == row
    assert priority.promising(0, row) and not priority.promising(0, piece)
    assert priority.score(0, fresh) == priority.rate("piece/large/middle/still")


def test_once_a_piece_of_a_plate_changed_the_screen_its_other_pieces_wait_and_the_next_plate_does_not():
    """Generated seed 11 offered each list row as three taps (its word cut the plate), seed 5 as two: every row cost
    three taps to one link. Pieces of one plate (one band, one colour, joined by that colour around the word) are
    put off once one of them changed the screen; a plate of the same colour beside it, a stretch of backdrop between,
    is another button."""
    plate = (200, 70, 130)
    frame = np.full((SIZE[1], SIZE[0], 3), 30, np.uint8)
    frame[180:240, 560:900] = plate
    frame[195:225, 640:700] = (250, 250, 250)   # the word that cuts the first plate in two
    frame[180:240, 916:1240] = plate            # the next button, 16 pixels of backdrop away
    left, right = tap(600, 210, "piece/large/middle/still", 60), tap(800, 210, "piece/large/middle/still", 60)
    left["area"], right["area"] = [560, 180, 640, 240], [700, 180, 900, 240]
    beside = tap(1078, 210, "blob/large/middle/still", 60)
    beside["area"] = [916, 180, 1240, 240]
    priority = Priority()
    priority.describe(0, frame, [left, right, beside])
    assert not priority.put_off(0, right)
    priority.saw(0, left, changed=True)
    assert priority.put_off(0, right) and not priority.put_off(0, beside)
    priority.thorough = True
    assert not priority.put_off(0, right)


def test_bare_words_on_one_row_are_buttons_of_their_own_and_a_words_glyphs_one_button():
    """Words written straight on the page's backdrop, two to a row (generated seed 12's hub: each word a button of
    its own, each glyph a region of its own). The backdrop joins them all along the row, so they were taken for
    pieces of one plate, and once the first word led somewhere the others waited for the thorough pass (page_oasis,
    behind the second word of a row, was tapped at the run's 331st action of 343). A word's glyphs, closer than a
    glyph's height, are still one button."""
    frame = np.full((SIZE[1], SIZE[0], 3), (52, 30, 18), np.uint8)  # a dark backdrop, a little texture
    frame[::7, ::5] = (60, 36, 22)

    def glyph(x: int, y: int) -> dict:  # thin strokes in a 40 x 32 box: its median colour is the backdrop's
        frame[y:y + 3, x:x + 40] = (240, 240, 240)
        frame[y:y + 32, x + 18:x + 21] = (240, 240, 240)
        frame[y + 29:y + 32, x + 4:x + 36] = (240, 240, 240)
        return {"type": "tap", "point": [x + 20, y + 16], "area": [x, y, x + 40, y + 32],
                "kind": "piece/small/middle/still"}

    first, second, other = glyph(680, 194), glyph(728, 194), glyph(1028, 194)  # "two glyphs", then another word
    below = glyph(680, 272)
    priority = Priority()
    priority.describe(0, frame, [first, second, other, below])
    priority.saw(0, first, changed=True)
    assert priority.put_off(0, second)  # the same word
    assert not priority.put_off(0, other) and not priority.put_off(0, below)
