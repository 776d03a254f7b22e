"""Where to tap on a dialog nobody described: regions that stand out inside its box, a point outside it, and a
grid over it (the candidates of the dismissal search, engine.navigation.dismissal).

A frame is shrunk and blurred (fine textures average out), compared with a median-filtered copy of itself (the
local backdrop), and the pixels that differ most become blobs, split where empty rows or columns cross them; blobs
of button size are the candidates. Nothing here knows a game's look. (The explorer finds a page's regions the same
way, engine.explore.regions, and hands its own functions to the search: ``spots`` is any object with
``within_box``, ``outside``, ``box_grid`` and ``centre``.)
"""

from __future__ import annotations

from typing import Any

import hashlib

import cv2
import numpy as np

Area = tuple[int, int, int, int]

CELLS_LONG = 16
"""Grid cells along the frame's long side (engine.explore.sketch's): a grid step is half a cell."""


def cell_size(size: tuple[int, int]) -> int:
    return max(8, max(size) // CELLS_LONG)


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
INSET = 200
"""A dialog's box is searched inside a margin of its frame's longer side over this (at least 3 pixels)."""
BACKDROP_SHARE = 0.3
"""Share of a frame one colour (16 levels a channel) must fill to be its plain backdrop (_shared_backdrop)."""
PANEL_OF_BOX = 0.5
"""Share of a dialog's box from which a region tried is its panel, not a button (its points stay in the grid)."""
ELONGATED = 4.0
"""A blob this many times wider than tall (or taller than wide) also offers its two ends (an icon beside a label)."""
def _mask(frame: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pixels of the shrunk frame that differ from their neighbourhood's median colour (the local backdrop): blurred
    and closed (blobs), and as drawn (the thin runs of backdrop between buttons drawn close together, which the blur
    and the closing fill: engine.observe.spots._split_solid)."""
    h, w = frame.shape[:2]
    shrunk = cv2.resize(frame, (max(1, w // SHRINK), max(1, h // SHRINK)), interpolation=cv2.INTER_AREA)
    small = cv2.GaussianBlur(shrunk, (5, 5), 0)
    lab = cv2.cvtColor(small, cv2.COLOR_BGR2LAB).astype(np.float32)
    k = min(255, max(3, (min(small.shape[:2]) // 2) | 1))
    backdrop = cv2.cvtColor(cv2.medianBlur(small, k), cv2.COLOR_BGR2LAB).astype(np.float32)
    diff = np.abs(lab - backdrop).max(axis=2)
    level = max(25.0, float(np.percentile(diff, 80)))
    mask = diff > level
    sharp = cv2.cvtColor(shrunk, cv2.COLOR_BGR2LAB).astype(np.float32)
    drawn = np.abs(sharp - backdrop).max(axis=2) > level
    shared = _shared_backdrop(small, lab)
    if shared is not None:  # the frame's own backdrop is never a region, whatever colour its neighbourhood has
        mask &= np.abs(lab - shared).max(axis=2) > 25.0
        drawn &= np.abs(sharp - shared).max(axis=2) > 25.0
    plain = _plain_areas(small, lab)
    mask &= ~plain
    drawn &= ~plain
    mask = mask.astype(np.uint8)
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    return cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8)), drawn


def _shared_backdrop(small: np.ndarray, lab: np.ndarray) -> np.ndarray | None:
    """The LAB colour of a plain backdrop that fills BACKDROP_SHARE of the frame or more, else None. Beside a big
    drawing the neighbourhood's median is the drawing's colour, and the plain backdrop between the drawing and a
    button beside it stood out too: one blob, cut into pieces none of which was the button (generated seed 8: a small
    icon beside a swaying figure, never tapped, and the 4 pages behind it never found)."""
    keys, counts = _colours(small)
    top = int(np.argmax(counts))
    if counts[top] < BACKDROP_SHARE * keys.size:
        return None
    return lab[::4, ::4].reshape(-1, 3)[keys == top].mean(axis=0)


def _colours(small: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every 16th pixel's colour (16 levels a channel) as one key, and how many pixels have each key: enough to tell
    a colour that fills 5 % of the frame."""
    bins = (small[::4, ::4] // 16).reshape(-1, 3).astype(np.int32)
    keys = (bins[:, 0] << 8) | (bins[:, 1] << 4) | bins[:, 2]
    return keys, np.bincount(keys, minlength=4096)


PLAIN_SHARE = 0.05
"""Share of the frame one connected area of one colour must fill to be a plain surface (a top bar, a panel), not a
region: _plain_areas."""
PLAIN_NEAR = 12.0
"""LAB distance within which a pixel has a plain surface's colour."""


def _plain_areas(small: np.ndarray, lab: np.ndarray, colours: int = 4) -> np.ndarray:
    """Pixels of connected areas of one colour that fill PLAIN_SHARE of the frame each (a top bar across the screen,
    a panel): surfaces that buttons sit on, never regions themselves. A top bar stood out from a backdrop of another
    colour, and the button at its end was cut from it as a piece whose centre missed the button (generated seed 39:
    the back button of 35 pages). Buttons of one colour that together fill as much are apart, each too small."""
    keys, counts = _colours(small)
    plain = np.zeros(lab.shape[:2], bool)
    least = PLAIN_SHARE * lab.shape[0] * lab.shape[1]
    lab8 = lab.astype(np.uint8)  # (exact: LAB of an 8-bit frame)
    sample_lab = lab[::4, ::4].reshape(-1, 3)
    for key in np.argsort(counts)[::-1][:colours]:
        if counts[key] < PLAIN_SHARE * keys.size:
            break
        colour = sample_lab[keys == key].mean(axis=0)
        near = cv2.inRange(lab8, np.clip(colour - PLAIN_NEAR, 0, 255), np.clip(colour + PLAIN_NEAR, 0, 255))
        count, labels, stats, _ = cv2.connectedComponentsWithStats(near, connectivity=4)
        for i in range(1, count):
            if stats[i, cv2.CC_STAT_AREA] >= least:
                plain |= labels == i
    return plain


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


SOLID = 0.6
"""Share of a blob's row (or column) drawn from which the row is a button's body (_split_solid)."""
THIN = 0.1
"""Share of a blob's row (or column) drawn at most for the row to be the backdrop between two buttons."""


def _split_solid(drawn: np.ndarray, x0: int, y0: int, depth: int = 0) -> list[Area]:
    """Split a blob (shrunk pixels, `drawn` its pixels as drawn) where a thin run of backdrop parts two solid
    bodies: tabs or icons a few pixels apart, which the blur and the closing made one blob (generated seed 5's tab
    bar, offered only its two ends; seed 6's column of three icons, tapped only in the middle: the pages behind the
    others were never found). Each side must be a button's size (MIN_ICON); text, whose letters part on runs of
    backdrop too, has no solid rows and is never split."""
    h, w = drawn.shape
    least = max(1, MIN_ICON // SHRINK)
    if depth < 6 and h and w:
        for axis in (0, 1):
            profile = drawn.mean(axis=axis)
            n, i = len(profile), least
            while i < n - least:
                if profile[i] > THIN:
                    i += 1
                    continue
                j = i
                while j < n and profile[j] <= THIN:
                    j += 1
                if j <= n - least and profile[max(0, i - 2):i].max() >= SOLID and profile[j:j + 2].max() >= SOLID:
                    if axis == 0:
                        return (_split_solid(drawn[:, :i], x0, y0, depth + 1)
                                + _split_solid(drawn[:, j:], x0 + j, y0, depth + 1))
                    return (_split_solid(drawn[:i], x0, y0, depth + 1)
                            + _split_solid(drawn[j:], x0, y0 + j, depth + 1))
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


_LAST_FOUND: tuple[bytes, tuple[np.ndarray, tuple[tuple[Area, bool], ...]]] | None = None
"""The last frame's digest and what `_found` found on it: a page's first look asks four times (its regions, the
holes in its bars, its outlines, its pieces), 110 ms each on a 1280x720 frame, where the digest costs 4 ms."""


def _found(frame: np.ndarray) -> tuple[np.ndarray, tuple[tuple[Area, bool], ...]]:
    """The shrunk mask (read-only), and the blobs of button size on `frame` (frame pixels), each with whether it
    stands alone (a whole connected blob, not a piece cut from a bigger one: a panel's fragments are poorer
    guesses). The last frame's answer is kept (`_LAST_FOUND`)."""
    global _LAST_FOUND
    digest = hashlib.blake2b(np.ascontiguousarray(frame).data, digest_size=16, person=str(frame.shape).encode()[:16]
                             ).digest()
    last = _LAST_FOUND
    if last is not None and last[0] == digest:
        return last[1]
    answer = _find(frame)
    answer[0].flags.writeable = False
    _LAST_FOUND = (digest, answer)
    return answer


def _find(frame: np.ndarray) -> tuple[np.ndarray, tuple[tuple[Area, bool], ...]]:
    h, w = frame.shape[:2]
    mask, drawn = _mask(frame)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=4)
    found: list[tuple[Area, bool]] = []
    for i in range(1, count):
        x, y, bw, bh, _ = (int(v) for v in stats[i])
        boxes = _cut((labels[y:y + bh, x:x + bw] == i).astype(np.uint8), x, y)
        alone = len(boxes) == 1
        boxes = [part for b in boxes for part in _split_solid(drawn[b[1]:b[3], b[0]:b[2]], b[0], b[1])]
        for box in boxes:
            area = (box[0] * SHRINK, box[1] * SHRINK, min(w, box[2] * SHRINK), min(h, box[3] * SHRINK))
            fw, fh = area[2] - area[0], area[3] - area[1]
            small = fw < MIN_SIDE or fh < MIN_SIDE
            if small and (min(fw, fh) < MIN_ICON or fw * fh < MIN_SIDE * MIN_SIDE * 0.7) \
                    or fw * fh > MAX_SHARE * w * h:
                continue
            found.append((area, alone))
    return mask, tuple(found)


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
    those found on the whole frame. The crop stays INSET inside the box: a panel's own outline, left in, joins the
    close cross in its corner into one blob whose centre misses the cross (generated seed 8: 5 px below it, and the
    game restarted 63 times)."""
    x1, y1, x2, y2 = (max(0, int(v)) for v in box)
    own: list[Area] = []
    m = max(3, max(frame.shape[:2]) // INSET)
    if min(x2 - x1, y2 - y1) >= 2 * MIN_SIDE + 2 * m:
        own = [(a[0] + x1 + m, a[1] + y1 + m, a[2] + x1 + m, a[3] + y1 + m)
               for a in tappable(frame[y1 + m:y2 - m, x1 + m:x2 - m], limit=limit)]
    return _distinct(own + tappable(frame, within=box, limit=limit))[:limit]


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


def box_grid(box: tuple[int, int, int, int], size: tuple[int, int], taken: list[dict[str, Any]]
             ) -> list[dict[str, Any]]:
    """Taps over a popup's box: first its corners a step in (a dialog's close cross sits in a top corner, a back
    arrow top left, "continue" low on the right), then a grid of half sketch cells, coarse to fine (every fourth
    point of each row and column first, then every second, then the rest: a big target is hit early wherever it is),
    each level from the bottom right (a dialog's buttons sit low); points a tried region covers, or near a spot
    tried, are left out."""
    step = max(4, cell_size(size) // 2)
    x1, y1, x2, y2 = box
    # A tried region that covers most of the box is the dialog's own panel (found on the whole frame, the panel is
    # one blob): its centre's tap tells nothing of the points around it. Left in, it hid every point of the grid,
    # and the search of a small dialog closed by a spot nothing marks ended after its visible options.
    areas = [a["area"] for a in taken if a.get("area") and _share(a["area"], box) < PANEL_OF_BOX]
    # A point within half a step of a spot tried already is left out too: the guard's top corners and the grid's sit
    # 10-14 px apart on a large box, and a showing spent one of its ten tries on each (EXP_INFO_A's bottom right
    # corner, the one that closes it, came eleventh).
    tapped = [tuple(a["point"]) for a in taken if a.get("point")]

    def free(x: int, y: int) -> bool:
        return not any(a[0] <= x < a[2] and a[1] <= y < a[3] for a in areas) and \
            not any(abs(x - tx) < step // 2 and abs(y - ty) < step // 2 for tx, ty in tapped)

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


def _share(area: Area, box: Area) -> float:
    """The share of `box` that `area` covers."""
    ix = max(0, min(area[2], box[2]) - max(area[0], box[0]))
    iy = max(0, min(area[3], box[3]) - max(area[1], box[1]))
    return ix * iy / max(1, (box[2] - box[0]) * (box[3] - box[1]))


def inside(action: dict[str, Any], box: tuple[int, int, int, int]) -> bool:
    """Whether `action` acts on `box`: a key does, a tap when its point lies inside."""
    if action.get("type") != "tap":
        return action.get("type") == "key"
    x, y = action["point"]
    return box[0] <= x < box[2] and box[1] <= y < box[3]


PANEL_SHARE = (0.025, 0.8)
"""Smallest and largest share of the screen a dialog's panel covers."""
BAND_SHARE = 0.005
"""Smallest share of the screen of a band (a title bar, a button row) that extends a panel it lines up with."""
ALIGN = 6
"""Pixels (half size) within which a band's sides line up with a panel's, and within which it touches it."""
BAND_FILL = 0.8
"""Share of its bounding box an outline fills to be a rectangle: a band (a bar, a row) or the explorer's region."""
EDGE_LEVELS = (20, 40)
RECT_FILL = 0.9
"""A dialog's panel (panel_box): Canny's thresholds for its outline, per colour channel, and the share of its
bounding box the outline fills to be one (a band stacked on it, BAND_FILL; the explorer's regions keep the grey
image and BAND_FILL). On the corpus's twelve generated games, each popup shown over a page: 50 of 50 panels found,
against 46 with (20, 60) on the grey image and a fill of 0.8; clean pages with an outline taken for a panel: 58 of
387, against 70. A fill of 0.8 took a figure standing on the panel's top edge for part of it (game 6: the box twice
the panel's height, the figure's sway then read as the dialog changing)."""


def _outlines(frame: np.ndarray, least: float | None = None, *,
              colour: bool = False) -> list[tuple[tuple[int, int, int, int], float]]:
    """Outlines on `frame` whose bounding box (x1, y1, x2, y2) covers at least BAND_SHARE of it (or `least` pixels),
    each with the share of that box it fills. `colour`: edges found in each colour channel (EDGE_LEVELS), else on
    the grey image (the explorer's regions): a panel can differ from the page around it by its hue more than by its
    brightness (generated game 6: an olive panel on a green page, 6 grey levels apart and 8 to 12 in each channel)."""
    if colour and frame.ndim == 3:
        blurred = cv2.GaussianBlur(frame, (3, 3), 0)
        edges = np.zeros(frame.shape[:2], np.uint8)
        for channel in range(blurred.shape[2]):
            edges |= cv2.Canny(blurred[:, :, channel], *EDGE_LEVELS)
    else:
        gray = cv2.GaussianBlur(cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY) if frame.ndim == 3 else frame, (3, 3), 0)
        edges = cv2.Canny(gray, 20, 60)
    edges = cv2.dilate(edges, np.ones((3, 3), np.uint8))
    contours, _ = cv2.findContours(edges, cv2.RETR_LIST, cv2.CHAIN_APPROX_SIMPLE)
    h, w = frame.shape[:2]
    smallest = BAND_SHARE * w * h if least is None else least
    found = []
    for contour in contours:
        x, y, bw, bh = cv2.boundingRect(contour)
        if smallest <= bw * bh <= PANEL_SHARE[1] * w * h:
            found.append(((x, y, x + bw, y + bh), cv2.contourArea(contour) / (bw * bh)))
    return found


def _rectangles(frame: np.ndarray, least: float | None = None) -> list[tuple[int, int, int, int]]:
    """Near-rectangular outlines on `frame` (the grey image's): those that fill BAND_FILL of their box."""
    return [box for box, fill in _outlines(frame, least) if fill >= BAND_FILL]


def panel_box(frame: np.ndarray) -> Area | None:
    """A dialog's panel found on the frame alone (when no clean frame of the page beneath is known): the largest
    near-rectangular outline centred in the middle three fifths of the screen, covering PANEL_SHARE of it, with
    the bands that line up with it above or below (a title bar of another colour); None when there is none. Works
    on a half-size copy (the outline is large)."""
    h, w = frame.shape[:2]
    small = cv2.resize(frame, (max(1, w // 2), max(1, h // 2)), interpolation=cv2.INTER_AREA)
    sw, sh = small.shape[1], small.shape[0]
    outlines = _outlines(small, colour=True)
    rects = [r for r, fill in outlines if fill >= BAND_FILL]  # (the bands; the panel itself fills RECT_FILL of its box)
    panels = [r for r, fill in outlines if fill >= RECT_FILL
              and (r[2] - r[0]) * (r[3] - r[1]) >= PANEL_SHARE[0] * sw * sh
              and 0.2 * sw < (r[0] + r[2]) / 2 < 0.8 * sw and 0.2 * sh < (r[1] + r[3]) / 2 < 0.8 * sh]
    if not panels:
        return None
    x1, y1, x2, y2 = max(panels, key=lambda r: (r[2] - r[0]) * (r[3] - r[1]))
    for _ in range(4):  # bands stacked on it, a few at most
        grown = False
        for r in rects:
            if abs(r[0] - x1) <= ALIGN and abs(r[2] - x2) <= ALIGN and (
                    -ALIGN <= y1 - r[3] <= ALIGN and r[1] < y1 or -ALIGN <= r[1] - y2 <= ALIGN and r[3] > y2):
                x1, y1, x2, y2 = min(x1, r[0]), min(y1, r[1]), max(x2, r[2]), max(y2, r[3])
                grown = True
        if not grown:
            break
    return x1 * 2, y1 * 2, min(w, x2 * 2), min(h, y2 * 2)
