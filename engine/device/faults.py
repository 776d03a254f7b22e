"""One place that turns what adbutils and sockets raise into the engine's device errors, grouped by recovery.

Transient (retry after a reconnect): timeouts, connections reset or closed mid-answer, "device offline".
Persistent (retrying will not help; probe health and report): nothing listening at the ADB server address,
a serial the server does not know, a device that is not authorised.
"""

from __future__ import annotations

import socket

from adbutils.errors import AdbConnectionError, AdbError, AdbTimeout

from engine.core.errors import (
    AdbServerDown,
    ConnectionLost,
    DeviceError,
    DeviceNotFound,
    DeviceOffline,
    DeviceTimeout,
)


def classify(exc: BaseException, serial: str | None = None, *, doing: str = "") -> DeviceError:
    """The DeviceError that `exc` means (`exc` itself when it already is one).

    Args:
        exc: what a device call raised.
        serial: the device's serial, for the error's context.
        doing: what was being done (``screenshot``, ``tap 10,20``), for the message.
    """
    if isinstance(exc, DeviceError):
        return exc
    what = f"{doing}: " if doing else ""
    text = str(exc) or type(exc).__name__
    lower = text.lower()
    if isinstance(exc, (AdbTimeout, socket.timeout, TimeoutError)):
        return DeviceTimeout(f"{what}no answer in time ({text})", serial=serial)
    if isinstance(exc, ConnectionRefusedError) or (isinstance(exc, AdbConnectionError) and "refused" in lower):
        return AdbServerDown(f"{what}nothing listens at the ADB server address ({text})", serial=serial)
    if isinstance(exc, AdbConnectionError):
        # Connecting failed for another reason (host unreachable, DNS): the server is not reachable either way.
        return AdbServerDown(f"{what}cannot reach the ADB server ({text})", serial=serial)
    if isinstance(exc, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError, EOFError)):
        return ConnectionLost(f"{what}connection lost ({text})", serial=serial)
    if isinstance(exc, AdbError):
        if "offline" in lower:
            return DeviceOffline(f"{what}device offline ({text})", serial=serial)
        if "unauthorized" in lower:
            return DeviceNotFound(f"{what}device not authorised: accept the debugging prompt ({text})", serial=serial)
        if "not found" in lower or "no such device" in lower or "no devices" in lower or "can't find" in lower:
            return DeviceNotFound(f"{what}no device {serial!r} on the ADB server ({text})", serial=serial)
        if "connection closed" in lower or "unknown data: b''" in lower or "closed" in lower:
            return ConnectionLost(f"{what}connection closed mid-answer ({text})", serial=serial)
        return DeviceError(f"{what}ADB error: {text}", serial=serial)
    if isinstance(exc, OSError):
        return ConnectionLost(f"{what}socket error ({text})", serial=serial)
    return DeviceError(f"{what}{type(exc).__name__}: {text}", serial=serial)
