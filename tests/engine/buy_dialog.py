"""A dialog no graph knows whose biggest, brightest button is BUY and whose close cross is small and faint (issue 46,
point 3), drawn with cv2 by the tests themselves and shown by the simulator as an overlay (engine.sim.overlay).

Only the cross closes it; a tap on BUY is what the search must never do (the overlay swallows it, but the test's
record of taps catches it).
"""

from __future__ import annotations

import cv2
import numpy as np

from engine.sim import Overlay

SIZE = (520, 320)
AT = (380, 200)
"""Top-left of the dialog on a 1280x720 screen."""
BUY = (90, 170, 430, 290)
"""The BUY button inside the dialog (x1, y1, x2, y2): most of the panel's lower half, bright."""
CROSS = (476, 14, 504, 42)
"""The close cross inside the dialog: 28 pixels, a little lighter than the panel."""


def panel() -> np.ndarray:
    w, h = SIZE
    image = np.full((h, w, 3), (62, 58, 56), np.uint8)
    cv2.rectangle(image, (0, 0), (w - 1, h - 1), (90, 88, 86), 2)
    cv2.putText(image, "Special pack", (150, 60), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (200, 200, 200), 2, cv2.LINE_AA)
    cv2.putText(image, "980 gems for 4.99", (150, 120), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (170, 170, 170), 2)
    x1, y1, x2, y2 = BUY
    cv2.rectangle(image, (x1, y1), (x2, y2), (60, 230, 250), -1)
    cv2.putText(image, "BUY", (x1 + 110, y1 + 82), cv2.FONT_HERSHEY_SIMPLEX, 2.2, (20, 20, 20), 6, cv2.LINE_AA)
    x1, y1, x2, y2 = CROSS
    cv2.line(image, (x1 + 5, y1 + 5), (x2 - 5, y2 - 5), (110, 108, 106), 3, cv2.LINE_AA)
    cv2.line(image, (x2 - 5, y1 + 5), (x1 + 5, y2 - 5), (110, 108, 106), 3, cv2.LINE_AA)
    return image


def on_screen(area: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    return area[0] + AT[0], area[1] + AT[1], area[2] + AT[0], area[3] + AT[1]


def offer(*, dim: float = 0.45, then: Overlay | None = None) -> Overlay:
    """The dialog as a simulator overlay, over the page dimmed to `dim`; a tap on its cross closes it."""
    return Overlay("special_pack", panel(), AT, on_screen(CROSS), then=then, dim=dim)
