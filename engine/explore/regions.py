"""Where to tap on a frame nobody has described: regions that stand out from what surrounds them (buttons, icons,
labels), found as connected blobs of local contrast on a shrunk copy of the frame.

A frame is shrunk and blurred (fine textures average out), compared with a median-filtered copy of itself (the
local backdrop), and the pixels that differ most become blobs, split where empty rows or columns cross them; blobs
of button size are the candidates (a long one also offers its ends: an arrow beside a title). Where nothing stands
out, grids of taps over a page or over a popup's box stand in for regions. Nothing here knows a game's look. The
region finder itself is engine.observe.spots, shared with the navigator's dismissal search; here are what only the
explorer does with it: the holes in bars, the grids over a page and a page's first actions.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from engine.explore.sketch import cell_size
from engine.observe.spots import (  # the shared region finder; the rest are re-exported for dismissal's `spots`
    MAX_SHARE,
    MIN_SIDE,
    SHRINK,
    Area,
    _found,
    _rectangles,
    box_grid,
    centre,
    inside,
    outside,
    tappable,
    within_box,
)


BAR_MEMBERS = 3
"""Blobs sharing one band that make a bar (a tab bar, a menu bar) whose holes are worth a tap."""
BAND_OVERLAP = 0.6
"""Share of the thinner of two blobs' extent across the bar that must overlap for both to be in one band."""
GAP_SHARE = 0.75
"""A hole in a bar at least this share of the bar's usual button width may hold a button."""
GAP_SLOTS = 4
"""Slots one hole in a bar is split into at most (a hole wanting more is a stretch of backdrop, not a hole)."""
MAX_GAP_SLOTS = 8
"""Taps offered in the holes of a frame's bars at most."""
EMPTY = 0.2
"""Largest share of a hole's slot that stands out: a slot fuller than that is a panel's inside, not a hole."""


