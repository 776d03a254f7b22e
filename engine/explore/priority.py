"""Which of a page's untried taps to try first, learnt while playing from what taps like it did (issue 45).

A page offers many regions that stand out, and most are no button: a figure's pieces, the digits of a counter, the
glyphs of a title, the same currency bar on every page. On a generated game a page offered 20-30 of them and 3-5
links (seed 13: 143 of 194 taps changed nothing). So every tap candidate gets a kind from what the frame shows
(engine.explore.regions.tap_kind: a region or a hole in a bar, a blob on its own or a piece cut from a bigger one,
its size against the grid's cell, the band it sits in, whether it lies on cells that move by themselves), and the
explorer counts, per kind, how many taps of it changed the screen. On a page the untried tap whose kind changed the
screen most often is tried first.
A tap that sits where a tap did nothing on another page, over a look alike (LOOK_SAME: a bar every page shows, a
currency counter), is put off: it is tried only in the thorough pass, once no page has other work. Nothing is
dropped, only ordered. A kind's rate orders taps but never puts one off: kinds conflate (a list's rows and a
figure's pieces are both pieces cut from a bigger blob; putting off a kind that had failed four times lost seed
103's list rows to its figures' pieces).
A tap's look counts beside its kind: a game draws its buttons alike (one plate, one colour), so taps on regions of
the colour of regions whose taps changed the screen rate as those did (a colour's family, COLOUR_NEAR). Kinds alone
put a list's rows behind a figure's pieces when the glyphs of the rows' words cut them into pieces too (issue 45,
generated seed 5: ten list rows on two pages left untried at 10 minutes, rated as the figures' pieces, 0.25).
Regions that are pieces of one plate (side by side on one band, of one colour, the plate's colour between them: a
button whose word cut it in two or three) do what one of them did: once one changed the screen, the others are put
off (generated seed 11: each list row offered as three taps; seed 5: two).
What is learnt is a function of the actions and the frames they were taken on, so a resumed run learns it again.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import cv2
import numpy as np

from engine.navigation.dismissal import action_key, box_match

Area = tuple[int, int, int, int]

DUD_OVERLAP = 0.6
"""Intersection over union from which a tap's area is the place of a tap that did nothing on another page."""
LOOK_SAME = 12.0
"""Mean gray difference (0-255) of two areas' 8x8 looks under which they show the same thing."""
LOOK = 8
BAND_OVERLAP = 0.6
COLOUR_NEAR = 24.0
"""Largest per-channel difference of two regions' median colours for them to be of one colour's family."""
PROMISING = 0.3
"""A tap (or swipe) whose kind changed the screen at least this often (a kind never tried: 0.5) is promising: the
explorer goes for promising work on any page it can reach before it tries the rest where it stands."""


def look(frame: np.ndarray, area: Area) -> np.ndarray:
    """An area's look: its gray pixels shrunk to LOOK x LOOK."""
    x1, y1, x2, y2 = (max(0, int(v)) for v in area)
    crop = frame[y1:max(y1 + 1, y2), x1:max(x1 + 1, x2)]
    gray = cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY) if crop.ndim == 3 else crop
    return cv2.resize(gray, (LOOK, LOOK), interpolation=cv2.INTER_AREA).astype(np.float32)


