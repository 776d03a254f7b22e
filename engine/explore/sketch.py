"""Frame similarity by structure, not by pixel hashes: a frame's sketch is a grid of cells, each a mean colour and a
small grayscale thumbnail, and two frames are compared cell by cell.

A counter that changes, a blinking dot or an animated mascot changes a few cells; another page changes most of
them; a popup changes a compact box and leaves the rest the same or uniformly dimmed (``cover``). Nothing here
knows a game: the grid follows the frame's own shape (square cells, 16 along the longer side).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

CELLS_LONG = 16
THUMB = 8
FINE = 16
"""Pixels a cell of the fine drawing (Sketch.fine): a title's glyphs, finer than a cell's thumbnail, still show."""
COLOUR_TOLERANCE = 22.0
"""Largest per-channel difference of two cells' mean colours that still counts as the same cell."""
THUMB_TOLERANCE = 12.0
"""Largest mean absolute difference of two cells' 8x8 gray thumbnails that still counts as the same cell."""
SAME_PAGE = 0.82
"""Share of matching cells above which two frames show one page."""
DIM_BELOW = 0.85
"""A rest of screen this much darker than the reference (or more) is a dimmed backdrop: a popup is up."""
DARK = 8
"""Mean gray above which a cell of a dark page can still show a dimming (a page drawn on a backdrop of gray 22
dimmed to 0.45 is gray 10; with only cells over gray 24 counted, a dark page never showed a popup over it, and a
generated game's dialog over its dark page became a page of its own)."""
BOX = 0.6
"""Largest share of the cells a popup's box may cover (the rest shows the page it covers)."""
DIMMED_BOX = 0.75
"""The same over a dimmed backdrop."""
GAIN_BIN = 0.025
"""Width of the brightness-ratio bins in which common_gain looks for the ratio most cells share."""
DIM_TINT = 1.5
"""Largest tint residual (tint_residual) of a dimmed page: a dimming is a black veil, so it scales every channel of
the page alike. Another page on a darker backdrop of another hue looks dimmed by gray alone (generated game 8: the
hub's green backdrop against its areas' gray one, gain 0.71, every cell within COLOUR_TOLERANCE times the gain), and
the explorer took its area for a popup over the hub and found 2 pages of 8. benchmarks/dim_tint.py, games 1-40:
6098 dimmed covers, residual at most 0.68; 899 pages gray alone calls another dimmed, 50 of them under 1.5 (gray
on gray: no colour tells; DIMMED_TOP does). Games 41-80, never looked at before the bound was chosen: dimmings at
most 0.67 (6534), 48 of 1224 such pages left under it."""
DIMMED_TOP = False
"""Whether a popup's box over a dimmed page may reach the top row of cells across TOP_WIDE of the width or more. A
modal panel leaves the top of the page under it showing, dimmed, so no: a darker page whose drawing differs up to
its top row is another page. Games 1-80 (benchmarks/dim_tint.py): none of 12632 dimmings reach the top row once their
gain is the common one (common_gain), and 96 of the 98 other pages still taken for dimmed ones under DIM_TINT (gray
on gray) do, all but one speck of seed 5 across a third of the width or more. A close cross alone in a corner
(a full-screen veil) reaches the top row too, but narrowly."""
TOP_WIDE = 0.3
"""Share of the width from which a dimmed box reaching the top row is another page (DIMMED_TOP)."""
MOVED_COLOUR = 6.0
"""Largest per-channel change of the mean colour of a page's moving cells, taken together, under which they still
show what moves there (a figure that sways or sparks that twinkle keep their colours as a whole). A page against
itself at other moments of its sway, over generated games 1-40: at most 3.6 (0.7 on game 782102); a figure gone or
another drawn in its place, where nothing else but a title finer than a cell told two pages apart: 42.6 on game
782102, 10.8 on game 2's two pages with figures in near colours (merged under the 16 allowed before), 4.3 at least
over games 1-40 (45 of 366 such pairs under 16, 3 under 6). Games 41-80, never looked at before the bound was
chosen: 2.1 at most against 2.0 at least, 30 of 407 pairs under 16, 3 under 6
(docs/benchmarks/generated-long-form-first-cases.md)."""
SHIFT = 1
"""Thumbnail pixels (an eighth of a cell) a thing drawn may have moved and still be the same (a figure that sways
more slowly than settling looks, so its cells were never seen moving: on generated game 782102 the same page came
back with 6 cells of its figure's edges different, and became two pages; moved back by one pixel they differ by 1.6
to 3.4, against 12 allowed)."""

Area = tuple[int, int, int, int]


