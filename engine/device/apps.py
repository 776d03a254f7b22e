"""Which app is in the foreground, read from the device's window manager.

The parse follows adbutils' ``AdbDevice.app_current`` (adbutils/shell.py, which cites uiautomator2 issue 200):
``dumpsys window windows`` prints ``mCurrentFocus=Window{41b37570 u0 com.example/com.example.MainActivity}`` and
``mFocusedApp=... ActivityRecord{422dee38 u0 com.example/.UI.PlayActivity t14}``; a relative activity (``.UI.X``)
belongs to its package. A launcher or the system UI in front is no game: None.
"""

from __future__ import annotations

import re
from typing import Any

_FOCUS = re.compile(r"mCurrentFocus=Window\{.*\s+(?P<package>[^\s/{}]+)/(?P<activity>[^\s{}]+)\}")
_FOCUSED_APP = re.compile(r"mFocusedApp=.*ActivityRecord\{\w+ \w+ (?P<package>[^\s/]+)/(?P<activity>[^\s}]+)")
NOT_A_GAME = re.compile(r"launcher|systemui|^android$|^com\.android\.settings$|packageinstaller|permissioncontroller",
                        re.I)
"""Packages in front that are not the game: home screens, the system UI, settings and permission dialogs."""


def parse_foreground(text: str) -> tuple[str, str] | None:
    """(package, activity) of the focused window in `dumpsys window` output, or None (nothing focused, or no game)."""
    found = _FOCUS.search(text) or _FOCUSED_APP.search(text)
    if found is None:
        return None
    package, activity = found.group("package"), found.group("activity")
    if activity.startswith("."):
        activity = package + activity
    return None if NOT_A_GAME.search(package) else (package, activity)


def foreground_app(device: Any) -> tuple[str, str] | None:
    """(package, activity) of the app in front on `device` (an engine.device.adb.AdbDevice), or None when it cannot
    be told (no answer within the shell's bound, a launcher in front)."""
    shell = getattr(device, "_shell", None)
    if shell is None:
        return None
    try:
        return parse_foreground(shell("dumpsys window windows", doing="read the app in the foreground"))
    except Exception:  # a device that cannot say: the caller goes on without a restart of its own
        return None
