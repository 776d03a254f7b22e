"""Which regions of a dialog a search may tap, and which first: it never buys.

A region whose words (OCR, engine.config.words: the built-in list in every server's language and the graph's own
``spending_words``) or whose meaning (a button the graph knows, found there, whose name says it spends) says it
spends or commits is forbidden: no tap of the search lands inside it (padded by PAD pixels). A region that says
"close", "cancel", "later", "skip"..., or that looks like a close cross or a back arrow (a small, squarish region in
a top corner of the dialog's box), is a closer and is tried before any other; then, on a dialog where nothing
spends, one that acknowledges ("OK", "Confirm", "Continue"...: a notice's only button) before the rest (where
something spends, an OK may be what commits: it keeps its place). When the regions cannot be read (no
OCR engine), the most prominent region of the dialog (the biggest and brightest: a dialog's primary button is the one
that commits) is forbidden too, unless it looks like a closer. Nothing here knows a game's look.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Callable, Iterable

import numpy as np

from engine.config.words import ACKNOWLEDGING, CLOSING, says, spending

log = logging.getLogger(__name__)

Area = tuple[int, int, int, int]
Reader = Callable[[np.ndarray, Area], str]

PAD = 8
"""Pixels around a forbidden region a tap keeps away from (its detected box may be a little smaller than drawn)."""
CORNER = 0.3
"""Share of the box's width (from either side) and height (from the top) where a close cross or back arrow sits."""
BUTTON_TEXT, BUTTON_SHARE = 24, 0.4
"""A region reading more characters, or covering more of the dialog's box, is its body, not a button: the spending
words in it are located line by line (the body is never tapped as a whole)."""
READ_CACHE = 256
"""Readings kept (a showing's tries judge the same buttons again)."""
SMALL = 0.22
"""Largest side of a corner closer, as a share of the box's shorter side."""


@dataclass(frozen=True)
class Judged:
    """The regions of one dialog: closers (first), the others, and the forbidden (never tapped)."""

    closers: list[Area] = field(default_factory=list)
    others: list[Area] = field(default_factory=list)
    forbidden: list[Area] = field(default_factory=list)
    texts: dict[Area, str] = field(default_factory=dict)


def ocr_lines(frame: np.ndarray, area: Area) -> list[tuple[str, Area]]:
    """The text lines inside `area` and where each is (verifiers.ocr's detection)."""
    from verifiers.ocr import find_text

    return [(line.text, line.box) for line in find_text(frame, area, min_confidence=0.3)]


def ocr_reader(frame: np.ndarray, area: Area) -> str:
    """The text of `area` (verifiers.ocr; recognition, then detection where it read nothing credible)."""
    from verifiers.ocr import read_text

    text, score = read_text(frame, area)
    return text if score >= 0.3 else ""


