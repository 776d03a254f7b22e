"""A dialog no graph knows, drawn by the tests themselves (not one of the shipped popups): issue 29's "Limited
offer!" (500x300 over the middle of the screen, a title, a BUY NOW button, and a red X, the only thing that closes
it). Its X can stay put or move each time it shows (same title and frame); `model` answers for the vision
endpoint where the X of the dialog on screen now is, as a model that reads the screen would.

Issue 36's variants: the page beneath dimmed to 45 % (`dim`), the panel itself shifted by tens of pixels between
showings (`shift`), a dialog that only the back key closes (`back=True`: no X; the model names no point), and a
second dialog with another title and another close button ("Daily login", a green OK) shown in the same run.
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


DIM = 0.45
"""How bright the page beneath a dimming dialog stays."""
SHIFT = 40
"""How far (pixels, each way) a shifting panel moves from AT between showings."""


OFFER_COLOURS = ((70, 40, 90), (150, 90, 30))
"""The offer's body and title bar colours."""


def panel(x_spot: tuple[int, int] | None = FIXED_X, *, title: str = "Limited offer!",
          colours: tuple = OFFER_COLOURS) -> np.ndarray:
    """The dialog's pixels with its X at `x_spot` (top-left, dialog coordinates; None: no X)."""
    w, h = SIZE
    image = np.full((h, w, 3), colours[0], np.uint8)
    cv2.rectangle(image, (0, 0), (w - 1, h - 1), (200, 200, 230), 4)
    image[4:64, 4:w - 4] = colours[1]
    cv2.putText(image, title, (110, 46), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (255, 255, 255), 3, cv2.LINE_AA)
    for i, line in enumerate(("300 gems, today only", "and a skin for the first", "purchase of the week")):
        cv2.putText(image, line, (120, 110 + 32 * i), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (220, 220, 220), 2)
    cv2.rectangle(image, (170, 222), (330, 278), (60, 170, 60), -1)
    cv2.putText(image, "BUY NOW", (188, 260), cv2.FONT_HERSHEY_SIMPLEX, 0.9, (255, 255, 255), 2, cv2.LINE_AA)
    if x_spot is not None:
        x, y = x_spot
        image[y:y + X_SIZE, x:x + X_SIZE] = (40, 40, 220)
        cv2.line(image, (x + 9, y + 9), (x + X_SIZE - 10, y + X_SIZE - 10), (255, 255, 255), 4)
        cv2.line(image, (x + X_SIZE - 10, y + 9), (x + 9, y + X_SIZE - 10), (255, 255, 255), 4)
    return image


def offer(x_spot: tuple[int, int] = FIXED_X, *, then: Overlay | None = None, returns: str = "next_hop",
          dim: float = 1.0, at: tuple[int, int] = AT, back: bool = False) -> Overlay:
    """The dialog as a simulator overlay; a tap on its X closes it (`then`: the one that comes back); `back`:
    it has no X and the back key closes it."""
    x, y = at[0] + x_spot[0], at[1] + x_spot[1]
    return Overlay("limited_offer", panel(None if back else x_spot), at, (x, y, x + X_SIZE, y + X_SIZE), then=then,
                   returns=returns, dim=dim, back=back)


OWN_COLOURS = ((40, 80, 40), (30, 120, 150))
"""The login dialog's own body and title bar colours (the offer's are panel()'s default)."""


def login(*, dim: float = 1.0, then: Overlay | None = None, colours: tuple = OWN_COLOURS) -> Overlay:
    """Another dialog: "Daily login", closed only by its green OK at the bottom right of the panel (`colours`:
    its body and title bar, its own unless a test gives it the offer's, as one game's dialogs share a style)."""
    image = panel(None, title="Daily login", colours=colours)
    cv2.rectangle(image, (380, 230), (480, 280), (40, 200, 60), -1)
    cv2.putText(image, "OK", (410, 265), cv2.FONT_HERSHEY_SIMPLEX, 0.9, (255, 255, 255), 2, cv2.LINE_AA)
    return Overlay("daily_login", image, AT, (AT[0] + 380, AT[1] + 230, AT[0] + 480, AT[1] + 280), then=then,
                   dim=dim)


def shifted(rng: random.Random) -> tuple[int, int]:
    """Where a shifting panel's top-left is this time (within SHIFT of AT)."""
    return AT[0] + rng.randint(-SHIFT, SHIFT), AT[1] + rng.randint(-SHIFT, SHIFT)


def moving_spot(rng: random.Random) -> tuple[int, int]:
    """Somewhere else in the dialog's body for its X."""
    return rng.randint(BODY[0], BODY[2]), rng.randint(BODY[1], BODY[3])


def model(game):
    """The vision endpoint's answer now: the centre of the X on screen (none when the dialog does not show)."""

    def answer() -> dict:
        shown = game.overlays.shown
        tap, label = None, ""
        if shown:
            top = shown[-1]
            label = "Daily login dialog" if top.name == "daily_login" else "Limited offer! dialog"
            if not top.back:  # (a dialog closed by the back key has nothing to tap)
                x1, y1, x2, y2 = top.closes
                tap = [(x1 + x2) // 2, (y1 + y2) // 2]
        return {"page": None, "popup": None, "blocking_element": label, "ocr_text": label.removesuffix(" dialog"),
                "suggested_action": "dismiss_popup_then_retry", "confidence": 0.9 if shown else 0.2, "tap": tap}

    return answer
