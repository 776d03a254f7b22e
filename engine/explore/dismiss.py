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
from engine.explore.atlas import POPUP_LIKE, PopupNode
from engine.explore.sketch import same_dialog
from engine.explore.regions import Area
from engine.explore.sketch import sketch
from engine.navigation import dismissal
from engine.navigation.dismissal import (  # noqa: F401 - re-exported: the search's bounds
    CLOSER_TRIES,
    DISMISS_TRIES,
    FAILED_TRIES,
    FAMILY_FAILURES,
    OWN_CLOSERS,
    SHOWING_TRIES,
    VISIBLE_FAILS,
    spot_failures,
)
from engine.observe.spots import panel_box


def options(popup: PopupNode, frame: np.ndarray | None, box: Area | None = None
            ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The search's options (engine.navigation.dismissal.options) over the explorer's regions."""
    return dismissal.options(popup, frame, box, spots=regions)


def next_try(popups: list[PopupNode], popup: PopupNode, tries: Counter, frame: Callable[[], np.ndarray | None],
             box_of: Callable[[PopupNode], Area] = lambda p: p.box) -> dict[str, Any] | None:
    """The search's next try (engine.navigation.dismissal.next_try) over the explorer's regions. Its family is the
    popups with a like box that look like what shows now (`kin`): generated game 6 under chaos draws four dialogs on
    one panel, the atlas tells them apart by what their boxes show, yet the taps that failed on the others at the
    close cross's spot left that cross out of one dialog's search (151 of 509 actions on it, a restart on most of its
    showings)."""
    shown: list[Any] = []

    def kin(other: PopupNode) -> bool:
        if not shown:
            now = frame()
            shown.append(sketch(now) if now is not None else None)
        if shown[0] is None or not other.sketches:
            return True  # (unknown: one family, as the navigator's search takes a dialog with no look kept)
        return any(same_dialog(shown[0], m, other.box, POPUP_LIKE) for m in other.sketches)

    return dismissal.next_try(popups, popup, tries, frame, box_of, spots=regions, kin=kin)

STREAK_MAX = (dismissal.CHAIN_MAX + 1) * (DISMISS_TRIES + OWN_CLOSERS + SHOWING_TRIES)
"""Actions on popups in a row, with no page between, after which the explorer gives up and restarts the game: a whole
search (its dismissal's retries, its own closers, the search's tries) over each dialog of the longest chain.
Generated game 12 under chaos (22239e9): one dialog that no try closed, taken by the atlas now for one popup, now
for another (swaying art under it), began a new showing at each switch, its tries afresh: 370 actions of 455, a
tap and the back key in turn, and 12 pages found of 55."""


class Showing:
    """One showing of a popup: the tries on it, and the chain rules the navigator's search keeps (engine.navigation.
    dismissal.CHAIN_SHARE): a try after which the popup's box changed over CHAIN_SHARE closed it, another in its place
    that the atlas takes for the same popup (the tries start afresh, at most CHAIN_MAX times); one after which it
    changed over LOOK_SHARE only is the quiet chain (a dialog on a panel of nearly the same colour: the back key next,
    once, and the try credited if the showing then closes). Generated game 7 under chaos: a cross, then a dialog only
    the back key closes, on one panel; the cross counted as failed and the back key never pressed again, every
    showing after spent in vain and the game restarted.

    Showings follow one another without a page between when a chain's next dialog comes, or when the atlas takes one
    dialog for two popups (what moves on it), each a new showing with its tries afresh: `streak` counts the actions
    on popups in a row across them, and at STREAK_MAX the search gives up (the explorer restarts the game)."""

    def __init__(self, streak: int = 0) -> None:
        self.tries: Counter = Counter()
        self.chains = 0
        self.changed: str | None = None
        self.back_due = False
        self.streak = streak

    def stayed(self, popup: PopupNode, action: dict[str, Any], before: np.ndarray | None, after: np.ndarray | None,
               box: Area) -> None:
        """`action` left `popup` showing, as the atlas tells; the frames before and after tell a chain."""
        key = dismissal.action_key(action)
        self.tries[key] += 1
        self.streak += 1
        changed = dismissal.moved(before, after, box)
        if self.chains < dismissal.CHAIN_MAX and changed > dismissal.CHAIN_SHARE:
            self.chains += 1
            popup.closed[key] += 1
            popup.dismiss = popup.dismiss or dismissal.plain(action)
            self.tries, self.changed, self.back_due = Counter(), None, False
        elif self.changed is None and changed > dismissal.LOOK_SHARE:
            self.changed, self.back_due = key, key != "key:back"

    def ended(self, popups: list[PopupNode], before: Any, here: Any) -> Showing:
        """A new showing, from `before` (the explorer's engine.explore.atlas.Here) to `here`: a popup it leaves closed
        (the page under it shows, or another popup over that page, as the atlas tells) credits the quiet chain's try."""
        if before.kind == "popup" and self.changed is not None:
            popup = popups[before.popup]
            if here.kind == "page" and here.page in popup.over or here.kind == "popup" and here.page == before.page:
                popup.closed[self.changed] += 1
        return Showing(self.streak + 1 if before.kind == "popup" and here.kind == "popup" else 0)

    def next(self, popups: list[PopupNode], popup: PopupNode, frame: Callable[[], np.ndarray | None],
             box_of: Callable[[PopupNode], Area]) -> dict[str, Any] | None:
        if self.streak >= STREAK_MAX:
            return None
        if self.back_due:
            self.back_due = False
            return {"type": "key", "key": "back"}
        return next_try(popups, popup, self.tries, frame, box_of)


def first_tries(popup: PopupNode | None, frame: np.ndarray, actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A new page's actions, reordered in case it is a popup over a page never seen without it: a known popup shown
    there (Panels.showing), what closed it first; else, a dialog's panel on it, the search's tries (panel_first)."""
    if popup is None:
        return panel_first(frame, actions)
    closers = [a for a in map(dismissal.key_action, (k for k, _ in popup.closed.most_common(2))) if a]
    return closers + [a for a in actions if dismissal.action_key(a) not in popup.closed]


def panel_first(frame: np.ndarray, actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A page's first actions when its first frame shows a dialog's panel (engine.observe.spots.panel_box): the taps
    on the regions the search would try inside it, in the search's order, then the back key, then the rest. Such a
    page may be a dialog over a page never seen without it, drafted as a page until a way out shows the page under it
    (engine.explore.atlas.Atlas.fold). Generated game 7 under chaos: a cross dialog over a page first reached was
    tapped 22 times before its cross, a back-only one 27 times before the back key. A page that only looks like one
    tries a few of its own taps and its way back first."""
    box = panel_box(frame)
    if box is None:
        return actions
    taps = [a for a in actions if a.get("type") == "tap"]
    first = [next(a for a in taps if dismissal.inside(a, area)) for area in regions.within_box(frame, box, limit=6)
             if any(dismissal.inside(a, area) for a in taps)]  # (a page's tap in each of the search's regions)
    first += [a for a in actions if a.get("type") == "key" and a.get("key") == "back"]
    order = list({id(a): a for a in first}.values())
    return order + [a for a in actions if all(a is not b for b in order)]


# ------------------------------------------------------------------ a known popup over a page never seen

PANEL_CHANGE = 40
"""Grey levels between a popup's frame and the dimmed page under it from which a pixel is the popup's own, on the
undimmed page's scale: a backdrop dimmed to a gain of 0.38 keeps 0.38 of its contrast, and the threshold shrinks with
it (generated seed 6: a dark panel over a page dimmed that far differed from it by under 40 levels, so only its
title's letters were the popup's own, and the search looked for the close cross inside the title's box)."""
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
    own[y1:y2, x1:x2] = (np.abs(a - gain * b)[y1:y2, x1:x2] > PANEL_CHANGE * min(1.0, gain)).astype(np.uint8)
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
