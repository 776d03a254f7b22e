"""The device a session drives when no phone is named: the embedded simulator behind its fake ADB server."""

from __future__ import annotations

from typing import Any

from engine.config.policies import Policies
from engine.device import open_device
from engine.device.adb import AdbDevice
from engine.sim import start_embedded


def open_simulated(graph: Any = None, *, policies: Policies | None = None, control: str | None = None,
                   sleep: Any = None, **sim_options: Any) -> AdbDevice:
    """The simulator playing `graph` (the shipped one by default) in this process, and a Device connected to it
    through adbutils, the same path a phone takes. Closing the device stops the simulator; ``device.sim`` is the
    in-process game, for callers that want to look behind the curtain (tests).

    Args:
        sim_options: keyword arguments for engine.sim.start_embedded (assets, scenario, seed, state, clock).
    """
    sim = start_embedded(graph, **sim_options)
    try:
        device = open_device(sim.serial, graph=graph if graph is not None else sim.game.graph, policies=policies,
                             adb_host=sim.host, adb_port=sim.port, sleep=sleep, control=control)
    except BaseException:
        sim.stop()
        raise
    device.sim = sim
    device.on_close(sim.stop)
    return device
