"""Where to tap on a frame nobody has described: regions that stand out from what surrounds them (buttons, icons,
labels), found as connected blobs of local contrast on a shrunk copy of the frame.

A frame is shrunk and blurred (fine textures average out), compared with a median-filtered copy of itself (the
local backdrop), and the pixels that differ most become blobs, split where empty rows or columns cross them; blobs
of button size are the candidates (a long one also offers its ends: an arrow beside a title). Nothing here knows a
game's look.
"""

from __future__ import annotations

import cv2
import numpy as np

Area = tuple[int, int, int, int]

SHRINK = 2
MAX_REGIONS = 24
MIN_SIDE = 16
"""Smallest blob side (frame pixels) worth a tap: a thumb is wider than that."""
MAX_SHARE = 0.25
"""Largest blob, as a share of the frame: bigger is a backdrop, not a button."""
GAP = 3
"""Shrunk pixels of (nearly) empty rows or columns that split one blob into two (buttons side by side)."""
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
                    if axis == 0:
                        return _cut(mask[:, :i], x0, y0, depth + 1) + _cut(mask[:, j:], x0 + j, y0, depth + 1)
                    return _cut(mask[:i, :], x0, y0, depth + 1) + _cut(mask[j:, :], x0, y0 + j, depth + 1)
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


def tappable(frame: np.ndarray, *, within: Area | None = None, limit: int = MAX_REGIONS) -> list[Area]:
    """Candidate tap areas on `frame` (those centred inside `within` when given), biggest first."""
    h, w = frame.shape[:2]
    mask = _mask(frame)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=4)
    found: list[Area] = []
    for i in range(1, count):
        x, y, bw, bh, _ = (int(v) for v in stats[i])
        for box in _cut((labels[y:y + bh, x:x + bw] == i).astype(np.uint8), x, y):
            area = (box[0] * SHRINK, box[1] * SHRINK, min(w, box[2] * SHRINK), min(h, box[3] * SHRINK))
            fw, fh = area[2] - area[0], area[3] - area[1]
            if fw < MIN_SIDE or fh < MIN_SIDE or fw * fh > MAX_SHARE * w * h:
                continue
            found.extend(a for a in _ends(area) if within is None or _inside(_centre(a), within))
    found.sort(key=lambda a: -min((a[2] - a[0]) * (a[3] - a[1]), 20000))
    return _distinct(found)[:limit]


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
