"""How to close a popup: the next try on the popup shown now (engine.explore.explorer.Explorer._dismiss).

In order: its own dismissal; what else closed it, then popups with a like box, then any popup, when it lies inside
this one's box (games reuse a dialog's layout; two dialogs that look one may take different buttons); the back key,
the regions inside its box and a tap outside it; then a grid of taps over its box. Popups with a like box are one
family: a grid point that failed on one is not tried again on the next showing, so the search goes on where it left
off (a dialog closed by a spot nothing marks), and a visible option that failed VISIBLE_FAILS times on the family is
left out (a dropped tap hides one failure, seldom two) until the grid is spent (a lookalike may take it). A showing
gets CLOSER_TRIES tries of known closers and SHOWING_TRIES of its own search (FAILED_TRIES once its family failed
FAMILY_FAILURES showings), then the caller restarts the app: every action spent on a popup is one not spent finding
pages, and a search starved by the closers tried first would never find the spot.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import cv2
import numpy as np

from engine.explore import regions
from engine.explore.atlas import SAME_BOX, PopupNode, action_key, box_match, key_action
from engine.explore.regions import Area, box_grid, inside

SHOWING_TRIES = 10
"""Actions of the search on one showing of a popup whose dismissal is not known yet before the app is restarted."""
FAMILY_FAILURES = 3
FAILED_TRIES = 6
"""After FAMILY_FAILURES showings of popups with a like box ended in a restart, a showing's search gets FAILED_TRIES
actions: it goes on, slower (the family shows again and again; the spot found once closes every showing after)."""
DISMISS_TRIES = 2
"""Tries of a popup's known dismissal on one showing (a tap may be dropped)."""
CLOSER_TRIES = 3
"""Tries on one showing of what closed this popup or others before, counted apart from the search."""
VISIBLE_FAILS = 2
"""Tries of a visible option (the back key, a region) on a family that left it open before it is left out."""


def options(popup: PopupNode, frame: np.ndarray | None, box: Area | None = None
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The back key, a tap on each region inside the popup's `box` (its own panel where known, else the box a cover
    found) and one outside it; and the grid over the box."""
    box = box or popup.box
    visible: list[dict[str, Any]] = [{"type": "key", "key": "back"}]
    if frame is None:
        return visible, []
    w, h = frame.shape[1], frame.shape[0]
    for area in regions.within_box(frame, box, limit=6):
        visible.append({"type": "tap", "point": list(regions.centre(area)), "area": list(area)})
    visible.append({"type": "tap", "point": list(regions.outside(box, (w, h)))})
    return visible, box_grid(box, (w, h), visible)


def spot_failures(family: list[PopupNode], option: dict[str, Any]) -> int:
    """How often the family was tried at `option`'s spot (the same key, or a tap inside the option's area) and stayed
    open."""
    area = option.get("area")
    count = 0
    for popup in family:
        for key, n in popup.tried.items():
            if area and option.get("type") == "tap":
                action = key_action(key)
                if action is None or action["type"] != "tap" or not inside(action, area):
                    continue
            elif key != action_key(option):
                continue
            count += n - popup.closed[key]
    return count


def next_try(popups: list[PopupNode], popup: PopupNode, tries: Counter, frame: Callable[[], np.ndarray | None],
             box_of: Callable[[PopupNode], Area] = lambda p: p.box) -> dict[str, Any] | None:
    """The next action on `popup`, given this showing's `tries` (action key -> count), its latest frame and each
    popup's own panel (`box_of`, else the box a cover found); None when the showing's budget is spent (restart)."""
    if popup.dismiss is not None and tries[action_key(popup.dismiss)] < DISMISS_TRIES:
        return dict(popup.dismiss)
    own = box_of(popup)
    family = [p for p in popups if box_match(p.box, popup.box) >= SAME_BOX or box_match(box_of(p), own) >= SAME_BOX]
    closing: Counter = Counter()
    kin: Counter = Counter()
    for other in popups:
        closing.update(other.closed)
        if other in family:
            kin.update(other.closed)
    if sum(tries[k] for k in closing) < CLOSER_TRIES:  # its own closers first, then its family's, then any
        for key in [k for counter in (popup.closed, kin, closing) for k, _ in counter.most_common()]:
            action = key_action(key)
            if action is not None and tries[key] == 0 and inside(action, popup.box):
                return action
    failed = sum(p.failures for p in family) >= FAMILY_FAILURES
    searched = sum(n for k, n in tries.items() if k not in closing)
    if searched >= (FAILED_TRIES if failed else SHOWING_TRIES):
        return None
    visible, grid = options(popup, frame(), own)
    for option in visible:  # again on each showing (a fault may have hidden that it worked), up to a point
        if tries[action_key(option)] == 0 and spot_failures(family, option) < VISIBLE_FAILS:
            return option
    for point in grid:
        if not any(p.tried[action_key(point)] for p in family):
            return point
    for option in visible:  # the search is spent: what failed on the family may work on this one (a lookalike)
        if tries[action_key(option)] == 0:
            return option
    return None


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