def colour_of(frame: np.ndarray, area: Area) -> np.ndarray | None:
    """An area's median colour (a plate's colour under the words written on it); None for a gray frame."""
    if frame.ndim != 3:
        return None
    x1, y1, x2, y2 = (max(0, int(v)) for v in area)
    step = max(1, min(x2 - x1, y2 - y1) // 16)  # about 16 pixels a side are enough for a median
    crop = frame[y1:max(y1 + 1, y2):step, x1:max(x1 + 1, x2):step].reshape(-1, 3)
    return np.median(crop, axis=0).astype(np.float32) if crop.size else None


def one_plate(frame: np.ndarray, a: Area, b: Area, colour_a: np.ndarray, colour_b: np.ndarray) -> bool:
    """Whether areas `a` and `b` are pieces of one plate: on one band (BAND_OVERLAP of the lower one's height), of
    one colour, joined by pixels of that colour on the band (around the words that cut the plate; a stretch of
    backdrop between two buttons parts them). Where that colour is the backdrop's (it goes on above and below the
    band: bare words on the page, their glyphs cut apart), the pieces are one only as the glyphs of one word are,
    less than a glyph's height apart: the backdrop joins every bare word of a row, and a hub's bare words were put
    off behind the first that led somewhere (generated seed 12: page_oasis, behind one of them, tapped at its 331st
    action of 343, and nine pages behind it never found)."""
    low, high = max(a[1], b[1]), min(a[3], b[3])
    if high - low < BAND_OVERLAP * min(a[3] - a[1], b[3] - b[1]) or \
            float(np.abs(colour_a - colour_b).max()) > COLOUR_NEAR or frame.ndim != 3:
        return False
    x1, x2 = max(0, min(a[0], b[0])), max(a[2], b[2])
    if _open(frame, (x1, low, x2, high), colour_a):
        return max(a[0], b[0]) - min(a[2], b[2]) < min(a[3] - a[1], b[3] - b[1])
    band = frame[max(0, low):high, x1:x2].astype(np.int16)
    plate = (np.abs(band - colour_a.astype(np.int16)).max(axis=2) <= COLOUR_NEAR).astype(np.uint8)
    if not plate.any():
        return False
    _, labels = cv2.connectedComponents(plate, connectivity=4)

    def label(area: Area) -> int:
        part = labels[:, max(0, area[0] - x1):max(0, area[2] - x1)]
        found = np.bincount(part[part > 0].ravel()) if (part > 0).any() else None
        return int(found.argmax()) if found is not None else -1

    first = label(a)
    return first > 0 and first == label(b)


def _open(frame: np.ndarray, band: Area, colour: np.ndarray) -> bool:
    """Whether `colour` goes on above and below `band` (a band's height each way, at its middle third): the colour
    of what the band lies on, not of a plate drawn on it."""
    x1, y1, x2, y2 = band
    h, third = max(1, y2 - y1), max(1, (x2 - x1) // 3)
    strips = [frame[max(0, y1 - h):max(0, y1 - h // 2), x1 + third:x2 - third],
              frame[min(frame.shape[0], y2 + h // 2):y2 + h, x1 + third:x2 - third]]
    return all(s.size and float(np.mean(np.abs(s.astype(np.int16) - colour.astype(np.int16)).max(axis=2)
                                        <= COLOUR_NEAR)) >= 0.5 for s in strips)


class Priority:
    """Kinds' tallies, the taps that did nothing, and the taps put off per page."""

    def __init__(self) -> None:
        self.tried: dict[str, int] = defaultdict(int)
        self.changed: dict[str, int] = defaultdict(int)
        self.kinds: dict[tuple[int, str], str] = {}
        self.looks: dict[tuple[int, str], tuple[Area, np.ndarray]] = {}
        self.duds: list[tuple[int, Area, np.ndarray]] = []
        self.colours: dict[tuple[int, str], int] = {}
        """(page, key) -> the colour family of the tap's region (index into `families`)."""
        self.families: list[list] = []
        """[median colour, taps tried, taps that changed the screen] per colour's family."""
        self.plates: dict[tuple[int, str], set[str]] = {}
        """(page, key) -> the keys of the other taps on the page that are pieces of the same plate (one_plate)."""
        self.off: dict[int, set[str]] = defaultdict(set)
        """page -> keys of taps put off there: sitting where a tap did nothing elsewhere, or on the plate of a tap
        that changed the screen."""
        self.thorough = False
        """Set once no page has other work: put-off taps are work too."""

    def describe(self, page: int, frame: np.ndarray, actions: list[dict[str, Any]]) -> None:
        """Remember the kind and the look of each tap `actions` offers on `page` (first seen as `frame`)."""
        placed: list[tuple[str, Area, np.ndarray]] = []
        for action in actions:
            if action.get("type") != "tap" or not action.get("area"):
                continue
            key = action_key(action)
            if action.get("kind"):
                self.kinds[(page, key)] = action["kind"]
            area = tuple(action["area"])
            seen = look(frame, area)
            self.looks[(page, key)] = (area, seen)
            colour = colour_of(frame, area)
            if colour is not None:
                self.colours[(page, key)] = self._family(colour)
                for other, other_area, other_colour in placed:
                    if one_plate(frame, area, other_area, colour, other_colour):
                        self.plates.setdefault((page, key), set()).add(other)
                        self.plates.setdefault((page, other), set()).add(key)
                placed.append((key, area, colour))
            if any(p != page and box_match(area, a) >= DUD_OVERLAP and _alike(seen, lk) for p, a, lk in self.duds):
                self.off[page].add(key)

    def saw(self, page: int, action: dict[str, Any], changed: bool) -> None:
        """A tap (or swipe) taken on `page` changed the screen, or did nothing."""
        if action.get("type") not in ("tap", "swipe"):
            return
        key = action_key(action)
        kind = self._kind(page, action)
        if kind:
            self.tried[kind] += 1
            self.changed[kind] += changed
        if (page, key) in self.colours:
            family = self.families[self.colours[(page, key)]]
            family[1] += 1
            family[2] += changed
        if changed:
            self.off[page].update(self.plates.get((page, key), ()))
        if changed or (page, key) not in self.looks:
            return
        area, seen = self.looks[(page, key)]
        self.duds.append((page, area, seen))
        for (other, other_key), (a, lk) in self.looks.items():
            if other != page and box_match(area, a) >= DUD_OVERLAP and _alike(seen, lk):
                self.off[other].add(other_key)

    def _kind(self, page: int, action: dict[str, Any]) -> str | None:
        if action.get("type") == "swipe":
            return "swipe"
        return self.kinds.get((page, action_key(action))) or action.get("kind")

    def promising(self, page: int, action: dict[str, Any]) -> bool:
        """Whether `action` is worth going to another page for: a tap or a swipe whose kind has changed the screen
        at least PROMISING of the time (never the back key: it leads where the explorer came from)."""
        if action.get("type") not in ("tap", "swipe") or action.get("grid"):
            return False
        return self.score(page, action) >= PROMISING

    def rate(self, kind: str | None) -> float:
        """How often taps of `kind` changed the screen (a Beta(1, 1) prior's mean)."""
        if not kind:
            return 0.5
        return (self.changed[kind] + 1) / (self.tried[kind] + 2)

    def score(self, page: int, action: dict[str, Any]) -> float:
        """How likely `action` changes the screen: its kind's rate, averaged with its colour family's once taps of
        that colour were tried."""
        rate = self.rate(self._kind(page, action))
        family = self.families[self.colours[(page, action_key(action))]] \
            if (page, action_key(action)) in self.colours else None
        return rate if family is None or not family[1] else (rate + (family[2] + 1) / (family[1] + 2)) / 2

    def _family(self, colour: np.ndarray) -> int:
        for i, (seen, _, _) in enumerate(self.families):
            if float(np.abs(seen - colour).max()) <= COLOUR_NEAR:
                return i
        self.families.append([colour, 0, 0])
        return len(self.families) - 1

    def put_off(self, page: int, action: dict[str, Any]) -> bool:
        """Whether `action` waits for the thorough pass."""
        if self.thorough or action.get("type") != "tap" or action.get("grid"):
            return False
        return action_key(action) in self.off.get(page, ())

    def order(self, page: int, actions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """`actions` (untried ones, in the page's order) with the taps of each run between two other actions
        sorted by their score (kind and colour), best first (the back key and the swipes keep their places)."""
        out: list[dict[str, Any]] = []
        run: list[dict[str, Any]] = []
        for action in actions + [{}]:
            if action.get("type") == "tap" and not action.get("grid"):
                run.append(action)
                continue
            out.extend(sorted(run, key=lambda a: -self.score(page, a)))
            run = []
            if action:
                out.append(action)
        return out

    def second_try(self, page: Any, drops: bool) -> dict[str, Any] | None:
        """When the game `drops` taps, the best of the visible actions on `page` (engine.explore.nodes.PageNode)
        that did nothing once; the explorer tries it before any grid (a grid of taps finds a button nothing marks,
        a second try one a dropped tap hid). Generated game 1 under chaos dropped the taps on two of a hub's buttons,
        and the hub's grid (26 taps) went first: the two pages behind them, and the seven behind those, were never
        found."""
        if not drops:
            return None
        again = [a for a in page.actions if not a.get("grid") and page.tried[action_key(a)] == 1
                 and set(page.results[action_key(a)]) == {("same",)}]
        return self.order(page.id, again)[0] if again else None


def first_order(actions: list[dict[str, Any]], came_by: str | None, detour: bool) -> list[dict[str, Any]]:
    """A new page's actions (engine.explore.regions.page_actions) in the order they are first tried, given the key of
    the action that led to it and whether it is a detour. Reached by a swipe, its swipes first: a tab of a row
    switched by swiping, a carousel's card, has its neighbours a swipe away, and swipes came after every region
    (issue 45, seed 1: two tabs never reached in 10 minutes, their links the swipes of a page whose taps were not all
    tried yet). A detour (a new screen where the same action led to a known page before: an event's splash, a screen
    the game shows at random), the back key first, which leaves it."""
    out = sorted(actions, key=lambda a: a["type"] != "swipe") if came_by and came_by.startswith("swipe:") else actions
    return sorted(out, key=lambda a: a["type"] != "key") if detour else list(out)


def _alike(a: np.ndarray, b: np.ndarray) -> bool:
    return float(np.abs(a - b).mean()) < LOOK_SAME
