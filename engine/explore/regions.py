"""Where to tap on a frame nobody has described: regions that stand out from what surrounds them (buttons, icons,
labels), found as connected blobs of local contrast on a shrunk copy of the frame.

A frame is shrunk and blurred (fine textures average out), compared with a median-filtered copy of itself (the
local backdrop), and the pixels that differ most become blobs, split where empty rows or columns cross them; blobs
of button size are the candidates (a long one also offers its ends: an arrow beside a title). Where nothing stands
out, grids of taps over a page or over a popup's box stand in for regions. Nothing here knows a game's look.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from engine.explore.sketch import cell_size

Area = tuple[int, int, int, int]

SHRINK = 2
MAX_REGIONS = 24
MIN_SIDE = 16
"""Smallest blob side (frame pixels) worth a tap: a thumb is wider than that."""
MIN_ICON = 10
"""Smallest side of a blob of at least MIN_SIDE squared by area: a small icon (a home button) of which only the part
that stands out from the backdrop is found."""
MAX_SHARE = 0.25
"""Largest blob, as a share of the frame: bigger is a backdrop, not a button."""
GAP = 3
"""Shrunk pixels of (nearly) empty rows or columns that split one blob into two (buttons side by side)."""
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
ELONGATED = 4.0
"""A blob this many times wider than tall (or taller than wide) also offers its two ends (an icon beside a label)."""


def _mask(frame: np.ndarray) -> np.ndarray:
    """Pixels of the shrunk frame that differ from their neighbourhood's median colour (the local backdrop)."""
    h, w = frame.shape[:2]
    small = cv2.resize(frame, (max(1, w // SHRINK), max(1, h // SHRINK)), interpolation=cv2.INTER_AREA)
    small = cv2.GaussianBlur(small, (5, 5), 0)
    lab = cv2.cvtColor(small, cv2.COLOR_BGR2LAB).astype(np.float32)
    k = min(255, max(3, (min(small.shape[:2]) // 2) | 1))
    backdrop = cv2.cvtColor(cv2.medianBlur(small, k), cv2.COLOR_BGR2LAB).astype(np.float32)
    diff = np.abs(lab - backdrop).max(axis=2)
    mask = (diff > max(25.0, float(np.percentile(diff, 80)))).astype(np.uint8)
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    return cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))


def _cut(mask: np.ndarray, x0: int, y0: int, depth: int = 0) -> list[Area]:
    """Split a blob along empty runs of columns or rows (a recursive XY cut); boxes in shrunk pixels."""
    ys, xs = np.nonzero(mask)
    if len(xs) == 0:
        return []
    mask = mask[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
    x0, y0 = x0 + int(xs.min()), y0 + int(ys.min())
    h, w = mask.shape
    if depth < 8:
        for axis in (0, 1):
            profile = mask.mean(axis=axis)
            # Rows (columns) much emptier than the blob's full ones: a gap, even where the backdrop estimate
            # leaks into it (a gradient behind two buttons leaves half the gap marked).
            low = profile < max(0.08, 0.6 * float(np.percentile(profile, 75)))
            i, n = 1, len(low)
            while i < n:
                if not low[i]:
                    i += 1
                    continue
                j = i
                while j < n and low[j]:
                    j += 1
                if j - i >= GAP and j < n:
                    # The run is cut out as a piece of its own, not thrown away: a lower button between two
                    # taller ones (a bar of buttons of unequal heights) is such a run, and a leak of the backdrop
                    # estimate left in a real gap is either too thin to keep or one tap more.
                    if axis == 0:
                        return (_cut(mask[:, :i], x0, y0, depth + 1) + _cut(mask[:, i:j], x0 + i, y0, depth + 1)
                                + _cut(mask[:, j:], x0 + j, y0, depth + 1))
                    return (_cut(mask[:i, :], x0, y0, depth + 1) + _cut(mask[i:j, :], x0, y0 + i, depth + 1)
                            + _cut(mask[j:, :], x0, y0 + j, depth + 1))
                i = j
    return [(x0, y0, x0 + w, y0 + h)]


def _ends(area: Area) -> list[Area]:
    x1, y1, x2, y2 = area
    w, h = x2 - x1, y2 - y1
    if w > ELONGATED * h:
        return [area, (x1, y1, x1 + h, y2), (x2 - h, y1, x2, y2)]
    if h > ELONGATED * w:
        return [area, (x1, y1, x2, y1 + w), (x1, y2 - w, x2, y2)]
    return [area]


def _found(frame: np.ndarray) -> tuple[np.ndarray, list[tuple[Area, bool]]]:
    """The shrunk mask, and the blobs of button size on `frame` (frame pixels), each with whether it stands alone
    (a whole connected blob, not a piece cut from a bigger one: a panel's fragments are poorer guesses)."""
    h, w = frame.shape[:2]
    mask = _mask(frame)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=4)
    found: list[tuple[Area, bool]] = []
    for i in range(1, count):
        x, y, bw, bh, _ = (int(v) for v in stats[i])
        boxes = _cut((labels[y:y + bh, x:x + bw] == i).astype(np.uint8), x, y)
        for box in boxes:
            area = (box[0] * SHRINK, box[1] * SHRINK, min(w, box[2] * SHRINK), min(h, box[3] * SHRINK))
            fw, fh = area[2] - area[0], area[3] - area[1]
            small = fw < MIN_SIDE or fh < MIN_SIDE
            if small and (min(fw, fh) < MIN_ICON or fw * fh < MIN_SIDE * MIN_SIDE * 0.7) \
                    or fw * fh > MAX_SHARE * w * h:
                continue
            found.append((area, len(boxes) == 1))
    return mask, found


def tappable(frame: np.ndarray, *, within: Area | None = None, limit: int = MAX_REGIONS) -> list[Area]:
    """Candidate tap areas on `frame` (those centred inside `within` when given): blobs that stand alone first (a
    small home icon in a corner before the pieces of a big panel), biggest first within each."""
    found = [(a, alone) for area, alone in _found(frame)[1] for a in _ends(area)
             if within is None or _inside(_centre(a), within)]
    found.sort(key=lambda f: (not f[1], -min((f[0][2] - f[0][0]) * (f[0][3] - f[0][1]), 20000)))
    return _distinct([a for a, _ in found])[:limit]


def within_box(frame: np.ndarray, box: Area, *, limit: int = 8) -> list[Area]:
    """Candidate tap areas inside a dialog's `box`: those that stand out from the dialog itself first (found on the
    box's own crop: a button on a bright panel over a dimmed page is one blob with the panel on the whole frame), then
    those found on the whole frame."""
    x1, y1, x2, y2 = (max(0, int(v)) for v in box)
    own: list[Area] = []
    if min(x2 - x1, y2 - y1) >= 2 * MIN_SIDE:
        own = [(a[0] + x1, a[1] + y1, a[2] + x1, a[3] + y1) for a in tappable(frame[y1:y2, x1:x2], limit=limit)]
    return _distinct(own + tappable(frame, within=box, limit=limit))[:limit]


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


def _centre(area: Area) -> tuple[int, int]:
    return (area[0] + area[2]) // 2, (area[1] + area[3]) // 2


def centre(area: Area) -> tuple[int, int]:
    """The point a tap on `area` goes to."""
    return _centre(area)


def _inside(point: tuple[int, int], area: Area) -> bool:
    return area[0] <= point[0] < area[2] and area[1] <= point[1] < area[3]


def _distinct(areas: list[Area]) -> list[Area]:
    """Drop an area whose centre is within a few pixels of one already kept (one tap does for both)."""
    kept: list[Area] = []
    for area in areas:
        cx, cy = _centre(area)
        if not any(abs(cx - kx) < 12 and abs(cy - ky) < 12 for kx, ky in map(_centre, kept)):
            kept.append(area)
    return kept


def outside(box: Area, size: tuple[int, int]) -> tuple[int, int]:
    """A point outside `box` as far from it as the screen allows (a tap on a dimmed backdrop)."""
    w, h = size
    corners = [(w // 20, h // 2), (w - w // 20, h // 2), (w // 2, h - h // 20), (w // 2, h // 20)]
    return max(corners, key=lambda p: min(abs(p[0] - (box[0] + box[2]) / 2) / max(1, box[2] - box[0]),
                                          10.0) + min(abs(p[1] - (box[1] + box[3]) / 2) / max(1, box[3] - box[1]),
                                                      10.0) if not _inside(p, box) else -1.0)


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


def box_grid(box: tuple[int, int, int, int], size: tuple[int, int], taken: list[dict[str, Any]]
             ) -> list[dict[str, Any]]:
    """Taps over a popup's box: first its corners a step in (a dialog's close cross sits in a top corner, a back
    arrow top left, "continue" low on the right), then a grid of half sketch cells, coarse to fine (every fourth
    point of each row and column first, then every second, then the rest: a big target is hit early wherever it is),
    each level from the bottom right (a dialog's buttons sit low); points a tried region covers are left out."""
    step = max(4, cell_size(size) // 2)
    areas = [a["area"] for a in taken if a.get("area")]

    def free(x: int, y: int) -> bool:
        return not any(a[0] <= x < a[2] and a[1] <= y < a[3] for a in areas)

    x1, y1, x2, y2 = box
    corners: list[tuple[int, int]] = []
    for x, y in ((x2 - step, y1 + step), (x2 - step, y2 - step), (x1 + step, y1 + step), (x1 + step, y2 - step)):
        if x1 < x < x2 and y1 < y < y2 and free(x, y) and (x, y) not in corners:
            corners.append((x, y))
    points = []
    for i, y in enumerate(range(y2 - step // 2, y1, -step)):
        for j, x in enumerate(range(x2 - step // 2, x1, -step)):
            if free(x, y) and not any(abs(x - cx) < step // 2 and abs(y - cy) < step // 2 for cx, cy in corners):
                level = 0 if i % 4 == 0 and j % 4 == 0 else 1 if i % 2 == 0 and j % 2 == 0 else 2
                points.append((level, i, j, x, y))
    return [{"type": "tap", "point": [x, y], "grid": True} for x, y in corners] + \
        [{"type": "tap", "point": [x, y], "grid": True} for *_, x, y in sorted(points)]


def inside(action: dict[str, Any], box: tuple[int, int, int, int]) -> bool:
    """Whether `action` acts on `box`: a key does, a tap when its point lies inside."""
    if action.get("type") != "tap":
        return action.get("type") == "key"
    x, y = action["point"]
    return box[0] <= x < box[2] and box[1] <= y < box[3]


def _swipes(size: tuple[int, int]) -> list[dict[str, Any]]:
    w, h = size
    cx, cy = w // 2, h // 2
    dx, dy = int(w * 0.3), int(h * 0.3)
    return [{"type": "swipe", "start": [cx + dx, cy], "end": [cx - dx, cy]},
            {"type": "swipe", "start": [cx - dx, cy], "end": [cx + dx, cy]},
            {"type": "swipe", "start": [cx, cy + dy], "end": [cx, cy - dy]},
            {"type": "swipe", "start": [cx, cy - dy], "end": [cx, cy + dy]}]


def page_actions(frame: np.ndarray) -> list[dict[str, Any]]:
    """What to try on a page first seen as `frame`: its tappable regions, the holes in its bars of buttons (where a
    button may be drawn too faintly to stand out), the back key, four swipes."""
    h, w = frame.shape[:2]
    found = tappable(frame) + bar_gaps(frame)
    taps = [{"type": "tap", "point": list(centre(a)), "area": list(a)} for a in found]
    return taps + [{"type": "key", "key": "back"}] + _swipes((w, h))
