"""Text the simulator draws where a graph expects OCR to read something: legible to RapidOCR, not just to a human.

OpenCV's Hershey fonts read badly (RapidOCR took the simulator's own "FLOOR 4" for "FLO0R 4", dropped spaces and
invented glyphs in wide blank margins), so text is drawn with Pillow's built-in scalable font (Pillow is already
required by adbutils and rapidocr, and the font ships inside Pillow: no system font is needed), rendered once at a
large size, then scaled into the area so it spans most of the area's width (stretched up to ``MAX_STRETCH``
horizontally): blank margins are what the recogniser fills with junk.
"""

from __future__ import annotations

from functools import lru_cache

import cv2
import numpy as np
from PIL import Image, ImageDraw, ImageFont

Area = tuple[int, int, int, int]
RENDER_SIZE = 64
"""Font size of the master rendering (pixels), scaled down into each area."""
FILL_HEIGHT = 0.95
FILL_WIDTH = 0.94
MAX_STRETCH = 1.5
"""Largest horizontal stretch that keeps glyphs recognisable while filling a wide area."""
PAD = 6


@lru_cache(maxsize=1)
def _font():
    return ImageFont.load_default(RENDER_SIZE)


@lru_cache(maxsize=512)
def _master(text: str, ink: tuple[int, int, int], paper: tuple[int, int, int]) -> np.ndarray:
    """`text` drawn tight at the master size: a read-only RGB array (cached, pages share labels)."""
    font = _font()
    left, top, right, bottom = font.getbbox(text)
    canvas = Image.new("RGB", (right - left + 2 * PAD, bottom - top + 2 * PAD), paper)
    ImageDraw.Draw(canvas).text((PAD - left, PAD - top), text, font=font, fill=ink)
    array = np.asarray(canvas).copy()
    array.setflags(write=False)
    return array


def draw_label(frame: np.ndarray, area: Area, text: str, *, ink=(20, 20, 20), paper=(235, 235, 235)) -> None:
    """Fill `area` of the BGR `frame` with `paper` and draw `text` in `ink` across it (both BGR)."""
    x1, y1, x2, y2 = area
    w, h = x2 - x1, y2 - y1
    if w <= 0 or h <= 0:
        return
    frame[y1:y2, x1:x2] = paper
    if not text.strip() or w < 4 or h < 4:
        return
    master = _master(text, tuple(int(c) for c in ink), tuple(int(c) for c in paper))
    mh, mw = master.shape[:2]
    scale = min(w * FILL_WIDTH / mw, h * FILL_HEIGHT / mh)
    nw = int(min(w * FILL_WIDTH, mw * scale * MAX_STRETCH))
    nh = int(mh * scale)
    if nw < 2 or nh < 2:
        return
    small = cv2.resize(master, (nw, nh), interpolation=cv2.INTER_AREA)
    ox, oy = x1 + (w - nw) // 2, y1 + (h - nh) // 2
    frame[oy : oy + nh, ox : ox + nw] = small


def contrasting_ink(paper_bgr) -> tuple[int, int, int]:
    """Black or white, whichever reads better on `paper_bgr`."""
    b, g, r = (float(c) for c in paper_bgr)
    return (20, 20, 20) if 0.299 * r + 0.587 * g + 0.114 * b >= 128 else (245, 245, 245)
