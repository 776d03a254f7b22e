"""The device layer: the Device protocol, the ADB implementation, frame sanity and the health record.

``open_device(serial)`` drives a phone or emulator; ``open_device()`` without a serial starts the embedded
simulator's fake ADB server in this process and connects to it through adbutils, the same path a phone takes.
"""

from __future__ import annotations

import logging

from engine.device.adb import AdbDevice, adb_server_address, is_network_serial
from engine.device.base import KEYCODES, Device, keycode
from engine.device.faults import classify
from engine.device.health import Health
from engine.config.policies import Policies

log = logging.getLogger(__name__)

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
    serial: str | None = None,
    *,
    graph=None,
    policies: Policies | None = None,
    adb_host: str | None = None,
    adb_port: int | None = None,
    sim_options: dict | None = None,
    sleep=None,
    control: str | None = None,
) -> AdbDevice:
    """A Device for `serial`, or for the embedded simulator when `serial` is None.

    Args:
        serial: the device as the ADB server lists it; a host:port serial is ``adb connect``-ed when missing.
        graph: the engine.config.schema.Graph to play; its resolution is the frames' size (default 1280x720), and the
            simulator plays it when there is no serial.
        policies: retry and time bounds (default: the shipped policies).
        adb_host, adb_port: the ADB server (default: ANDROID_ADB_SERVER_HOST/PORT, else 127.0.0.1:5037).
        sim_options: keyword arguments for the simulator (scenario, seed, ...) when there is no serial.
        control: adb, maatouch, minitouch or auto (default: the tap policy's control); see engine.device.touch.
    """
    resolution = tuple(graph.resolution) if graph is not None else (1280, 720)
    if serial is None:
        from engine.sim import start_embedded  # the simulator is only loaded when it is the device

        sim = start_embedded(graph, **(sim_options or {}))
        if graph is None:
            resolution = tuple(sim.game.graph.resolution)
        device = AdbDevice(sim.serial, resolution=resolution, host=sim.host, port=sim.port, policies=policies,
                           sleep=sleep, control=control)
        device.sim = sim  # the in-process game, for callers that want to look behind the curtain (tests)
        device.on_close(sim.stop)
        return _touch_ready(device)
    return _touch_ready(AdbDevice(serial, resolution=resolution, host=adb_host, port=adb_port, policies=policies,
                                  sleep=sleep, control=control))


def _touch_ready(device: AdbDevice) -> AdbDevice:
    """Start the touch agent the control setting asks for now, not inside the first tap's bound (never raises)."""
    if device.control_wanted != "adb":
        try:
            device.choose_control()
        except Exception as exc:  # an unreachable device: its first touch tries again and reports properly
            log.info("touch agent not started on %s: %s", device.serial, exc)
    return device
