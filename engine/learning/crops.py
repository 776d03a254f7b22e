"""Where a lesson is cut: the dialog's box, the signature (what stays: the title band) and the button that was tapped.

A dialog covers part of a page. Its box is where the frame with it differs from the page beneath (a clean frame of
that page, or the look after the tap that closed it). Its signature is the top band of that box (a title, steadier
than what a dialog shows in its body, and the same wherever its button sits), unless frames of known pages match
that band too; then the candidate boxes around the tapped point compete, and the one known frames match least wins.
Its button is a small crop around the tapped point, which the learned popup searches for inside the box (so a
button that moves is still found: engine.observe.taps).
"""

from __future__ import annotations

import cv2
import numpy as np

from verifiers.template import MIN_STRONG_PIXELS, is_flat

Box = tuple[int, int, int, int]

HALF_SIZES = ((20, 14), (32, 20), (48, 32), (72, 44))
"""Candidate crops around the tapped point: half width and half height in pixels."""
SEARCH_PAD = 16
"""How far around its place a crop is looked for on another frame."""
SAME_SCREEN = 0.9
"""A proposal's crop matching a new frame this well where it was cut: the same screen, seen again."""
TITLE_SIZE = (320, 56)
"""Largest title band (width, height) cut from the top of what covers the page."""
TITLE_APART = 0.7
"""A title band that no known frame matches this well is the signature (it stays where the button moves)."""
CHANGED = 30
"""Least per-channel difference of a pixel that a dialog changed."""
DIMMED = 0.8
"""A page beneath at less than this share of its brightness was dimmed behind the dialog."""
GROUP_PAD = 96
"""How far from where it was cut a proposal's signature is looked for on a new sighting: a dialog whose panel
shifts by tens of pixels between showings is still the same dialog."""
WHOLE = 0.9
"""A change over more than this share of the screen is no dialog box (the whole page was dimmed or replaced)."""


def best_score(crop: np.ndarray, frame: np.ndarray, area: Box, pad: int = SEARCH_PAD) -> float:
    """The best normalised match of `crop` on `frame` around `area` (0 when it cannot be placed there)."""
    x1, y1, x2, y2 = area
    h, w = frame.shape[:2]
    region = frame[max(0, y1 - pad):min(h, y2 + pad), max(0, x1 - pad):min(w, x2 + pad)]
    if region.shape[0] < crop.shape[0] or region.shape[1] < crop.shape[1]:
        return 0.0
    scores = cv2.matchTemplate(region, crop, cv2.TM_CCOEFF_NORMED)
    return float(np.nan_to_num(scores).max())


def dialog_box(frame: np.ndarray, beneath: np.ndarray | None) -> Box | None:
    """Where `frame` differs from the page `beneath` it: the box of what covers the page, the page's dimming
    (a dialog's backdrop) taken out first (None without a page of the same shape, without a difference, or when
    it covers (nearly) the whole screen)."""
    if beneath is None or beneath.shape != frame.shape:
        return None
    base, now = beneath[::8, ::8].astype(np.float32).sum(axis=2), frame[::8, ::8].astype(np.float32).sum(axis=2)
    bright = base > 60
    gain = float(np.median(now[bright] / base[bright])) if bright.sum() > 16 else 1.0
    if gain < DIMMED:  # the page beneath is dimmed: compare with it dimmed alike
        beneath = cv2.convertScaleAbs(beneath, alpha=gain)
    changed = cv2.absdiff(frame, beneath).max(axis=2) > CHANGED
    rows, cols = np.flatnonzero(changed.any(axis=1)), np.flatnonzero(changed.any(axis=0))
    if rows.size == 0 or cols.size == 0:
        return None
    box = int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1
    whole = frame.shape[0] * frame.shape[1]
    return None if (box[2] - box[0]) * (box[3] - box[1]) > WHOLE * whole else box


