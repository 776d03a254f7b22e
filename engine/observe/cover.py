"""Whether something covers a page: a frame compared, coarsely, with a clean reference of the same page.

A page's templates still match under a dialog: normalised correlation does not see a page dimmed to 45 %, and
the page's signature boxes may lie outside the dialog's panel. So a recognised page is only verified when nothing
covers it, and this module answers that without knowing any game:

    ref = thumb(clean_frame)                   # kept per page (small: a few numbers per CELL x CELL pixels)
    report = covered(frame, ref)               # CoverReport(covered, box, dimmed_ratio, changed, reason)
    report = judge(frame, ref_or_None, matched)   # the same, or by the page's own templates while no ref exists

Both sides are reduced to a grid of cells (colour, luminance and texture of a 2x2 sample of pixels per cell: about
0.15 ms at 1280x720 for a clean frame). The page's overall brightness against the reference (`dimmed_ratio`, the median of the per-cell ratios) says
whether the page was dimmed; the cells that do not follow that ratio are "unlike the page", and their largest
connected region is the candidate cover (`box`, frame pixels). A frame is covered when

- the page is dimmed (ratio below DIMMED, with most cells following it) and a region stands out from it (a
  foreign panel over a dimmed rest), or it is dimmed and the reference is partial (`mask`: only some cells known,
  as when the reference is a page's templates drawn on black, so the panel cannot be seen but the dimming can);
- or, dimmed or not, one solid region unlike the reference covers at least LARGE of the screen (a dialog drawn
  without dimming), while its box covers at most MOST of it and the page around it stays as it was (a larger
  change is the page's own content, as a real storage grid that lists other items).

Before a page was ever seen clean, `dimming` judges it by its own templates: their mean brightness where they matched
against the templates' own (a page dimmed behind a dialog still matches, at 45 % of the brightness;
TEMPLATES_DIMMED).

What real pages do on their own stays below those bounds: small counters and timers change, an animated character
moves a little, a transition dims the page evenly with nothing standing out (not covered: `dimmed_ratio` still says
so). A reference is a `Thumb` from `thumb()`, or any frame of the same size (reduced on the fly).
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


@dataclass(frozen=True)
class Thumb:
    """A frame reduced to cells: mean colour (rows x cols x 3, float32), luminance and its spread (rows x cols)
    for `size` (width, height) frames; `mask`: the cells the reference knows (None: all)."""

    colour: np.ndarray
    luma: np.ndarray
    spread: np.ndarray
    size: tuple[int, int]
    mask: np.ndarray | None = None


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


def thumb(frame: np.ndarray, mask: np.ndarray | None = None) -> Thumb:
    """`frame` (BGR uint8) reduced to cells from a sample of SAMPLES x SAMPLES pixels each (a nearest-pixel resize:
    no pass over the whole frame); `mask` (frame-sized, nonzero where known): the cells wholly inside it are known."""
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
    return Thumb(colour, luma, spread, (w, h), known)


def covered(frame: np.ndarray | Thumb, reference: np.ndarray | Thumb) -> CoverReport:
    """Whether something covers the page that `reference` shows clean (see the module docstring)."""
    ref = reference if isinstance(reference, Thumb) else thumb(reference)
    now = frame if isinstance(frame, Thumb) else thumb(frame)
    if now.luma.shape != ref.luma.shape:
        return CoverReport(False, reason="the reference is of another size")
    if ref.mask is None and float(np.abs(now.luma - ref.luma).max()) <= UNLIKE / 2 and \
            float(np.abs(now.spread - ref.spread).max()) <= UNLIKE_SPREAD / 2:
        return CoverReport(False)  # the common case, a clean frame: no cell moved, nothing more to measure
    known = ref.mask if ref.mask is not None else np.ones(ref.luma.shape, bool)
    usable = known & (ref.luma >= DARK)
    if usable.sum() < 4:
        return CoverReport(False, reason="the reference has too little light to compare")
    ratios = now.luma[usable] / ref.luma[usable]
    ratio = float(np.median(ratios))
    follows = float(np.mean(np.abs(ratios - ratio) <= FOLLOW))
    dimmed = ratio < DIMMED and follows >= 0.5
    gain = min(ratio, 1.0)
    unlike = known & ((np.abs(now.colour - ref.colour * gain).max(axis=2) > UNLIKE) |
                      (np.abs(now.spread - ref.spread * gain) > UNLIKE_SPREAD))
    changed = float(unlike.sum() / max(1, known.sum()))
    box, area, fill = _largest(unlike)
    cells = ref.luma.size
    scale = (ref.size[0] / ref.luma.shape[1], ref.size[1] / ref.luma.shape[0])
    pixels = None if box is None else (int(box[0] * scale[0]), int(box[1] * scale[1]),
                                       int(box[2] * scale[0]), int(box[3] * scale[1]))
    if area > WHOLE * cells:
        return CoverReport(False, None, ratio, changed, "the whole screen changed: another screen")
    if dimmed and area >= PANEL * cells and fill >= PANEL_SOLID:
        return CoverReport(True, pixels, ratio, changed, "a panel over the dimmed page")
    if dimmed and ref.mask is not None:
        return CoverReport(True, None, ratio, changed, "the page's known parts are dimmed")
    if box is not None and LARGE * cells <= area and (box[2] - box[0]) * (box[3] - box[1]) <= MOST * cells and \
            fill >= SOLID and _rest(unlike, box) <= REST:
        return CoverReport(True, pixels, ratio, changed, "a large region unlike the page")
    return CoverReport(False, None, ratio, changed, "dimmed evenly" if dimmed else "")


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
    closed = cv2.morphologyEx(cells.astype(np.uint8), cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    contours, _ = cv2.findContours(closed, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    filled = np.zeros_like(closed)
    cv2.drawContours(filled, contours, -1, 1, thickness=cv2.FILLED)
    count, _, stats, _ = cv2.connectedComponentsWithStats(filled, connectivity=8)
    if count <= 1:
        return None, 0, 0.0
    best = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    x, y, w, h, area = (int(v) for v in stats[best])
    return (x, y, x + w, y + h), area, area / max(1, w * h)
