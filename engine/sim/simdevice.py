"""One simulated phone as the fake ADB server sees it: its game, serial, transport id, faults and files."""

from __future__ import annotations

import threading
import time
from typing import Callable

from engine.sim.game import SimGame
from engine.sim.scenario import Faults


class SimDevice:
    """One simulated phone as the server sees it: its game, serial, transport id and fault stream."""

    def __init__(self, serial: str, game: SimGame, transport_id: int) -> None:
        self.serial = serial
        self.game = game
        self.transport_id = transport_id
        # Device faults draw from the scenario's device stream; a lock keeps concurrent clients reproducible
        # per request order.
        self.faults: Faults = game.faults
        self.lock = threading.Lock()
        self.connected_once = False
        self.state: str = self.faults.scenario.adb_state
        """How the server lists the device (device, offline, unauthorized); tests may change it while serving."""
        self.connect_reply: str | None = self.faults.scenario.connect_reply
        self.stopped = False
        """The game's app was force-stopped (am force-stop): black launcher frames until am start / monkey."""
        self.files: dict[str, bytes] = {}
        """Files pushed over the sync service, by absolute path."""
        self.mtimes: dict[str, int] = {}
        self.reverses: dict[str, str] = {}
        """adb reverse table: device-side remote -> host-side local."""
        self.sockets: dict[str, object] = {}
        """Local (abstract) sockets a running agent listens on, name -> engine.sim.touch agent."""
        self.listeners: dict[str, Callable] = {}
        """Device ports an ``nc -l`` listens on, "tcp:PORT" -> a callable handed each connection (engine.sim.toybox)."""
        self.open_host: Callable | None = None
        """Opens a stream to the host for an ``adb reverse`` target ("tcp:HOSTPORT", timeout) -> socket; set by
        whatever serves the device (adbd: an OPEN to the adb server; the fake server: a loopback connect)."""
        self.booted = time.monotonic()
        """When the simulated phone booted (``cat /proc/uptime``)."""
        self.props: dict[str, str] = {}
        """System properties beside the shell's defaults (`getprop`): a simulated emulator's own model, say."""

    def next_fault(self) -> str:
        with self.lock:
            return self.faults.device_fault()