def title_of(box: Box | None) -> Box | None:
    """The top band of a dialog's box, centred, at most TITLE_SIZE."""
    if box is None:
        return None
    x1, y1, x2, y2 = box
    width, height = min(TITLE_SIZE[0], x2 - x1), min(TITLE_SIZE[1], y2 - y1)
    left = max(0, (x1 + x2) // 2 - width // 2)
    return left, y1, left + width, y1 + height


def title_band(frame: np.ndarray, beneath: np.ndarray | None) -> Box | None:
    """The top band of what covers the page (`dialog_box`, then `title_of`)."""
    return title_of(dialog_box(frame, beneath))


def still_there(box: Box, frame: np.ndarray, beneath: np.ndarray) -> bool:
    """Whether most of `box` on `frame` still differs from the clean page `beneath` (the dialog did not go, or it
    came back at once)."""
    x1, y1, x2, y2 = box
    if frame.shape != beneath.shape:
        return False
    changed = cv2.absdiff(frame[y1:y2, x1:x2], beneath[y1:y2, x1:x2]).max(axis=2) > CHANGED
    return changed.size > 0 and float(changed.mean()) > 0.5


def usable(crop: np.ndarray) -> bool:
    """A crop with texture: a flat one matches anything (or nothing) by chance."""
    return crop.size > 0 and min(crop.shape[:2]) >= 8 and float(crop.std()) >= 1.0


def choose_crop(frame: np.ndarray, point: tuple[int, int], known: list[np.ndarray],
                extra: list[Box] = ()) -> tuple[Box, float]:
    """Of the candidate boxes (around `point`, then `extra`), the one known frames match least: (area, its
    collision score); a later candidate must be clearly better to win."""
    h, w = frame.shape[:2]
    best: tuple[Box, float] | None = None
    x, y = point
    around = [(max(0, x - hw), max(0, y - hh), min(w, x + hw), min(h, y + hh)) for hw, hh in HALF_SIZES]
    for area in [*around, *extra]:
        crop = frame[area[1]:area[3], area[0]:area[2]]
        if not usable(crop):
            continue
        collision = max((best_score(crop, other, area) for other in known), default=0.0)
        if best is None or collision < best[1] - 0.02:
            best = (area, collision)
    if best is None:
        raise ValueError(f"no usable crop around {list(point)}: the frame is flat there")
    return best


def signature_area(frame: np.ndarray, point: tuple[int, int], known: list[np.ndarray],
                   box: Box | None) -> tuple[Box, float]:
    """The signature of a dialog: its title band when known frames do not match it (what stays when the button
    moves), else the candidate known frames match least (`choose_crop`). (area, collision)."""
    title = title_of(box)
    crop = frame[title[1]:title[3], title[0]:title[2]] if title is not None else None
    if crop is not None and crop.shape[0] * crop.shape[1] >= MIN_STRONG_PIXELS and \
            not is_flat(cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY)):  # strong evidence, not a flat band
        collision = max((best_score(crop, other, title) for other in known), default=0.0)
        if collision < TITLE_APART:
            return title, collision
    return choose_crop(frame, point, known, [title] if title else [])


def button_area(point: tuple[int, int], box: Box | None) -> Box | None:
    """The tapped button: the smallest candidate crop around `point`, inside the dialog's `box` (None when the
    point is not inside it)."""
    if box is None:
        return None
    x, y = point
    x1, y1, x2, y2 = box
    if not (x1 <= x < x2 and y1 <= y < y2):
        return None
    hw, hh = HALF_SIZES[0]
    return max(x1, x - hw), max(y1, y - hh), min(x2, x + hw), min(y2, y + hh)


def find_again(crop: np.ndarray | None, frame: np.ndarray | None, area: list[int] | Box,
               pad: int = GROUP_PAD) -> tuple[int, int] | None:
    """Where a proposal's crop is on `frame` (its offset from where it was cut), when it is found within `pad`
    pixels as well as SAME_SCREEN; None when not: another screen."""
    if crop is None or frame is None:
        return None
    x1, y1, x2, y2 = (int(v) for v in area)
    h, w = frame.shape[:2]
    left, top = max(0, x1 - pad), max(0, y1 - pad)
    region = frame[top:min(h, y2 + pad), left:min(w, x2 + pad)]
    if region.shape[0] < crop.shape[0] or region.shape[1] < crop.shape[1]:
        return None
    scores = np.nan_to_num(cv2.matchTemplate(region, crop, cv2.TM_CCOEFF_NORMED))
    _, best, _, (bx, by) = cv2.minMaxLoc(scores)
    return (left + bx - x1, top + by - y1) if best >= SAME_SCREEN else None


def same_screen(crop: np.ndarray | None, frame: np.ndarray | None, area: list[int] | Box) -> bool:
    """Whether a proposal's crop is found on `frame` where it was cut: the same screen, seen again."""
    return crop is not None and frame is not None and best_score(crop, frame, tuple(area), 8) >= SAME_SCREEN


def around(point: tuple[int, int], frame: np.ndarray) -> np.ndarray:
    hw, hh = HALF_SIZES[-1]
    x, y = point
    return frame[max(0, y - hh):y + hh, max(0, x - hw):x + hw]


def same_around(point: tuple[int, int], frame: np.ndarray, other: np.ndarray) -> bool:
    """Whether `other` shows what `frame` shows around `point` (the widest candidate box)."""
    a, b = around(point, frame), around(point, other)
    return a.shape == b.shape and float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean()) < 2.0
