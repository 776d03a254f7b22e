"""Whether something covers a page: a frame compared, coarsely, with a clean reference of the same page.

A page's templates still match under a dialog: normalised correlation does not see a page dimmed to 45 %, and
the page's signature boxes may lie outside the dialog's panel. So a recognised page is only verified when nothing
covers it, and this module answers that without knowing any game:

    ref = thumb(clean_frame)                   # kept per page (small: a few numbers per CELL x CELL pixels)
    report = covered(frame, ref)               # CoverReport(covered, box, dimmed_ratio, changed, reason)
    report = judge(frame, ref_or_None, matched)   # the same, or by the page's own templates while no ref exists

Both sides are reduced to a grid of cells (colour, luminance and texture of a 2x2 sample of pixels per cell: about
0.15 ms at 1280x720 for a clean frame). The page's overall brightness against the reference (`dimmed_ratio`, the
median of the per-cell ratios) says whether the page was dimmed; the cells that do not follow that ratio are "unlike
the page", and their largest connected region is the candidate cover (`box`, frame pixels). A frame is covered when

- the page is dimmed (ratio below DIMMED, with most cells following it) and a region stands out from it (a
  foreign panel over a dimmed rest), or it is dimmed and the reference is partial (`mask`: only some cells known,
  as when the reference is a page's templates drawn on black, so the panel cannot be seen but the dimming can);
- or, dimmed or not, one solid region unlike the reference covers at least LARGE of the screen (a dialog drawn
  without dimming), while its box covers at most MOST of it and the page around it stays as it was (a larger
  change is the page's own content, as a real storage grid that lists other items).

Before a page was ever seen clean, `dimming` judges it by its own templates: their mean brightness where they matched
against the templates' own (a page dimmed behind a dialog still matches, at 45 % of the brightness;
TEMPLATES_DIMMED).

What real pages do on their own stays below those bounds: small counters and timers change, a transition dims the
page evenly with nothing standing out (not covered: `dimmed_ratio` still says so). An animated character (a real
main page's sways and breathes by several pixels) changes cells over a large solid region too, so a reference made
with `detail=True` keeps its frame in grey at 1/DETAIL of its size, and the unlike cells of a block (BLOCK x BLOCK
cells) whose pixels are found in the reference within REACH pixels of where they are (`moved`) are the page's own
content moving, not something over it: they are left out before the regions are measured. A dialog's panel is not
on the page beneath, moved or not (a flat block tells nothing and stays). That search runs only when a region large
enough to cover the page stands out (1-4 ms on a busy 2-core machine for a swaying character; a clean frame that
equals its reference costs nothing more). A reference is a `Thumb` from `thumb()`, or any frame of the same size
(reduced on the fly, with its detail).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

Box = tuple[int, int, int, int]

CELL = 16
"""Pixels per grid cell, each way (1280x720 -> 80x45 cells)."""
SAMPLES = 2
"""Pixels sampled per cell, each way (a cell's colour is their mean, its texture their spread)."""
DIMMED = 0.8
"""A page whose cells are, in the median, below this share of the reference's brightness is dimmed."""
TEMPLATES_DIMMED = 0.52
"""Judged by its templates alone (no reference, so no panel to see), a page is dimmed below this: a dialog's
backdrop leaves 40 % (Android's default backgroundDimAmount, 0.6) to 45 % (the issue's dialog), where a real
cross-fade between two screens measured 0.58 (../shared/screens, REWARD_GOTO_MAIN's frame)."""
FOLLOW = 0.12
"""A cell within this of the median ratio follows the page's dimming (a share of the page must, to call it dim)."""
DARK = 24.0
"""Reference cells darker than this give no usable ratio (dimming a black cell changes nothing)."""
UNLIKE = 32.0
"""A cell whose luminance is this far from the reference's (after the page's dimming) is unlike the page."""
UNLIKE_SPREAD = 20.0
"""A cell whose texture (the spread of its samples) differs this much from the reference's is unlike it too."""
PANEL = 0.03
"""Least share of the grid a region standing out of a dimmed page covers to be a panel."""
PANEL_SOLID = 0.3
"""Least share of its box such a region fills (the page's even dimming is strong evidence already; a panel whose
body looks like the dimmed page beneath still has a title bar and text that do not)."""
LARGE = 0.08
"""Least share of the grid one region unlike the reference covers to be a dialog drawn without dimming."""
MOST = 0.4
"""Most of the grid such a region's box may cover: a dialog drawn without dimming leaves the page around it; a
larger change is the page's own content changing (a real storage grid, another list), not something over it."""
REST = 0.1
"""Most share of the cells outside such a region that may be unlike the page too (the page around a dialog stays)."""
SOLID = 0.6
"""Least share of its bounding box such a region fills (a dialog is a block; changing counters are scattered)."""
WHOLE = 0.85
"""A region over more than this share of the grid is another screen, not something over the page."""
DETAIL = 4
"""A reference's detail: its frame in grey at 1/DETAIL of its size (320x180 for 1280x720: 58 kB a page)."""
BLOCK = 4
"""Cells per block, each way, whose pixels are looked for in the reference nearby (64x64 frame pixels)."""
REACH = 24
"""How far (frame pixels, each way) a block of the page's own content may have moved (a character's sway)."""
MOVED = 0.7
"""Least normalised correlation of a block with the reference around it to be the page's own content, moved."""
FLAT = 4.0
"""Least spread (grey levels, in the detail) of a block to tell whether it moved (a flat block matches anything)."""


@dataclass(frozen=True)
class Thumb:
    """A frame reduced to cells: mean colour (rows x cols x 3, float32), luminance and its spread (rows x cols)
    for `size` (width, height) frames; `mask`: the cells the reference knows (None: all); `detail`: see DETAIL."""

    colour: np.ndarray
    luma: np.ndarray
    spread: np.ndarray
    size: tuple[int, int]
    mask: np.ndarray | None = None
    detail: np.ndarray | None = None
    """The frame in grey at 1/DETAIL of its size (`thumb(..., detail=True)`), to tell content that moved."""


@dataclass(frozen=True)
class CoverReport:
    """What `covered` found: whether something covers the page, where (`box`, frame pixels, or None when only
    the dimming was seen), how bright the page is against its reference (`dimmed_ratio`, 1.0 unchanged), the share
    of known cells unlike the page (`changed`), and why, in a few words."""

    covered: bool
    box: Box | None = None
    dimmed_ratio: float = 1.0
    changed: float = 0.0
    reason: str = ""

    def to_dict(self) -> dict:
        return {"covered": self.covered, "box": list(self.box) if self.box else None,
                "dimmed_ratio": round(self.dimmed_ratio, 3), "changed": round(self.changed, 3),
                "reason": self.reason}


def thumb(frame: np.ndarray, mask: np.ndarray | None = None, detail: bool = False) -> Thumb:
    """`frame` (BGR uint8) reduced to cells from a sample of SAMPLES x SAMPLES pixels each (a nearest-pixel resize:
    no pass over the whole frame); `mask` (frame-sized, nonzero where known): the cells wholly inside it are known;
    `detail`: keep the frame's grey detail too (a reference's, one pass over the frame)."""
    h, w = frame.shape[:2]
    rows, cols = max(1, h // CELL), max(1, w // CELL)
    sample = cv2.resize(frame, (cols * SAMPLES, rows * SAMPLES), interpolation=cv2.INTER_NEAREST)
    colour = cv2.resize(sample, (cols, rows), interpolation=cv2.INTER_AREA).astype(np.float32)
    grey = cv2.cvtColor(sample, cv2.COLOR_BGR2GRAY).astype(np.float32)
    luma = cv2.resize(grey, (cols, rows), interpolation=cv2.INTER_AREA)
    spread = np.sqrt(np.maximum(cv2.resize(grey * grey, (cols, rows), interpolation=cv2.INTER_AREA) - luma * luma, 0))
    known = None
    if mask is not None:
        small = cv2.resize((mask > 0).astype(np.uint8), (cols * SAMPLES, rows * SAMPLES),
                           interpolation=cv2.INTER_NEAREST)
        known = small.reshape(rows, SAMPLES, cols, SAMPLES).min(axis=(1, 3)) > 0
    return Thumb(colour, luma, spread, (w, h), known, _detail(frame) if detail else None)


def _detail(frame: np.ndarray) -> np.ndarray:
    h, w = frame.shape[:2]
    grey = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    return cv2.resize(grey, (max(1, w // DETAIL), max(1, h // DETAIL)), interpolation=cv2.INTER_AREA)


def covered(frame: np.ndarray | Thumb, reference: np.ndarray | Thumb) -> CoverReport:
    """Whether something covers the page that `reference` shows clean (see the module docstring)."""
    ref = reference if isinstance(reference, Thumb) else thumb(reference, detail=True)
    now = frame if isinstance(frame, Thumb) else thumb(frame)
    if now.luma.shape != ref.luma.shape:
        return CoverReport(False, reason="the reference is of another size")
    if ref.mask is None and float(np.abs(now.luma - ref.luma).max()) <= UNLIKE / 2 and \
            float(np.abs(now.spread - ref.spread).max()) <= UNLIKE_SPREAD / 2:
        return CoverReport(False)  # the common case, a clean frame: no cell moved, nothing more to measure
    compared = _compare(now, ref)
    if compared is None:
        return CoverReport(False, reason="the reference has too little light to compare")
    known, ratio, follows, unlike = compared
    dimmed = ratio < DIMMED and follows >= 0.5
    box, area, fill = _largest(unlike)
    cells = ref.luma.size
    if area > WHOLE * cells:
        return CoverReport(False, None, ratio, float(unlike.sum() / max(1, known.sum())),
                           "the whole screen changed: another screen")
    if area >= min(PANEL, LARGE) * cells and ref.detail is not None and not isinstance(frame, Thumb):
        unlike &= ~moved(unlike, _detail(frame), ref.detail)  # the page's own content, moved: not over it
        box, area, fill = _largest(unlike)
    changed = float(unlike.sum() / max(1, known.sum()))
    if dimmed and area >= PANEL * cells and fill >= PANEL_SOLID:
        return CoverReport(True, _pixels(box, ref), ratio, changed, "a panel over the dimmed page")
    if dimmed and ref.mask is not None:
        return CoverReport(True, None, ratio, changed, "the page's known parts are dimmed")
    # A dialog drawn without dimming is a solid block. Thin lines of change (counters, the edges of what moved) may
    # join it to their own region: opened away, the block stands alone again (either way is a dialog). Opening only
    # removes cells, and _largest's closing and hole filling keep that inclusion, so the opened region is never
    # larger than `area`: below LARGE neither can pass, and the opening is skipped.
    if area >= LARGE * cells:
        opened = cv2.morphologyEx(unlike.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8)) > 0
        for box, area, fill in ((box, area, fill), _largest(opened)):
            if box is not None and LARGE * cells <= area and (box[2] - box[0]) * (box[3] - box[1]) <= MOST * cells \
                    and fill >= SOLID and _rest(unlike, box) <= REST:
                return CoverReport(True, _pixels(box, ref), ratio, changed, "a large region unlike the page")
    return CoverReport(False, None, ratio, changed, "dimmed evenly" if dimmed else "")


def changed_box(frame: np.ndarray, reference: np.ndarray | Thumb) -> Box | None:
    """The largest region of `frame` unlike the page `reference` shows clean (frame pixels), whatever its size, the
    page's own content that only moved left out (of a region large enough to cover it); None when nothing is unlike it
    or the whole screen changed. Where a
    page stays recognised and swallows the taps, what stopped them may be too small to cover it by `covered`'s
    bounds (a lone button drawn over the page, a banner): this is where to look for it."""
    ref = reference if isinstance(reference, Thumb) else thumb(reference, detail=True)
    now = thumb(frame)
    compared = _compare(now, ref) if now.luma.shape == ref.luma.shape else None
    if compared is None:
        return None
    unlike = compared[3]
    box, area, _ = _largest(unlike)
    if area >= min(PANEL, LARGE) * unlike.size and ref.detail is not None:  # as `covered` does (a small region's
        unlike &= ~moved(unlike, _detail(frame), ref.detail)  # edges are found moved anywhere near)
        box, area, _ = _largest(unlike)
    return None if box is None or area > WHOLE * ref.luma.size else _pixels(box, ref)


def _compare(now: Thumb, ref: Thumb) -> tuple[np.ndarray, float, float, np.ndarray] | None:
    """(the cells the reference knows, the page's brightness against it, the share of cells following that, the
    cells unlike it after that dimming), or None when the reference has too little light to compare."""
    known = ref.mask if ref.mask is not None else np.ones(ref.luma.shape, bool)
    usable = known & (ref.luma >= DARK)
    if usable.sum() < 4:
        return None
    ratios = now.luma[usable] / ref.luma[usable]
    ratio = float(np.median(ratios))
    follows = float(np.mean(np.abs(ratios - ratio) <= FOLLOW))
    gain = min(ratio, 1.0)
    unlike = known & ((np.abs(now.colour - ref.colour * gain).max(axis=2) > UNLIKE) |
                      (np.abs(now.spread - ref.spread * gain) > UNLIKE_SPREAD))
    return known, ratio, follows, unlike


def dimming(frame: np.ndarray, matched: list[tuple[tuple[int, int, int, int], tuple[float, float, float]]]
            ) -> float | None:
    """How bright the page is against its own templates: the median, over the templates that matched (their
    box on `frame`, their mean BGR colour), of the frame's mean luminance in the box over the template's. None
    when no template is bright enough to tell. A page with no clean reference yet is judged by this (its
    templates still match a page dimmed behind a dialog, and tell it is dimmed: `DIMMED`)."""
    ratios = []
    for (x1, y1, x2, y2), (b, g, r) in matched:
        expected = 0.114 * b + 0.587 * g + 0.299 * r
        region = frame[max(0, y1):y2, max(0, x1):x2]
        if expected < DARK or region.size == 0:
            continue
        mb, mg, mr = cv2.mean(region)[:3]
        ratios.append((0.114 * mb + 0.587 * mg + 0.299 * mr) / expected)
    return float(np.median(ratios)) if ratios else None


def judge(frame: np.ndarray, reference: Thumb | None,
          matched: list[tuple[tuple[int, int, int, int], tuple[float, float, float]]]) -> CoverReport:
    """`covered` against the page's clean `reference` when there is one (of the frame's size), else `dimming` of
    its `matched` templates (a dimmed page is covered, though where is not known)."""
    if reference is not None and reference.size == (frame.shape[1], frame.shape[0]):
        return covered(frame, reference)
    ratio = dimming(frame, matched)
    if ratio is not None and ratio < TEMPLATES_DIMMED:
        return CoverReport(True, None, ratio, 0.0, "the page's templates are dimmed")
    return CoverReport(False, None, 1.0 if ratio is None else ratio)


def moved(unlike: np.ndarray, now: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """The cells of `unlike` (rows x cols) in blocks whose pixels (`now`, a frame's detail) are found in the
    reference's detail `ref` within REACH (see the module docstring): the page's own content, moved."""
    out = np.zeros_like(unlike)
    side, reach = max(1, CELL // DETAIL), max(1, REACH // DETAIL)
    rows, cols = unlike.shape
    grid = np.zeros((-(-rows // BLOCK) * BLOCK, -(-cols // BLOCK) * BLOCK), bool)
    grid[:rows, :cols] = unlike
    for by, bx in np.argwhere(grid.reshape(grid.shape[0] // BLOCK, BLOCK, -1, BLOCK).any(axis=(1, 3))) * BLOCK:
        y1, x1, y2, x2 = by * side, bx * side, (by + BLOCK) * side, (bx + BLOCK) * side
        block = now[y1:y2, x1:x2]
        if min(block.shape) < side * 2 or cv2.meanStdDev(block)[1][0, 0] < FLAT:
            continue  # a flat block (a panel's body) tells nothing: it stays unlike
        window = ref[max(0, y1 - reach):y2 + reach, max(0, x1 - reach):x2 + reach]
        if window.shape[0] >= block.shape[0] and window.shape[1] >= block.shape[1] and \
                cv2.minMaxLoc(cv2.matchTemplate(window, block, cv2.TM_CCOEFF_NORMED))[1] >= MOVED:
            out[by:by + BLOCK, bx:bx + BLOCK] = True
    return out


def _pixels(box: Box | None, ref: Thumb) -> Box | None:
    """A box of cells as frame pixels."""
    if box is None:
        return None
    sx, sy = ref.size[0] / ref.luma.shape[1], ref.size[1] / ref.luma.shape[0]
    return int(box[0] * sx), int(box[1] * sy), int(box[2] * sx), int(box[3] * sy)


def _rest(cells: np.ndarray, box: tuple[int, int, int, int]) -> float:
    """The share of `cells` set outside `box` (cells)."""
    outside = cells.copy()
    outside[box[1]:box[3], box[0]:box[2]] = False
    return float(outside.sum()) / max(1, cells.size - (box[2] - box[0]) * (box[3] - box[1]))


def _largest(cells: np.ndarray) -> tuple[tuple[int, int, int, int] | None, int, float]:
    """The bounding box (cells, x2/y2 exclusive), size and fill of the largest region of `cells`, its holes filled
    (a panel whose body happens to look like the dimmed page still has a frame and a title bar that do not)."""
    if not cells.any():
        return None, 0, 0.0
    # Closed inside a margin of empty cells: with OpenCV's default border the closing's erosion never eats at the
    # frame's edge, so a region one cell short of it grew to it (a dialog 16 px above the bottom got a box to the
    # bottom, and the search's bottom corners fell beside a close spot there).
    padded = np.pad(cells.astype(np.uint8), 1)
    closed = cv2.morphologyEx(padded, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))[1:-1, 1:-1]
    contours, _ = cv2.findContours(closed, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    filled = np.zeros_like(closed)
    cv2.drawContours(filled, contours, -1, 1, thickness=cv2.FILLED)
    count, _, stats, _ = cv2.connectedComponentsWithStats(filled, connectivity=8)
    if count <= 1:
        return None, 0, 0.0
    best = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    x, y, w, h, area = (int(v) for v in stats[best])
    return (x, y, x + w, y + h), area, area / max(1, w * h)
