"""A dialog no graph knows, drawn by the tests themselves (not one of the shipped popups): issue 29's "Limited
offer!" (500x300 over the middle of the screen, a title, a BUY NOW button, and a red X, the only thing that closes
it). Its X can stay put or move each time it shows (same title and frame); `model` answers for the vision
endpoint where the X of the dialog on screen now is, as a model that reads the screen would.
"""

from __future__ import annotations

import random

import cv2
import numpy as np

from engine.sim import Overlay

SIZE = (500, 300)
AT = (390, 210)
"""Top-left of the dialog on a 1280x720 screen (centred)."""
X_SIZE = 40
FIXED_X = (440, 12)
"""The X's top-left inside the dialog when it does not move (the title bar's right end)."""
BODY = (20, 80, 440, 190)
"""Where a moving X may sit inside the dialog (x1, y1, x2, y2 of its top-left): below the title, above BUY NOW."""


def panel(x_spot: tuple[int, int] = FIXED_X) -> np.ndarray:
    """The dialog's pixels with its X at `x_spot` (top-left, dialog coordinates)."""
    w, h = SIZE
    image = np.full((h, w, 3), (70, 40, 90), np.uint8)
    cv2.rectangle(image, (0, 0), (w - 1, h - 1), (200, 200, 230), 4)
    image[4:64, 4:w - 4] = (150, 90, 30)
    cv2.putText(image, "Limited offer!", (110, 46), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (255, 255, 255), 3, cv2.LINE_AA)
    cv2.putText(image, "300 gems, today only", (120, 130), cv2.FONT_HERSHEY_SIMPLEX, 0.8, (220, 220, 220), 2)
    cv2.rectangle(image, (170, 222), (330, 278), (60, 170, 60), -1)
    cv2.putText(image, "BUY NOW", (188, 260), cv2.FONT_HERSHEY_SIMPLEX, 0.9, (255, 255, 255), 2, cv2.LINE_AA)
    x, y = x_spot
    image[y:y + X_SIZE, x:x + X_SIZE] = (40, 40, 220)
    cv2.line(image, (x + 9, y + 9), (x + X_SIZE - 10, y + X_SIZE - 10), (255, 255, 255), 4)
    cv2.line(image, (x + X_SIZE - 10, y + 9), (x + 9, y + X_SIZE - 10), (255, 255, 255), 4)
    return image


def offer(x_spot: tuple[int, int] = FIXED_X, *, then: Overlay | None = None, returns: str = "next_hop") -> Overlay:
    """The dialog as a simulator overlay; a tap on its X closes it (`then`: the one that comes back)."""
    x, y = AT[0] + x_spot[0], AT[1] + x_spot[1]
    return Overlay("limited_offer", panel(x_spot), AT, (x, y, x + X_SIZE, y + X_SIZE), then=then, returns=returns)


def moving_spot(rng: random.Random) -> tuple[int, int]:
    """Somewhere else in the dialog's body for its X."""
    return rng.randint(BODY[0], BODY[2]), rng.randint(BODY[1], BODY[3])


def model(game):
    """The vision endpoint's answer now: the centre of the X on screen (none when the dialog does not show)."""

    def answer() -> dict:
        shown = game.overlays.shown
        tap = None
        if shown:
            x1, y1, x2, y2 = shown[-1].closes
            tap = [(x1 + x2) // 2, (y1 + y2) // 2]
        return {"page": None, "popup": None, "blocking_element": "Limited offer! dialog" if tap else "",
                "ocr_text": "Limited offer!" if tap else "", "suggested_action": "dismiss_popup_then_retry",
                "confidence": 0.9 if tap else 0.2, "tap": tap}

    return answer
