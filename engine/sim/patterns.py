"""Deterministic drawing primitives of the simulator: textures and identity patterns seeded by a name (crc32, not
the salted hash(), so a name draws the same pixels in every process), and text fitted into an area."""

from __future__ import annotations

import zlib

import cv2
import numpy as np

Area = tuple[int, int, int, int]


def seed_of(name: str) -> int:
    """A stable 32-bit seed for a name (hash() is salted per process, crc32 is not)."""
    return zlib.crc32(name.encode("utf-8"))


def texture(name: str, width: int, height: int) -> np.ndarray:
    """A BGR texture seeded by `name`: a gradient, stripes and noise, so templates have structure to match."""
    rng = np.random.default_rng(seed_of(name))
    width, height = max(1, width), max(1, height)
    base = rng.integers(40, 216, size=3).astype(np.float32)
    tilt = rng.uniform(-60, 60, size=(2, 3)).astype(np.float32)
    period = float(rng.integers(6, 24))
    angle = rng.uniform(0, np.pi)
    amplitude = rng.uniform(10, 30, size=3).astype(np.float32)
    # Separable pieces broadcast to (h, w, 3): cheap enough to draw a 1280x720 page in a few milliseconds.
    xs = np.arange(width, dtype=np.float32)
    ys = np.arange(height, dtype=np.float32)
    phase = (xs[None, :] * np.float32(np.cos(angle)) + ys[:, None] * np.float32(np.sin(angle)))
    stripes = np.sin(phase * np.float32(2 * np.pi / period))
    img = (base + tilt[0] * (xs / max(width - 1, 1))[None, :, None] + tilt[1] * (ys / max(height - 1, 1))[:, None, None]
           + stripes[:, :, None] * amplitude)
    noise = rng.integers(-10, 11, size=(height, width, 1), dtype=np.int8).astype(np.float32)
    return np.clip(img + noise, 0, 255).astype(np.uint8)


def identity_pattern(name: str, width: int, height: int) -> np.ndarray:
    """A texture plus a blocky random pattern seeded by `name`: what makes one synthetic template itself.

    Stripes alone correlate with other stripes (a 9x16 template found a 0.87 match inside a striped popup
    panel); independent random 3 px cells do not, so a template only matches where it was drawn.
    """
    rng = np.random.default_rng(seed_of("cells:" + name))
    width, height = max(1, width), max(1, height)
    cells = rng.integers(-50, 51, size=(-(-height // 3), -(-width // 3), 1)).astype(np.float32)
    blocks = np.repeat(np.repeat(cells, 3, axis=0), 3, axis=1)[:height, :width]
    return np.clip(texture(name, width, height).astype(np.float32) + blocks, 0, 255).astype(np.uint8)


def put_text_fit(img: np.ndarray, text: str, area: Area, color=(255, 255, 255), outline=(0, 0, 0)) -> None:
    """Draw `text` as large as fits inside `area` of `img`, centred, with an outline for contrast."""
    x1, y1, w, h = area[0], area[1], area[2] - area[0], area[3] - area[1]
    if not text or w < 4 or h < 4:
        return
    font = cv2.FONT_HERSHEY_SIMPLEX
    (tw, th), base = cv2.getTextSize(text, font, 1.0, 2)
    scale = min((w - 4) / max(tw, 1), (h - 4) / max(th + base, 1), 3.0)
    if scale <= 0.05:
        return
    thickness = max(1, int(round(scale * 2)))
    (tw, th), base = cv2.getTextSize(text, font, scale, thickness)
    org = (x1 + (w - tw) // 2, y1 + (h + th) // 2 - base // 2)
    if outline is not None:
        cv2.putText(img, text, org, font, scale, outline, thickness + 2, cv2.LINE_AA)
    cv2.putText(img, text, org, font, scale, color, thickness, cv2.LINE_AA)
