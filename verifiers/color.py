"""Colour verifier: the mean colour of an area against an expected RGB, within a per-channel tolerance.

The cheapest check there is (one cv2.mean over a slice) and the weakest: on real frames unrelated screens share
colours, so the observer never names a page or popup on colour alone when a template exists for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from engine.config.schema import ColorSignature, Graph, Page
from engine.core.results import Evidence
from verifiers.common import TimedCheck, clip, field, signature_name


@dataclass(frozen=True, eq=False)
class ColorCheck(TimedCheck):
    """A colour signature compiled once: clipped area, expected BGR, tolerance."""

    name: str
    area: tuple[int, int, int, int]
    bgr: tuple[float, float, float]
    tolerance: int
    channel = "color"
    cost = 0
    strong = False

    def measure(self, frame: np.ndarray) -> tuple[bool, float, None]:
        x1, y1, x2, y2 = self.area
        if x2 <= x1 or y2 <= y1:
            return False, 0.0, None
        b, g, r, _ = cv2.mean(frame[y1:y2, x1:x2])
        diff = max(abs(b - self.bgr[0]), abs(g - self.bgr[1]), abs(r - self.bgr[2]))
        return diff <= self.tolerance, 1.0 - diff / 255.0, None


def compile_color(signature: ColorSignature, graph: Graph, page: Page | None = None) -> ColorCheck:
    area = field(signature, graph, "area")
    rgb = field(signature, graph, "rgb", "color")
    if area is None or rgb is None:
        raise ValueError(f"colour signature {signature_name(signature)} has no area or colour (button without color?)")
    tolerance = signature.tolerance if signature.tolerance is not None else graph.settings(page).color_tolerance
    return ColorCheck(
        name=signature_name(signature),
        area=clip(tuple(area), graph.resolution),
        bgr=(float(rgb[2]), float(rgb[1]), float(rgb[0])),
        tolerance=int(tolerance),
    )


def verify(frame: np.ndarray, signature: ColorSignature | ColorCheck, graph: Graph | None = None,
           page: Page | None = None) -> Evidence:
    """One-off check; hot paths compile once with ``compile_color`` and call ``ColorCheck.verify``."""
    check = signature if isinstance(signature, ColorCheck) else compile_color(signature, graph, page)
    return check.verify(frame)