def bar_gaps(frame: np.ndarray, *, limit: int = MAX_GAP_SLOTS) -> list[Area]:
    """Where a row (or column) of buttons has a hole: a bar of BAR_MEMBERS blobs or more that share one band, and
    an empty stretch between two of them wide enough for a button of the bar's usual width, split into slots of
    about that width. A button drawn too faintly to stand out (or not drawn at all) in a tab bar or a menu bar is
    found here without a grid of taps over the whole screen."""
    mask, found = _found(frame)
    areas = [a for a, _ in found]
    out: list[Area] = []
    for axis in (0, 1):  # 0: a horizontal bar (members side by side), 1: a vertical one
        lo, hi = (1, 3) if axis == 0 else (0, 2)  # the band's coordinates
        along = (0, 2) if axis == 0 else (1, 3)  # the bar's direction
        bands: list[list[Area]] = []
        for area in sorted(areas, key=lambda a: (a[lo] + a[hi]) / 2):
            for band in bands:
                top, bottom = min(b[lo] for b in band), max(b[hi] for b in band)
                overlap = min(bottom, area[hi]) - max(top, area[lo])
                if overlap >= BAND_OVERLAP * min(area[hi] - area[lo], bottom - top):
                    band.append(area)
                    break
            else:
                bands.append([area])
        for band in (b for b in bands if len(b) >= BAR_MEMBERS):
            band.sort(key=lambda a: a[along[0]])
            width = float(np.median([a[along[1]] - a[along[0]] for a in band]))
            top, bottom = min(b[lo] for b in band), max(b[hi] for b in band)
            for i, nxt in enumerate(band[1:], 1):
                start, end = max(b[along[1]] for b in band[:i]), nxt[along[0]]
                n = int(round((end - start) / width)) if width > 0 else 0
                if end - start < GAP_SHARE * width or n > GAP_SLOTS:
                    continue
                step = (end - start) / max(1, n)
                for k in range(max(1, n)):
                    a, b = int(start + k * step), int(start + (k + 1) * step)
                    slot = (a, top, b, bottom) if axis == 0 else (top, a, bottom, b)
                    inside = mask[slot[1] // SHRINK:slot[3] // SHRINK, slot[0] // SHRINK:slot[2] // SHRINK]
                    if inside.size and inside.mean() < EMPTY:
                        out.append(slot)
    return out[:limit]


COVERED = 0.5
"""Share of an outline that a region found (or an outline kept) covers from which the outline is no tap of its own."""


def outlined(frame: np.ndarray, found: list[Area]) -> list[Area]:
    """Rectangles outlined on `frame` (engine.observe.spots._rectangles: an outline that fills its box) of a button's
    size, inside which nothing stands out (EMPTY), whose edge runs along all four sides (SIDES) and that no region
    found covers (COVERED): a button drawn faintly (half blended into the backdrop) keeps its border and its
    letters' edges though its fill does not stand out (generated seed 4: two of the hub's four buttons, and the 20
    pages behind them, were found only by a grid of taps that 10 minutes never reached). Innermost first: an
    outline drawn twice (a border's two edges) is one tap."""
    h, w = frame.shape[:2]
    mask = _found(frame)[0]
    edges = cv2.Canny(cv2.GaussianBlur(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY), (3, 3), 0), 20, 60) > 0
    out: list[Area] = []
    for box in sorted(_rectangles(frame, least=MIN_SIDE * MIN_SIDE), key=lambda b: (b[2] - b[0]) * (b[3] - b[1])):
        bw, bh = box[2] - box[0], box[3] - box[1]
        if min(bw, bh) < MIN_SIDE or bw * bh > MAX_SHARE * w * h:
            continue
        inside = mask[box[1] // SHRINK:box[3] // SHRINK, box[0] // SHRINK:box[2] // SHRINK]
        if inside.size and inside.mean() >= EMPTY or any(_overlap(a, box) >= COVERED * bw * bh for a in found + out):
            continue  # what stands out inside it is offered already (or it is a panel of things that stand out)
        if _sides(edges, box) >= SIDES:
            out.append(box)
    return out


SIDES = 0.8
"""Share of each of its four sides an outline's edge must run along: a button's border or the edge of its fill is
straight and whole, the outline of a word's letters (a label, a counter: real frames hold many) is not."""


def _sides(edges: np.ndarray, box: Area) -> float:
    """The least share, over the four sides of `box`, of positions with an edge within 2 pixels of the side."""
    x1, y1, x2, y2 = box
    h, w = edges.shape
    shares = []
    for band, axis in ((edges[max(0, y1 - 2):y1 + 3, x1:x2], 0), (edges[max(0, y2 - 3):min(h, y2 + 2), x1:x2], 0),
                       (edges[y1:y2, max(0, x1 - 2):x1 + 3], 1), (edges[y1:y2, max(0, x2 - 3):min(w, x2 + 2)], 1)):
        shares.append(float(band.any(axis=axis).mean()) if band.size else 0.0)
    return min(shares)


# ------------------------------------------------------------------ grids: taps where nothing stands out


def grid_actions(size: tuple[int, int], taken: list[dict[str, Any]], level: int) -> list[dict[str, Any]]:
    """Taps no tried region covers, for a page hiding something (a title screen that starts on a tap anywhere, a
    button drawn too faintly to stand out): level 1 every other sketch cell's centre (big targets, a quarter of the
    taps), level 2 the cells level 1 left out."""
    w, h = size
    cell = cell_size(size)
    areas = [a["area"] for a in taken if a.get("area")] + [
        (a["point"][0] - 2, a["point"][1] - 2, a["point"][0] + 3, a["point"][1] + 3) for a in taken if a.get("grid")]
    out = []
    for row, y in enumerate(range(cell // 2, h, cell)):
        for col, x in enumerate(range(cell // 2, w, cell)):
            coarse = row % 2 == 1 and col % 2 == 1
            if coarse != (level == 1):
                continue
            if not any(a[0] <= x < a[2] and a[1] <= y < a[3] for a in areas):
                out.append({"type": "tap", "point": [x, y], "grid": True})
    return out


def _swipes(size: tuple[int, int]) -> list[dict[str, Any]]:
    w, h = size
    cx, cy = w // 2, h // 2
    dx, dy = int(w * 0.3), int(h * 0.3)
    return [{"type": "swipe", "start": [cx + dx, cy], "end": [cx - dx, cy]},
            {"type": "swipe", "start": [cx - dx, cy], "end": [cx + dx, cy]},
            {"type": "swipe", "start": [cx, cy + dy], "end": [cx, cy - dy]},
            {"type": "swipe", "start": [cx, cy - dy], "end": [cx, cy + dy]}]


def page_actions(frame: np.ndarray, moving: np.ndarray | None = None) -> list[dict[str, Any]]:
    """What to try on a page first seen as `frame`: its tappable regions, the holes in its bars of buttons (where a
    button may be drawn too faintly to stand out), the back key, four swipes; regions that lie mostly on `moving`
    cells (engine.explore.effects.Settled.moving: swaying art, a ticking timer, sparks) after all of those: what
    moves by itself is seldom a button, and a generated game's page offered ten of them before its last link."""
    h, w = frame.shape[:2]
    regions, gaps = tappable(frame), bar_gaps(frame)
    pieces = [a for a, alone in _found(frame)[1] if not alone]
    outlines = outlined(frame, regions + gaps)
    cell = cell_size((w, h))
    taps = [{"type": "tap", "point": list(centre(a)), "area": list(a),
             "kind": tap_kind(a, (w, h), gap=a in gaps, piece=any(_within(a, p) for p in pieces),
                              outline=a in outlines, moving=_on_moving(list(a), moving, cell))}
            for a in regions + gaps + outlines]
    still = [t for t in taps if not t["kind"].endswith("moving")]
    return still + [{"type": "key", "key": "back"}] + _swipes((w, h)) + [t for t in taps if t not in still]


BAND = 0.1
"""Share of the screen's height that is its top (or bottom) band, where games keep their bars."""


def tap_kind(area: Area, size: tuple[int, int], *, gap: bool, piece: bool, moving: bool, outline: bool = False
             ) -> str:
    """What a tap candidate is, as engine.explore.priority tallies it: a hole in a bar, an outline that does not
    stand out, a piece cut from a bigger blob or a blob on its own; tiny, small or large against the grid's cell; in
    the top band, the bottom band (with its third across: bars keep their buttons in place) or between; on cells
    that move by themselves or still."""
    w, h = size
    cell = cell_size(size)
    share = (area[2] - area[0]) * (area[3] - area[1]) / float(cell * cell)
    y, x = (area[1] + area[3]) / 2 / h, (area[0] + area[2]) / 2 / w
    band = "top" if y < BAND else "bottom" if y > 1 - BAND else "middle"
    if band != "middle":
        band += ("-left", "-centre", "-right")[min(2, int(x * 3))]
    return "/".join(("gap" if gap else "outline" if outline else "piece" if piece else "blob",
                     "tiny" if share < 0.15 else "small" if share < 0.6 else "large", band,
                     "moving" if moving else "still"))


def _overlap(a: Area, b: Area) -> int:
    return max(0, min(a[2], b[2]) - max(a[0], b[0])) * max(0, min(a[3], b[3]) - max(a[1], b[1]))


def _within(a: Area, b: Area) -> bool:
    return b[0] <= a[0] and b[1] <= a[1] and a[2] <= b[2] and a[3] <= b[3]


def _on_moving(area: list[int], moving: np.ndarray | None, cell: int) -> bool:
    """Whether most of `area`'s sketch cells were seen moving."""
    if moving is None:
        return False
    x1, y1, x2, y2 = area
    rows, cols = moving.shape
    block = moving[min(rows - 1, y1 // cell):min(rows, max(y1 // cell + 1, -(-y2 // cell))),
                   min(cols - 1, x1 // cell):min(cols, max(x1 // cell + 1, -(-x2 // cell)))]
    return bool(block.size) and float(block.mean()) > 0.5
