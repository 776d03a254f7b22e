"""The explorer's side of the dismissal search (engine.navigation.dismissal, shared with the navigator): the search
over the explorer's own regions (engine.explore.regions), and a known popup over a page never seen (each popup's own
panel, told wherever it shows).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import cv2
import numpy as np

from engine.explore import regions
from engine.explore.atlas import PopupNode
from engine.explore.regions import Area
from engine.navigation import dismissal
from engine.navigation.dismissal import (  # noqa: F401 - re-exported: the search's bounds
    CLOSER_TRIES,
    DISMISS_TRIES,
    FAILED_TRIES,
    FAMILY_FAILURES,
    SHOWING_TRIES,
    VISIBLE_FAILS,
    spot_failures,
)


def options(popup: PopupNode, frame: np.ndarray | None, box: Area | None = None
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The search's options (engine.navigation.dismissal.options) over the explorer's regions."""
    return dismissal.options(popup, frame, box, spots=regions)


def next_try(popups: list[PopupNode], popup: PopupNode, tries: Counter, frame: Callable[[], np.ndarray | None],
             box_of: Callable[[PopupNode], Area] = lambda p: p.box) -> dict[str, Any] | None:
    """The search's next try (engine.navigation.dismissal.next_try) over the explorer's regions."""
    return dismissal.next_try(popups, popup, tries, frame, box_of, spots=regions)


# ------------------------------------------------------------------ a known popup over a page never seen

PANEL_CHANGE = 40
"""Grey levels between a popup's frame and the dimmed page under it from which a pixel is the popup's own."""
PANEL_MIN = 24
"""Smallest side of a popup's own panel (pixels) worth recognising it by."""
PANEL_ALIKE = 14.0
"""Mean grey-level difference under which a frame shows a popup's panel where it was."""

Panel = tuple[Area, np.ndarray]


def panel(shown: np.ndarray, under: np.ndarray, box: tuple[int, int, int, int]) -> Panel | None:
    """The popup's own pixels inside its box: where the frame that shows it differs from the page under it beyond
    the dimming of the backdrop (the gain measured outside the box); their bounding rectangle and grey crop, or
    None when too little of the box is the popup's own (a translucent veil is told by covers, not by this)."""
    if shown.shape != under.shape:
        return None
    a = cv2.cvtColor(shown, cv2.COLOR_BGR2GRAY).astype(np.float32)
    b = cv2.cvtColor(under, cv2.COLOR_BGR2GRAY).astype(np.float32)
    outside = np.ones(a.shape, bool)
    x1, y1, x2, y2 = (max(0, int(v)) for v in box)
    outside[y1:y2, x1:x2] = False
    gain = float(np.median(a[outside] / np.maximum(b[outside], 1.0))) if outside.any() else 1.0
    own = np.zeros(a.shape, np.uint8)
    own[y1:y2, x1:x2] = (np.abs(a - gain * b)[y1:y2, x1:x2] > PANEL_CHANGE).astype(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(
        cv2.morphologyEx(own, cv2.MORPH_CLOSE, np.ones((9, 9), np.uint8)))
    if count < 2:
        return None
    i = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    x, y, w, h = (int(v) for v in stats[i, :4])
    if min(w, h) < PANEL_MIN:
        return None
    return (x, y, x + w, y + h), a[y:y + h, x:x + w]


def shows(frame: np.ndarray, known: Panel) -> bool:
    """Whether `frame` shows the panel where it was."""
    (x1, y1, x2, y2), crop = known
    if frame.shape[0] < y2 or frame.shape[1] < x2:
        return False
    here = cv2.cvtColor(frame[y1:y2, x1:x2], cv2.COLOR_BGR2GRAY).astype(np.float32)
    return float(np.abs(here - crop).mean()) < PANEL_ALIKE


class Panels:
    """Each popup's own panel, looked for once (from its first frame and the page under it): a tighter box than a
    cover's (whole sketch cells), one that is the same whatever page the popup shows over, and a way to tell a known
    popup over a page never seen, which no cover can. `read` gives a recorded frame by its path."""

    def __init__(self, read: Callable[[str], np.ndarray | None]) -> None:
        self.read = read
        self.found: dict[int, Panel | None] = {}

    def of(self, popup: PopupNode, pages: list[Any]) -> Panel | None:
        if popup.id not in self.found:
            under = pages[min(popup.over)] if popup.over else None
            shown = self.read(popup.members[0]) if popup.members else None
            clean = self.read(under.members[0]) if under is not None and under.members else None
            self.found[popup.id] = None if shown is None or clean is None else panel(shown, clean, popup.box)
        return self.found[popup.id]

    def box(self, popup: PopupNode, pages: list[Any]) -> Area:
        """The popup's own panel where it was found, else the box a cover found."""
        known = self.of(popup, pages)
        return known[0] if known is not None else popup.box

    def showing(self, popups: list[PopupNode], pages: list[Any], frame: np.ndarray) -> PopupNode | None:
        """A popup with a known way out whose panel `frame` shows where it was, else None."""
        for popup in popups:
            if popup.closed:
                known = self.of(popup, pages)
                if known is not None and shows(frame, known):
                    return popup
        return None
