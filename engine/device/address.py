"""Where the ADB server is and what a network serial looks like: the two facts every device module needs, kept
apart from adbutils, numpy and the policies so that a probe (``health`` with no server) starts fast."""

from __future__ import annotations

import os

__all__ = ["adb_server_address", "is_network_serial"]


def adb_server_address(host: str | None = None, port: int | None = None) -> tuple[str, int]:
    """The ADB server address as adb itself finds it: arguments, then ANDROID_ADB_SERVER_HOST/PORT, then 5037."""
    host = host or os.environ.get("ANDROID_ADB_SERVER_HOST") or "127.0.0.1"
    port = port or int(os.environ.get("ANDROID_ADB_SERVER_PORT") or 5037)
    return host, int(port)


def is_network_serial(serial: str) -> bool:
    """A host:port serial (an emulator over TCP, such as MEmu's 127.0.0.1:21503) that `adb connect` can attach."""
    host, sep, port = serial.rpartition(":")
    return bool(sep and host and port.isdigit())
