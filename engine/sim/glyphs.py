"""Labels in a script, as coverage masks: Latin letters, or CJK- and Hangul-like glyphs drawn from seeded strokes.

No font for CJK or Hangul ships with anything the project depends on (Pillow's built-in font is Latin only; cv2's
Hershey fonts too; rapidocr-onnxruntime ships models, not fonts), and the engine must never need a system font. So a
label in those scripts is drawn as glyph-like shapes: each syllable of the (Latin) label seeds a square glyph of
strokes, CJK-like (horizontal, vertical and slanted strokes, dots, sometimes a radical on the left) or Hangul-like
(an initial, a vowel bar and sometimes a final consonant, including the circle). They are not characters anyone
reads, and no OCR reads them: a page whose title is in such a script is told by its title's template, never by OCR.
The same label always gives the same glyphs, so a shared button looks the same on every page.
"""

from __future__ import annotations

import zlib
from functools import lru_cache

import cv2
import numpy as np

from engine.sim.text import MAX_STRETCH, _master

FILL_WIDTH = 0.92
FILL_HEIGHT = 0.8
GLYPH = 64
"""Side of one glyph's master drawing (pixels)."""


def _seed(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def syllables(text: str) -> list[str]:
    """A Latin label cut into syllable-sized pieces (two or three letters), one glyph each; spaces kept."""
    out: list[str] = []
    for word in text.split():
        if out:
            out.append(" ")
        out += [word[i:i + 2] for i in range(0, len(word), 2)] if len(word) < 5 else \
            [word[i:i + 3] for i in range(0, len(word), 3)]
    return out or [text]


def _cjk(rng: np.random.Generator, img: np.ndarray) -> None:
    s, t = GLYPH, max(3, GLYPH // 12)
    x0 = 6
    if rng.random() < 0.5:  # a radical on the left, the rest beside it
        cv2.line(img, (12, 10), (12, s - 10), 255, t)
        cv2.line(img, (5, 24), (20, 20), 255, t)
        x0 = 24
    for _ in range(int(rng.integers(3, 7))):
        kind = rng.integers(0, 4)
        a, b = int(rng.integers(x0, s - 8)), int(rng.integers(8, s - 8))
        if kind == 0:
            cv2.line(img, (x0, b), (s - 6, b), 255, t)
        elif kind == 1:
            cv2.line(img, (a, 6), (a, s - 6), 255, t)
        elif kind == 2:
            cv2.line(img, (a, b), (int(np.clip(a + rng.integers(-20, 20), 4, s - 4)), s - 6), 255, t)
        else:
            cv2.circle(img, (a, b), t, 255, -1)


def _hangul(rng: np.random.Generator, img: np.ndarray) -> None:
    """An initial consonant, a vowel (a long bar beside it or below it, with one or two short strokes) and
    sometimes a final consonant below: the blocks Hangul builds its syllables of."""
    s, t = GLYPH, max(3, GLYPH // 12)
    final = rng.random() < 0.5
    bottom = s // 2 + 2 if final else s - 6
    beside = rng.random() < 0.6
    right = int(rng.integers(s // 2 - 4, s // 2 + 8)) if beside else s - 6
    low = bottom if beside else int(rng.integers(s // 3, s // 2))
    _consonant(rng, img, (6, 6, right - 6, low - 4), t)
    if beside:
        vx = int(rng.integers(right + 4, s - 6))
        cv2.line(img, (vx, 6), (vx, bottom), 255, t)
        for _ in range(int(rng.integers(1, 3))):
            y = int(rng.integers(12, bottom - 6))
            cv2.line(img, (vx, y), (vx + (10 if rng.random() < 0.6 else -10), y), 255, t)
    else:
        vy = int(rng.integers(low + 2, bottom))
        cv2.line(img, (6, vy), (s - 6, vy), 255, t)
        for _ in range(int(rng.integers(1, 3))):
            x = int(rng.integers(14, s - 14))
            cv2.line(img, (x, vy), (x, vy - 9), 255, t)
    if final:
        _consonant(rng, img, (10, bottom + 6, s - 10, s - 4), t)


def _consonant(rng: np.random.Generator, img: np.ndarray, box: tuple[int, int, int, int], t: int) -> None:
    x1, y1, x2, y2 = box
    if x2 - x1 < 6 or y2 - y1 < 6:
        return
    kind = int(rng.integers(0, 6))
    if kind == 0:
        cv2.ellipse(img, ((x1 + x2) // 2, (y1 + y2) // 2), ((x2 - x1) // 2, (y2 - y1) // 2), 0, 0, 360, 255, t)
    elif kind == 1:
        cv2.polylines(img, [np.array([[x1, y1], [x2, y1], [x2, y2]])], False, 255, t)
    elif kind == 2:
        cv2.polylines(img, [np.array([[x2, y1], [x1, y1], [x1, y2], [x2, y2]])], False, 255, t)
    elif kind == 3:
        cv2.rectangle(img, (x1, y1), (x2, y2), 255, t)
    elif kind == 4:
        cv2.polylines(img, [np.array([[x1, y1], [x1, y2], [x2, y2]])], False, 255, t)
    else:
        cv2.line(img, ((x1 + x2) // 2, y1), (x1, y2), 255, t)
        cv2.line(img, ((x1 + x2) // 2, y1), (x2, y2), 255, t)


@lru_cache(maxsize=1024)
def _glyph(piece: str, script: str) -> np.ndarray:
    img = np.zeros((GLYPH, GLYPH), np.uint8)
    if piece != " ":
        rng = np.random.default_rng(_seed(f"{script}:{piece}"))
        (_cjk if script == "cjk" else _hangul)(rng, img)
    return img


@lru_cache(maxsize=512)
def master_mask(text: str, script: str) -> np.ndarray:
    """`text` in `script` drawn white on black at the master size (uint8, read-only; cached)."""
    if script == "latin":
        return np.ascontiguousarray(_master(text, (255, 255, 255), (0, 0, 0))[:, :, 0])
    pieces = [_glyph(p, script) for p in syllables(text)]
    pieces = [p if p.any() else p[:, : GLYPH // 2] for p in pieces]
    out = np.concatenate([np.pad(p, ((8, 8), (4, 4))) for p in pieces], axis=1)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=1024)
def fitted_mask(text: str, script: str, width: int, height: int) -> tuple[np.ndarray, int, int]:
    """(coverage 0..1 float32, x, y): `text` scaled to fit a width x height box, and where it goes in the box."""
    master = master_mask(text, script)
    mh, mw = master.shape
    scale = min(width * FILL_WIDTH / mw, height * FILL_HEIGHT / mh)
    nw, nh = int(min(width * FILL_WIDTH, mw * scale * MAX_STRETCH)), int(mh * scale)
    if nw < 2 or nh < 2:
        return np.zeros((1, 1), np.float32), 0, 0
    small = cv2.resize(master, (nw, nh), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0
    small.setflags(write=False)
    return small, (width - nw) // 2, (height - nh) // 2


def draw_text(frame: np.ndarray, area: tuple[int, int, int, int], text: str, script: str, ink_bgr,
              strength: float = 1.0) -> None:
    """Blend `text` in `ink_bgr` into `area` of `frame` (in place), over whatever is drawn there."""
    x1, y1, x2, y2 = area
    if not text.strip() or x2 - x1 < 4 or y2 - y1 < 4:
        return
    mask, ox, oy = fitted_mask(text, script, x2 - x1, y2 - y1)
    h, w = mask.shape
    region = frame[y1 + oy:y1 + oy + h, x1 + ox:x1 + ox + w]
    if region.shape[:2] != mask.shape:
        return
    alpha = (mask * strength)[:, :, None]
    region[:] = (region * (1.0 - alpha) + np.array(ink_bgr, np.float32) * alpha).astype(np.uint8)
