"""The Device protocol: what the engine needs from a phone, every call bounded in time.

Implementations are passed in, never chosen by inheritance: AdbDevice drives a real phone or emulator (and the
simulator, through its fake ADB server); tests may hand in any object with these members.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from engine.device.health import Health

KEYCODES: dict[str, int] = {"home": 3, "back": 4, "enter": 66, "menu": 82, "app_switch": 187}
"""Android key codes of the keys the graph language names (schema.KeyAction)."""


def keycode(name_or_code: str | int) -> int:
    """The Android key code of a key name (``back``), a code (``4``, ``"4"``) or ``KEYCODE_BACK``."""
    if isinstance(name_or_code, int):
        code = name_or_code
    else:
        text = name_or_code.strip().lower().removeprefix("keycode_")
        if text in KEYCODES:
            return KEYCODES[text]
        if not text.isdigit():
            raise ValueError(f"unknown key {name_or_code!r}; known: {', '.join(KEYCODES)} or a key code")
        code = int(text)
    if not 0 <= code <= 400:
        raise ValueError(f"key code {code} is out of range")
    return code


@runtime_checkable
class Device(Protocol):
    """A phone the engine can look at and touch, in the graph's coordinates (its reference resolution)."""

    @property
    def serial(self) -> str: ...

    @property
    def resolution(self) -> tuple[int, int]:
        """(width, height) of frames and tap coordinates: the graph's reference resolution."""

    def screenshot(self, *, allow_black: bool = False) -> np.ndarray:
        """A BGR uint8 frame of shape (height, width, 3).

        Raises:
            BlackFrame: the frame is black or one flat colour (unless `allow_black`).
            DeviceError: the device did not answer within the screenshot policy's bound, or answered garbage.
        """

    def tap(self, x: int, y: int) -> None: ...

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> None: ...

    def key(self, name_or_code: str | int) -> None: ...

    def restart_app(self, package: str, activity: str | None = None) -> None:
        """Force-stop the game's app and launch it again (raises DeviceError when the device refuses)."""

    def health(self) -> Health:
        """A probe that answers in under two seconds whatever the device does; it never raises."""

    def reconnect(self) -> None: ...

    def close(self) -> None: ...
