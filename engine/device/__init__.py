"""The device layer: the Device protocol, the ADB implementation, frame sanity and the health record.

``open_device(serial)`` drives a phone or emulator, or the simulator behind its fake ADB server (the same path a
phone takes); starting the simulator is the runtime's business (engine.runtime.devices.open_simulated). Finding
devices is engine.device.discovery (each emulator's instance files: engine.device.emulators), the ADB server's
version and ownership engine.device.adbserver, and a dropped link's repair engine.device.repair.
"""

from __future__ import annotations

import importlib
import logging
from typing import TYPE_CHECKING

from engine.device.address import adb_server_address, is_network_serial

if TYPE_CHECKING:
    from engine.config.policies import Policies
    from engine.device.adb import AdbDevice
    from engine.device.base import KEYCODES, Device, keycode
    from engine.device.faults import classify
    from engine.device.health import Health

log = logging.getLogger(__name__)

_LAZY = {"AdbDevice": "engine.device.adb", "KEYCODES": "engine.device.base", "Device": "engine.device.base",
         "keycode": "engine.device.base", "classify": "engine.device.faults", "Health": "engine.device.health"}
"""Names loaded on first use: adbutils, numpy and the policies cost half a second, which a probe of the ADB server
(engine.device.adbserver under ``health``) need not pay."""


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "KEYCODES",
    "AdbDevice",
    "Device",
    "Health",
    "adb_server_address",
    "classify",
    "is_network_serial",
    "keycode",
    "open_device",
]


def open_device(
    serial: str,
    *,
    graph=None,
    policies: Policies | None = None,
    adb_host: str | None = None,
    adb_port: int | None = None,
    sleep=None,
    control: str | None = None,
) -> AdbDevice:
    """A Device for `serial`, with its touch agent started when the control setting asks for one.

    Args:
        serial: the device as the ADB server lists it; a host:port serial is ``adb connect``-ed when missing.
        graph: the engine.config.schema.Graph played; its resolution is the frames' size (default 1280x720).
        policies: retry and time bounds (default: the shipped policies).
        adb_host, adb_port: the ADB server (default: ANDROID_ADB_SERVER_HOST/PORT, else 127.0.0.1:5037).
        control: adb, maatouch, minitouch or auto (default: the stored pick of ``devices --bench``, else the tap
            policy's control); see engine.device.touch.
    """
    from engine.device.adb import AdbDevice

    from engine.device import bench

    resolution = tuple(graph.resolution) if graph is not None else (1280, 720)
    device = AdbDevice(serial, resolution=resolution, host=adb_host, port=adb_port, policies=policies, sleep=sleep,
                       control=control)
    bench.apply(device)  # the capture and touch methods `devices --bench` picked, measured again when stale
    return _touch_ready(device)


def _touch_ready(device: AdbDevice) -> AdbDevice:
    """Start the touch agent the control setting asks for now, not inside the first tap's bound (never raises)."""
    if device.control_wanted != "adb":
        try:
            device.choose_control()
        except Exception as exc:  # an unreachable device: its first touch tries again and reports properly
            log.info("touch agent not started on %s: %s", device.serial, exc)
    return device