@dataclass(frozen=True, eq=False)
class Sketch:
    """A frame reduced to its grid: `colour` (rows, cols, 3) mean BGR, `thumbs` (rows, cols, T*T) gray
    thumbnails, `flat` (rows, cols) the gray standard deviation inside each cell, `fine` the gray frame at FINE
    pixels a cell (what engine.explore.words compares where the cells alone cannot tell)."""

    size: tuple[int, int]
    cell: int
    colour: np.ndarray
    thumbs: np.ndarray
    flat: np.ndarray
    fine: np.ndarray | None = None

    @property
    def grid(self) -> tuple[int, int]:
        """(cols, rows)."""
        return self.colour.shape[1], self.colour.shape[0]

    def cell_area(self, col: int, row: int) -> Area:
        w, h = self.size
        return col * self.cell, row * self.cell, min(w, (col + 1) * self.cell), min(h, (row + 1) * self.cell)


def cell_size(size: tuple[int, int]) -> int:
    return max(8, max(size) // CELLS_LONG)


def sketch(frame: np.ndarray) -> Sketch:
    """The sketch of a BGR frame (cells along the edges that do not fill a whole cell are left out)."""
    h, w = frame.shape[:2]
    cell = cell_size((w, h))
    cols, rows = max(1, w // cell), max(1, h // cell)
    used = frame[:rows * cell, :cols * cell]
    colour = cv2.resize(used, (cols, rows), interpolation=cv2.INTER_AREA).astype(np.float32)
    gray = cv2.cvtColor(used, cv2.COLOR_BGR2GRAY)
    small = cv2.resize(gray, (cols * THUMB, rows * THUMB), interpolation=cv2.INTER_AREA).astype(np.float32)
    thumbs = small.reshape(rows, THUMB, cols, THUMB).transpose(0, 2, 1, 3).reshape(rows, cols, THUMB * THUMB)
    g = gray.astype(np.float32)
    mean = cv2.resize(g, (cols, rows), interpolation=cv2.INTER_AREA)
    square = cv2.resize(g * g, (cols, rows), interpolation=cv2.INTER_AREA)
    flat = np.sqrt(np.maximum(square - mean * mean, 0.0))
    fine = cv2.resize(gray, (cols * FINE, rows * FINE), interpolation=cv2.INTER_AREA).astype(np.int16)
    return Sketch((w, h), cell, colour, thumbs, flat, fine)


def cell_match(a: Sketch, b: Sketch, gain: float = 1.0) -> np.ndarray:
    """(rows, cols) booleans: where `a` shows what `b` shows (times `gain`: b dimmed by a backdrop)."""
    if a.colour.shape != b.colour.shape:
        return np.zeros(a.colour.shape[:2], bool)
    colour = np.abs(a.colour - b.colour * gain).max(axis=2) <= COLOUR_TOLERANCE * max(gain, 0.5)
    thumbs = np.abs(a.thumbs - b.thumbs * gain).mean(axis=2) <= THUMB_TOLERANCE * max(gain, 0.5)
    return colour & thumbs


class Members:
    """Many sketches stacked, to tell at once the share of cells each matches with a frame (cell_match's share, as
    page_difference gives it first): a frame is placed among every page's members at every look of a settle, and
    one by one that cost 28 ms a look on a game of 42 pages."""

    def __init__(self, sketches: list[Sketch]) -> None:
        self.shape = sketches[0].colour.shape if sketches else None
        same = [sk.colour.shape == self.shape for sk in sketches]
        self.kept = np.array(same, bool)
        self.colour = np.stack([sk.colour for sk, ok in zip(sketches, same) if ok]) if any(same) else None
        self.thumbs = np.stack([sk.thumbs for sk, ok in zip(sketches, same) if ok]) if any(same) else None

    def shares(self, sk: Sketch) -> np.ndarray:
        """Per stacked sketch, the share of cells `sk` matches (0 for a sketch of another grid)."""
        out = np.zeros(len(self.kept), np.float32)
        if self.colour is None or sk.colour.shape != self.shape:
            return out
        colour = np.abs(self.colour - sk.colour).max(axis=3) <= COLOUR_TOLERANCE
        thumbs = np.abs(self.thumbs - sk.thumbs).mean(axis=3) <= THUMB_TOLERANCE
        out[self.kept] = (colour & thumbs).mean(axis=(1, 2))
        return out


def inside_similarity(a: Sketch, b: Sketch, box: Area) -> float:
    """Share of the cells inside `box` where `a` and `b` match (how popups are told apart)."""
    c1, r1, c2, r2 = box[0] // a.cell, box[1] // a.cell, max(box[0] // a.cell + 1, box[2] // a.cell), \
        max(box[1] // a.cell + 1, box[3] // a.cell)
    same = cell_match(a, b)[r1:r2, c1:c2]
    return float(same.mean()) if same.size else 0.0


def same_dialog(a: Sketch, b: Sketch, box: Area, like: float) -> bool:
    """Whether `a` and `b` show one dialog in `box` (a cover's box, whole cells): `like` of its cells match and no
    cell wholly inside it (one in from each side: those on its edge hold some of the page under it) differs in its
    fine drawing. A game draws many dialogs on one panel, told apart by a title, a cross, a button, a cell or two of
    the box: generated game 8 under chaos, a CONFIRM dialog taken for the cross dialog on its panel (0.87 of the
    cells alike): taps that had failed on the other at the CONFIRM's spot left it out of the search, the dialog was
    never closed, and the page under it was drafted as its look-alike. In the twelve corpus games' chaos runs (cells
    inside each dialog's drawn box), one dialog shown twice differed in no such cell (2744 pairs, over one page or
    two); two dialogs drawn on one box, in one or more in 105 of the 180 pairs the cells alone took for one."""
    if inside_similarity(a, b, box) < like:
        return False
    c, cells = a.cell, np.zeros(a.colour.shape[:2], bool)
    cells[box[1] // c + 1:box[3] // c - 1, box[0] // c + 1:box[2] // c - 1] = True
    return not fine_differ(a, b, cells).any()


def mosaic(sk: Sketch) -> np.ndarray:
    """The thumbnails put back together: the frame in gray, THUMB pixels per cell."""
    rows, cols = sk.colour.shape[:2]
    return sk.thumbs.reshape(rows, cols, THUMB, THUMB).transpose(0, 2, 1, 3).reshape(rows * THUMB, cols * THUMB)


def alike_moved(a: Sketch, b: Sketch, cells: np.ndarray) -> np.ndarray:
    """Those of `cells` where `a` shows what `b` shows moved by at most SHIFT thumbnail pixels (gray, and the mean
    colour within twice the tolerance)."""
    ma, mb = mosaic(a), mosaic(b)
    rows, cols = cells.shape
    pad = np.pad(mb, SHIFT, mode="edge")
    best = np.full(cells.shape, np.inf, np.float32)
    for dy in range(-SHIFT, SHIFT + 1):
        for dx in range(-SHIFT, SHIFT + 1):
            moved = pad[SHIFT + dy:SHIFT + dy + ma.shape[0], SHIFT + dx:SHIFT + dx + ma.shape[1]]
            per_cell = np.abs(ma - moved).reshape(rows, THUMB, cols, THUMB).mean(axis=(1, 3))
            best = np.minimum(best, per_cell)
    colour = np.abs(a.colour - b.colour).max(axis=2) <= 2 * COLOUR_TOLERANCE
    return cells & (best <= THUMB_TOLERANCE) & colour


def page_difference(frame: Sketch, member: Sketch, moving: np.ndarray | None) -> tuple[float, int]:
    """(share of cells alike, cells that differ for good) between `frame` and a member frame of a page: cells that
    differ, less those seen moving by themselves on the page (`moving`: only while, taken together, they keep their
    colours, MOVED_COLOUR) and those whose drawing only moved a little (SHIFT). Below SAME_PAGE the rest is not
    worked out."""
    differ = ~cell_match(frame, member)
    share = 1.0 - float(differ.mean()) if differ.size else 0.0
    if share < SAME_PAGE:
        return share, int(differ.sum())
    if moving is not None and moving.shape == differ.shape and moving.any():
        kept = np.abs(frame.colour[moving].mean(axis=0) - member.colour[moving].mean(axis=0)).max()
        if kept <= MOVED_COLOUR:
            differ = differ & ~moving
    if differ.any():
        differ = differ & ~alike_moved(frame, member, differ)
    return share, int(differ.sum())


def fine_differ(a: Sketch, b: Sketch, cells: np.ndarray, shift: int = 2, ink: int = 48, share: float = 0.02
                ) -> np.ndarray:
    """Those of `cells` whose fine drawing differs: more than `share` of its fine pixels differ in gray by more than
    `ink` however `b` is moved by up to `shift` fine pixels (an eighth of a cell, as SHIFT)."""
    if a.fine is None or b.fine is None or a.fine.shape != b.fine.shape or not cells.any():
        return np.zeros(cells.shape, bool)
    rows, cols = cells.shape
    pad = np.pad(b.fine, shift, mode="edge")
    best = np.full(cells.shape, 1.0)
    for dy in range(-shift, shift + 1):
        for dx in range(-shift, shift + 1):
            moved = pad[shift + dy:shift + dy + a.fine.shape[0], shift + dx:shift + dx + a.fine.shape[1]]
            far = (np.abs(a.fine - moved) > ink).reshape(rows, FINE, cols, FINE).mean(axis=(1, 3))
            best = np.minimum(best, far)
    return cells & (best > share)


def similarity(a: Sketch, b: Sketch) -> float:
    """Share of cells that match (0..1)."""
    return float(cell_match(a, b).mean())


def changed(a: Sketch, b: Sketch) -> bool:
    """Whether `a` and `b` differ in any cell beyond the tolerance (the screen moved)."""
    return not bool(cell_match(a, b).all())


@dataclass(frozen=True)
class Cover:
    """What covers a reference frame: the changed box, the backdrop's gain and the share of the rest unchanged."""

    box: Area
    gain: float
    rest: float


def common_gain(ratios: np.ndarray) -> float:
    """The brightness ratio most cells share (the median of those within GAIN_BIN of the densest bin): a dimming
    scales every cell it leaves alike by one factor, while the cells a panel covers take any ratio. The median of all
    was pulled up by a bright panel over a third of a page's lit cells (generated game 36: 0.76 for a dimming of
    0.52, the title's cells then counted as changed and the box reached the top of the screen)."""
    if ratios.size == 0:
        return 1.0
    counts, edges = np.histogram(ratios, bins=np.arange(0.0, 2.0 + GAIN_BIN, GAIN_BIN))
    centre = float(edges[int(np.argmax(counts))]) + GAIN_BIN / 2
    near = ratios[np.abs(ratios - centre) <= GAIN_BIN]
    return float(np.median(near)) if near.size else float(np.median(ratios))


def tint_residual(frame: Sketch, reference: Sketch, gain: float) -> float:
    """The median, over the cells of `frame` alike to `reference` dimmed by `gain`, of how far each strays from its
    reference cell's colour scaled by the one factor that fits it best (0 for a page under a black veil, whatever
    the gain; a hue difference for another page)."""
    same = cell_match(frame, reference, gain)
    if not same.any():
        return float("inf")
    f, r = frame.colour[same], reference.colour[same]
    fit = (f * r).sum(axis=1) / np.maximum((r * r).sum(axis=1), 1.0)
    return float(np.median(np.abs(f - r * fit[:, None]).max(axis=1)))


def dimmed_under(sketches: list[Sketch], under: list[Sketch]) -> Cover | None:
    """How the first of `sketches` shows the first of `under` dimmed around a box (a panel over that page), or None.
    Undimmed is never enough: a page beside a panel may be another page's layout."""
    found = cover(sketches[0], under[0]) if sketches and under else None
    return found if found is not None and found.gain < DIM_BELOW else None


def cover(frame: Sketch, reference: Sketch) -> Cover | None:
    """A popup over `reference`: a compact changed box, the rest the same up to one dimming gain (a panel over a
    dimmed page), or None when `frame` is not the reference page covered."""
    if frame.colour.shape != reference.colour.shape:
        return None
    ref_gray = reference.colour.mean(axis=2)
    gray = frame.colour.mean(axis=2)
    lit = ref_gray > 24
    dark = lit.mean() < 0.3
    if dark:
        lit = ref_gray > DARK  # a dark backdrop (mean gray 22 on a generated game): its dimming still shows
        if lit.mean() < 0.3:
            return None
    gain = common_gain(gray[lit] / ref_gray[lit])
    if not 0.15 <= gain <= 1.1 or dark and gain > DIM_BELOW:
        return None  # (on a dark page only a dimmed one: an undimmed box there is as likely another page's title)
    same = cell_match(frame, reference, gain)
    diff = ~same
    if not diff.any():
        return None
    if gain <= DIM_BELOW and tint_residual(frame, reference, gain) > DIM_TINT:
        return None  # darker, but not dimmed: another page on a backdrop of another hue
    rows, cols = np.nonzero(diff)
    r1, r2, c1, c2 = rows.min(), rows.max() + 1, cols.min(), cols.max() + 1
    box_cells = (r2 - r1) * (c2 - c1)
    outside = np.ones_like(same)
    outside[r1:r2, c1:c2] = False
    rest = float(same[outside].mean()) if outside.any() else 0.0
    # Under a dimmed backdrop (a modal panel) the box may be bigger: what the panel's action changed on the page
    # beside it (a list emptied by "collect all") joins the box, and the dimmed rest still shows which page it is.
    # One changed cell is a popup only over a dimmed backdrop (a close cross in a corner): undimmed, it is noise.
    if box_cells > (DIMMED_BOX if gain <= DIM_BELOW else BOX) * same.size or rest < 0.9 or \
            diff.sum() < (1 if gain <= DIM_BELOW else 2):
        return None
    if gain > DIM_BELOW and box_cells > 0.3 * same.size:
        return None  # undimmed: only a small box (a toast, a banner) counts as covering
    if gain <= DIM_BELOW and r1 == 0 and c2 - c1 >= TOP_WIDE * same.shape[1] and not DIMMED_TOP:
        return None  # a darker page whose drawing differs up to its top row is another page (DIMMED_TOP)
    box = (int(c1 * frame.cell), int(r1 * frame.cell), int(min(frame.size[0], c2 * frame.cell)),
           int(min(frame.size[1], r2 * frame.cell)))
    return Cover(box, gain, rest)
