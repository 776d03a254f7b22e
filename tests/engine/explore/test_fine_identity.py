"""Pages told apart by a short title finer than a cell (issue 45, generated game 66355): two pages on one backdrop
whose only difference is a two-glyph title looked the same to the sketch's 8x8 thumbnails, became one page, and a
goto to one was verified on the other (3 false successes in 10). The sketch's fine images tell them apart; a counter
that ticks finer than a cell is seen moving while the screen settles, and excused."""

from __future__ import annotations

import cv2
import numpy as np

from engine.explore.atlas import Atlas
from engine.explore.effects import settle
from engine.explore.signatures import _candidates, stable_signatures, unexplained
from engine.explore.sketch import cell_match, fine_differ, finer_only, sketch

W, H = 1280, 720


def drawn(title: str, counter: int = 385553, figure_dx: int = 0) -> np.ndarray:
    """A sparse page of a plainly drawn game: a shared backdrop, a title band with a short title of three glyphs, a
    back arrow, a home icon, a figure and a counter bottom left, as generated game 66355 draws its pages."""
    frame = np.full((H, W, 3), (36, 42, 48), np.uint8)
    cv2.rectangle(frame, (450, 16), (830, 68), (200, 130, 200), -1)
    cv2.putText(frame, title, (600, 58), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (40, 40, 40), 3, cv2.LINE_AA)
    cv2.circle(frame, (77, 43), 26, (160, 80, 150), -1)
    cv2.fillPoly(frame, [np.array([[1212, 20], [1236, 44], [1188, 44]], np.int32)], (250, 250, 250))
    cv2.ellipse(frame, (270 + figure_dx, 540), (80, 70), 0, 0, 360, (110, 220, 120), -1)
    cv2.rectangle(frame, (16, 658), (236, 702), (20, 20, 20), -1)
    cv2.putText(frame, f"{counter:,}", (24, 698), cv2.FONT_HERSHEY_SIMPLEX, 1.4, (120, 220, 240), 3, cv2.LINE_AA)
    return frame


def test_a_short_title_is_below_the_thumbnails_but_not_the_fine_images():
    a, b = sketch(drawn("HAN")), sketch(drawn("VOD"))
    assert cell_match(a, b).all()  # the thumbnails see no difference at all
    assert finer_only(a, b) >= 2  # the fine images see the title's cells
    assert finer_only(a, sketch(drawn("HAN", figure_dx=3))) == 0  # a figure that swayed a little is the same drawing


def test_two_pages_whose_short_titles_differ_stay_two_and_a_ticking_counter_keeps_each_one():
    ticking = sketch(drawn("HAN", counter=385553)), sketch(drawn("HAN", counter=385981))
    moving = fine_differ(*ticking)  # what settle records for the counter (next test)
    assert moving.any()
    atlas = Atlas()
    first = atlas.absorb({"type": "screenshot"}, ticking[0], "a0.png", moving=moving)
    other = atlas.absorb({"type": "tap", "point": [942, 133]}, sketch(drawn("VOD", counter=385990)), "b0.png")
    assert other.kind == "page" and other.page != first.page
    again = atlas.absorb({"type": "tap", "point": [77, 43]}, sketch(drawn("HAN", counter=385960)), "a1.png")
    assert again.page == first.page  # the counter moved on: excused, it was seen moving
    assert len([p for p in atlas.pages if p.folded is None]) == 2


def test_settling_sees_a_counter_that_ticks_finer_than_a_cell():
    t, looks = [0.0], [0]

    def look():
        looks[0] += 1
        return drawn("HAN", counter=385000 + 421 * looks[0])

    def sleep(seconds):
        t[0] += seconds

    done = settle(look, sleep=sleep, clock=lambda: t[0])
    assert not done.timed_out and done.moving is not None
    row, col = 692 // done.sketch.cell, 100 // done.sketch.cell
    assert done.moving[row, col]  # the counter's cell
    assert not done.moving[40 // done.sketch.cell, 640 // done.sketch.cell]  # not the title's


def test_the_signatures_of_a_page_include_its_short_title():
    """The title's cells count as unlike the other pages' (fine images), so they are candidates before the page's
    backdrop: before, a sparse page of generated game 66355 was signed by its one shared home icon alone, and it hit
    on the pages that differ from it by their titles."""
    other_backdrop = drawn("OK")
    other_backdrop[80:650] = (90, 60, 160)
    mine, theirs = [drawn("HAN")], [drawn("VOD"), other_backdrop]
    candidates = _candidates(mine, [sketch(f) for f in theirs])
    title = [c for c in candidates if c[0] == "template" and c[1][1] < 80 and 560 <= c[1][0] < 720]
    assert len(title) == 2 and all(c[2] >= 1.0 for c in title)  # unlike both other pages, as its icon is not
    assert not unexplained(stable_signatures(mine, theirs), mine, [other_backdrop])
