"""Pages the cells cannot tell apart, told apart by their words.

Pages drawn on one backdrop may differ only by a title finer than a cell's thumbnail: over generated games 1-20,
441 pairs of pages matched in every cell but one (engine.explore.sketch.page_difference), so the explorer drafted
them as one page, and the gotos to it arrived on either (issue 49: seed 15553's page_glory and page_harvest, a
word each on one shared band). What still tells them apart is finer than the cells and never moves by itself: the
words. Where a frame and a member of a page differ in their fine drawing (engine.explore.sketch.fine_differ) outside
the cells seen moving, the words read there on both are compared, letters only: a countdown, a counter or a badge
changes digits, sparks and swaying art no letters, so they never split a page; another title does. Text not read
with confidence, and text read with confidence but with no digit in it, is also compared by its shape: the gray
pixels inside each box where text was found, allowed to move by SHAPE_SHIFT pixels. That tells apart text found
but not read (a script the reader does not know: the generator's CJK- and Hangul-like glyphs, Hangul for RapidOCR's
models) and text the reader guessed alike (generated seed 45: two glyph titles read "t" and "#t", the same
letters); a line confidently read with a digit in it may be a clock, and its shape is never compared.
"""

from __future__ import annotations

from typing import Any, Callable

import cv2
import numpy as np

from engine.explore.sketch import Sketch, fine_differ

Area = tuple[int, int, int, int]
TextBox = tuple[str, float, Area]
"""One text line found on an image: its text, the reader's confidence, its box."""
Reader = Callable[[np.ndarray], list[TextBox]]
"""An image -> the text lines on it: (text, confidence, box) (verifiers.ocr.find_text, adapted by the caller)."""
Loader = Callable[[str], Any]
"""A frame's file (as the recording names it) -> the frame, or None."""
TITLE_BAND = 0.25
"""Share of the frame's height, from the top, where words name a page (engine.explore.drafting.title_of reads titles
there too): text lower down (a list, the item a page is showing) changes between visits of one page, and a finer
look that split on such text made two pages of one (docs/benchmarks/generated.md, seed 66355)."""
PLACES = 3
"""Places of fine difference read at most per comparison (the largest first)."""
CONFIDENT = 0.5
"""Confidence from which a read line's letters count; below it the line is text found but not read."""
SHAPE_SHIFT, SHAPE_INK, SHAPE_SHARE = 2, 48, 0.05
"""A box of text differs when more than SHAPE_SHARE of its pixels differ in gray by more than SHAPE_INK however one
crop is moved by up to SHAPE_SHIFT pixels."""
CACHED = 512
"""Readings kept (frame file and place): a member is compared with many frames."""


def letters(lines: list[tuple[str, float, Area]]) -> str:
    """The letters of the confidently read lines, casefolded, in reading order (digits, signs and spaces dropped:
    a timer or a counter reads alike at any moment)."""
    ordered = sorted((line for line in lines if line[1] >= CONFIDENT), key=lambda line: (line[2][1], line[2][0]))
    return "".join(ch for text, _, _ in ordered for ch in text.casefold() if ch.isalpha())


def shaped(lines: list[tuple[str, float, Area]]) -> list[Area]:
    """The boxes of the lines whose shape is compared: the lines found but not confidently read, and the lines read
    confidently with no digit in them (one read with a digit may be a clock or a counter, which changes on one
    page; an unsure reading's digits are guesses: generated seed 47's Hangul-like title read "8" at 0.24)."""
    return [tuple(line[2]) for line in lines
            if line[1] < CONFIDENT or not any(ch.isdigit() for ch in line[0])]


def shapes_differ(a: np.ndarray, b: np.ndarray, boxes: list[Area]) -> bool:
    """Whether two crops of one place differ inside any of `boxes` (text found on either) beyond a small move."""
    if a.shape != b.shape:
        return True
    ga = cv2.cvtColor(a, cv2.COLOR_BGR2GRAY).astype(np.int16)
    gb = np.pad(cv2.cvtColor(b, cv2.COLOR_BGR2GRAY).astype(np.int16), SHAPE_SHIFT, mode="edge")
    k = SHAPE_SHIFT
    for box in boxes:
        x1, y1, x2, y2 = max(0, box[0]), max(0, box[1]), min(a.shape[1], box[2]), min(a.shape[0], box[3])
        if x2 <= x1 or y2 <= y1:
            continue
        here = ga[y1:y2, x1:x2]
        if min(float((np.abs(here - gb[k + y1 + dy:k + y2 + dy, k + x1 + dx:k + x2 + dx]) > SHAPE_INK).mean())
               for dy in range(-k, k + 1) for dx in range(-k, k + 1)) > SHAPE_SHARE:
            return True
    return False