class Guard:
    """Judges a dialog's regions (engine.navigation.dismissal.options asks).

    Args:
        words: spending words beyond the built-in ones (a graph's ``spending_words``).
        read: the text of an area of a frame (default: OCR); raising means it cannot read (no OCR engine).
        known: the areas on a frame of buttons the graph knows whose name says they spend (found where drawn).
    """

    def __init__(self, words: Iterable[str] | None = None, *, read: Reader | None = ocr_reader,
                 known: Callable[[np.ndarray], list[Area]] | None = None,
                 lines: Callable[[np.ndarray, Area], list[tuple[str, Area]]] | None = ocr_lines) -> None:
        self.spending = spending(words)
        self.read, self.known, self.lines = read, known, lines
        self._last: tuple[int, Judged] | None = None
        self._read: dict[tuple, str] = {}  # (area, its pixels) -> text: a dialog's buttons are read once a showing

    def _text(self, frame: np.ndarray, area: Area) -> str | None:
        if self.read is None:
            return None
        x1, y1, x2, y2 = (max(0, int(v)) for v in area)
        key = (area, hash(frame[y1:y2, x1:x2].tobytes()))
        if key in self._read:
            return self._read[key]
        try:
            text = self._read[key] = self.read(frame, area)
            while len(self._read) > READ_CACHE:
                self._read.pop(next(iter(self._read)))
            return text
        except Exception as exc:  # noqa: BLE001 - a reader that fails reads nothing; the guard stays cautious
            log.warning("the dismissal search cannot read a button (%s): the most prominent one is left alone", exc)
            self.read = None
            return None

    def judge(self, frame: np.ndarray, box: Area, areas: list[Area]) -> Judged:
        """Sort `areas` (regions inside the dialog's `box` on `frame`) into closers, others and forbidden."""
        closers, others, forbidden, texts = [], [], [], {}
        unread: list[Area] = []
        for area in areas:
            text = self._text(frame, area)
            if text is None:
                unread.append(area)
                continue
            texts[area] = text
            if says(text, self.spending) and not _button(area, box, text):
                forbidden += self._spenders_in(frame, area)  # a panel that says it somewhere: where exactly
            elif says(text, self.spending):
                forbidden.append(area)
            elif says(text, CLOSING) or corner_closer(area, box):
                closers.append(area)
            else:
                others.append(area)
        if unread:
            shaped = [a for a in unread if corner_closer(a, box)]
            rest = [a for a in unread if a not in shaped]
            if rest:
                forbidden.append(max(rest, key=lambda a: prominence(frame, a)))
            closers += shaped
            others += [a for a in rest if a not in forbidden]
        forbidden += self.known(frame) if self.known is not None else []
        ack = [] if forbidden else [a for a in others if says(texts.get(a, ""), ACKNOWLEDGING)]
        others = ack + [a for a in others if a not in ack]  # (on a dialog that spends, an OK may be what commits)
        padded = [(a[0] - PAD, a[1] - PAD, a[2] + PAD, a[3] + PAD) for a in forbidden]
        closers = [a for a in closers if not _overlaps(a, padded)]
        others = [a for a in others if not _overlaps(a, padded)]
        judged = Judged(closers, others, padded, texts)
        self._last = (id(frame), judged)
        return judged

    def _spenders_in(self, frame: np.ndarray, area: Area) -> list[Area]:
        """The lines inside a large region (a dialog's body) that say they spend, grown by their height on each
        side (the button around its label); none when they cannot be located (the region is not tapped)."""
        x1, y1, x2, y2 = (max(0, int(v)) for v in area)
        key = ("lines", area, hash(frame[y1:y2, x1:x2].tobytes()))
        try:
            found = self._read.get(key) or (self.lines(frame, area) if self.lines is not None else [])
        except Exception as exc:  # noqa: BLE001 - a detector that fails locates nothing
            log.warning("the dismissal search cannot locate the text of a dialog (%s)", exc)
            found = []
        self._read[key] = found
        grown = []
        for text, (x1, y1, x2, y2) in found:
            if says(text, self.spending):
                h = y2 - y1
                grown.append((x1 - h, y1 - h, x2 + h, y2 + h))
        return grown

    def allows(self, frame: np.ndarray | None, point: list[int] | tuple[int, int]) -> bool:
        """Whether a tap at `point` lands on nothing forbidden on `frame` (as last judged on it)."""
        if frame is None or self._last is None or self._last[0] != id(frame):
            return True
        return not any(a[0] <= point[0] < a[2] and a[1] <= point[1] < a[3] for a in self._last[1].forbidden)


def _button(area: Area, box: Area, text: str) -> bool:
    """A region that is one button, not a dialog's body: a short label, a small share of the dialog's box."""
    share = (area[2] - area[0]) * (area[3] - area[1]) / max(1, (box[2] - box[0]) * (box[3] - box[1]))
    return len(text.strip()) <= BUTTON_TEXT and share <= BUTTON_SHARE


def corner_closer(area: Area, box: Area) -> bool:
    """A small, squarish region in a top corner of the box (or just outside its top corner): a close cross, a back
    arrow."""
    w, h = area[2] - area[0], area[3] - area[1]
    bw, bh = box[2] - box[0], box[3] - box[1]
    if w <= 0 or h <= 0 or max(w, h) > SMALL * min(bw, bh) + 16 or not 0.5 <= w / h <= 2.0:
        return False
    cx, cy = (area[0] + area[2]) / 2, (area[1] + area[3]) / 2
    top = cy < box[1] + CORNER * bh
    side = cx < box[0] + CORNER * bw or cx > box[2] - CORNER * bw
    return top and side


def prominence(frame: np.ndarray, area: Area) -> float:
    """How much a region draws the eye: its size times its brightness."""
    x1, y1, x2, y2 = (max(0, int(v)) for v in area)
    crop = frame[y1:y2, x1:x2]
    return float((x2 - x1) * (y2 - y1)) * (float(crop.mean()) if crop.size else 0.0)


def _overlaps(area: Area, others: list[Area]) -> bool:
    cx, cy = (area[0] + area[2]) / 2, (area[1] + area[3]) / 2
    return any(o[0] <= cx < o[2] and o[1] <= cy < o[3] for o in others)
