"""Laying out one screen's signatures so that each of them still holds where their areas overlap.

A colour signature is a mean over its area; OCR text, a template or a smaller colour area drawn inside it changes
that mean. The simulator draws the colour fills first (largest first), everything else on top, then *balances*
each colour area (smallest first): the pixels of the area that nothing else claimed are set to the one flat colour
that brings the area's mean back to the signature's colour. When the free pixels cannot make up the difference
(the area is mostly covered by something of another colour) the screen cannot satisfy its own signatures: that
is reported as a ``Conflict`` (the renderer logs it once per screen), so a graph author sees it instead of a page that
never matches.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

Area = tuple[int, int, int, int]


@dataclass(frozen=True)
class Fill:
    """A colour signature's area, its BGR colour and how far the mean may be from it."""

    name: str
    area: Area
    bgr: tuple[int, int, int]
    tolerance: int

    @property
    def size(self) -> int:
        x1, y1, x2, y2 = self.area
        return max(0, x2 - x1) * max(0, y2 - y1)


@dataclass(frozen=True)
class Conflict:
    """A colour signature that its own screen cannot satisfy, and by how much (largest channel difference)."""

    screen: str
    signature: str
    difference: float
    tolerance: int

    def __str__(self) -> str:
        return (f"{self.screen}: colour signature {self.signature} is covered by other signatures; its mean is "
                f"{self.difference:.0f} from its colour (tolerance {self.tolerance})")


def paint_fills(frame: np.ndarray, fills: list[Fill]) -> None:
    """Flat colour fills, largest first, so a small area inside a large one stays visible."""
    for fill in sorted(fills, key=lambda f: -f.size):
        x1, y1, x2, y2 = fill.area
        frame[y1:y2, x1:x2] = fill.bgr


def container(fills: list[Fill], area: Area) -> Fill | None:
    """The smallest fill that contains the centre of `area` (what text drawn there sits on)."""
    cx, cy = (area[0] + area[2]) / 2, (area[1] + area[3]) / 2
    inside = [f for f in fills if f.area[0] <= cx < f.area[2] and f.area[1] <= cy < f.area[3]]
    return min(inside, key=lambda f: f.size) if inside else None


def balance(frame: np.ndarray, fills: list[Fill], claimed: list[Area], screen: str) -> list[Conflict]:
    """Restore each fill's mean colour using its unclaimed pixels (smallest fill first); return what cannot be."""
    conflicts = []
    done: list[Area] = []
    for fill in sorted(fills, key=lambda f: f.size):
        difference = _balance_one(frame, fill, [*claimed, *done])
        done.append(fill.area)
        if difference > fill.tolerance:
            conflicts.append(Conflict(screen, fill.name, difference, fill.tolerance))
    return conflicts


def _balance_one(frame: np.ndarray, fill: Fill, fixed: list[Area]) -> float:
    x1, y1, x2, y2 = fill.area
    if x2 <= x1 or y2 <= y1:
        return 0.0
    region = frame[y1:y2, x1:x2]
    free = np.ones(region.shape[:2], bool)
    for fx1, fy1, fx2, fy2 in fixed:
        ix1, iy1, ix2, iy2 = max(x1, fx1), max(y1, fy1), min(x2, fx2), min(y2, fy2)
        if ix2 > ix1 and iy2 > iy1:
            free[iy1 - y1 : iy2 - y1, ix1 - x1 : ix2 - x1] = False
    target = np.array(fill.bgr, np.float64)
    count = int(free.sum())
    if count:
        total = region.reshape(-1, 3).sum(axis=0, dtype=np.float64)
        claimed_sum = total - region[free].sum(axis=0, dtype=np.float64)
        needed = (target * region.shape[0] * region.shape[1] - claimed_sum) / count
        region[free] = np.clip(np.rint(needed), 0, 255).astype(np.uint8)
    mean = region.reshape(-1, 3).mean(axis=0)
    return float(np.abs(mean - target).max())


def transition_frame(old: np.ndarray, new: np.ndarray, progress: float, kind: str = "fade") -> np.ndarray:
    """An intermediate frame of a page change `progress` (0..1) of the way from `old` to `new`.

    fade: the two screens blended; slide: the new screen comes in from the right, partly drawn over the old one.
    """
    progress = min(1.0, max(0.0, progress))
    if kind == "slide":
        width = new.shape[1]
        shown = int(round(width * progress))
        out = old.copy()
        if shown:
            out[:, width - shown:] = new[:, :shown]
        return out
    return cv2.addWeighted(old, 1.0 - progress, new, progress, 0.0)  # a tenth of the float blend's cost