def places(cells: np.ndarray, cell: int, size: tuple[int, int]) -> list[Area]:
    """Boxes in pixels around each connected group of `cells`, widened by a cell left and right (a word runs on
    beyond the cells where two differ) and a quarter cell up and down; the largest groups first."""
    count, labels, stats, _ = cv2.connectedComponentsWithStats(cells.astype(np.uint8), connectivity=8)
    groups = sorted(range(1, count), key=lambda i: -stats[i, cv2.CC_STAT_AREA])[:PLACES]
    out = []
    for i in groups:
        c, r, w, h = (int(v) for v in stats[i, :4])
        out.append((max(0, (c - 1) * cell), max(0, r * cell - cell // 4), min(size[0], (c + w + 1) * cell),
                    min(size[1], (r + h) * cell + cell // 4)))
    return out


class Words:
    """Reads and compares the words where two frames' fine drawings differ; without a reader it tells nothing."""

    def __init__(self, reader: Reader | None = None, load: Loader | None = None) -> None:
        self.reader, self.load = reader, load
        self._read: dict[tuple[str, Area], tuple[str, list[Area]]] = {}
        self._frames: dict[str, Any] = {}
        self.reads = 0

    def _crop(self, path: str, box: Area) -> np.ndarray | None:
        if path not in self._frames:
            if len(self._frames) >= 2:
                self._frames.pop(next(iter(self._frames)))
            self._frames[path] = self.load(path) if self.load else None
        frame = self._frames[path]
        return None if frame is None else np.ascontiguousarray(frame[box[1]:box[3], box[0]:box[2]])

    def _words(self, path: str, box: Area) -> tuple[str, list[Area]] | None:
        """(the letters read confidently, the boxes of text whose shape counts) at `box` of the frame `path`."""
        key = (path, box)
        if key not in self._read:
            crop = self._crop(path, box)
            if crop is None:
                return None
            self.reads += 1
            if len(self._read) >= CACHED:
                self._read.clear()
            lines = self.reader(crop)
            self._read[key] = (letters(lines), shaped(lines))
        return self._read[key]

    def apart_in(self, frame: Sketch, member: Sketch, box: Area, path: str | None, member_path: str | None) -> bool:
        """`apart`, inside `box` (whole cells) only, its edge cells included: an undimmed dialog's words. A page that
        differs from the page it was opened from in one box and dims nothing is taken for a dialog over that page
        (engine.explore.atlas.Atlas.classify), and same_dialog leaves the box's edge cells out, where such a page's
        title may lie: generated seed 4 under chaos, three pages opened from list pages (their titles HORIZON,
        GALLERY and GROVE on the box's edge row) were one dialog, then one page, and 5 of 200 gotos to it were false
        successes."""
        outside, c = np.ones(frame.colour.shape[:2], bool), frame.cell
        outside[box[1] // c:box[3] // c, box[0] // c:box[2] // c] = False
        return self.apart(frame, member, outside, path, member_path)

    def apart(self, frame: Sketch, member: Sketch, excused: Any, path: str | None, member_path: str | None) -> bool:
        """Whether `frame` (file `path`) shows other words than `member` (file `member_path`) where their fine
        drawings differ in the title band, outside the `excused` cells (seen moving)."""
        if self.reader is None or not path or not member_path or path == member_path:
            return False
        cells = np.zeros(frame.colour.shape[:2], bool)
        cells[:max(1, int(np.ceil(cells.shape[0] * TITLE_BAND)))] = True
        if excused is not None and excused.shape == cells.shape:
            cells &= ~excused
        differ = fine_differ(frame, member, cells)
        for box in places(differ, frame.cell, frame.size) if differ.any() else ():
            ours, theirs = self._words(path, box), self._words(member_path, box)
            if ours is None or theirs is None:
                continue
            if ours[0] != theirs[0]:
                return True
            boxes = ours[1] + theirs[1]
            if boxes and shapes_differ(self._crop(path, box), self._crop(member_path, box), boxes):
                return True
        return False
