"""Overlays: dialogs the simulator draws over whatever shows that no graph declares (a screen the engine never saw).

A test (or a scripted scenario) hands the game an ``Overlay``: its pixels, where they go, and the box a tap must
hit to close it. While one shows, it swallows every other tap, key and swipe (only its close box works, as a
"Limited offer!" dialog with a red X does). ``then`` is the overlay that comes back after it was closed: at once
(``returns="at_once"``) or on the arrival of the next page change (``returns="next_hop"``), so a dialog can come
back, with its button elsewhere if the next one draws it there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

Area = tuple[int, int, int, int]


@dataclass(frozen=True)
class Overlay:
    """One dialog drawn over the screen: `image` (BGR) with its top-left at `at`; a tap inside `closes` (screen
    pixels, x2/y2 exclusive) closes it."""

    name: str
    image: np.ndarray
    at: tuple[int, int]
    closes: Area
    then: "Overlay | None" = None
    returns: Literal["at_once", "next_hop"] = "next_hop"
    dim: float = 1.0
    back: bool = False

    def draw(self, frame: np.ndarray) -> None:
        """Paste the dialog onto `frame` in place (clipped to the frame), over the screen dimmed by `dim`."""
        if self.dim < 1.0:
            np.multiply(frame, self.dim, out=frame, casting="unsafe")
        x, y = self.at
        h, w = self.image.shape[:2]
        fh, fw = frame.shape[:2]
        x2, y2 = min(fw, x + w), min(fh, y + h)
        if x2 > x >= 0 and y2 > y >= 0:
            frame[y:y2, x:x2] = self.image[:y2 - y, :x2 - x]

    def closed_by(self, x: int, y: int) -> bool:
        x1, y1, x2, y2 = self.closes
        return x1 <= x < x2 and y1 <= y < y2


class Overlays:
    """The overlays on screen (the last drawn on top) and those waiting to come back on the next page change."""

    def __init__(self) -> None:
        self.shown: list[Overlay] = []
        self.waiting: list[Overlay] = []

    def show(self, overlay: Overlay) -> None:
        self.shown.append(overlay)

    def draw(self, frame: np.ndarray) -> np.ndarray:
        if self.shown:
            frame = frame.copy()
            for overlay in self.shown:
                overlay.draw(frame)
        return frame

    def tap(self, x: int, y: int) -> bool:
        """A tap while overlays show: the top one closes when it is hit; every tap is taken. False: none shows."""
        if not self.shown:
            return False
        top = self.shown[-1]
        if not top.back and top.closed_by(x, y):
            self._close()
        return True

    def key(self, name: str) -> bool:
        """A key while overlays show: back closes the top one when it is closed by back; every key is taken."""
        if not self.shown:
            return False
        if name == "back" and self.shown[-1].back:
            self._close()
        return True

    def _close(self) -> None:
        top = self.shown.pop()
        if top.then is not None:
            (self.shown if top.returns == "at_once" else self.waiting).append(top.then)

    def arrived(self) -> None:
        """A page change ended: the overlays waiting for it show."""
        self.shown.extend(self.waiting)
        self.waiting.clear()

    def clear(self) -> None:
        self.shown.clear()
        self.waiting.clear()

    def names(self) -> list[str]:
        return [o.name for o in self.shown]
