"""Emulated touch agents: maatouch and minitouch as a simulated phone runs them, turning protocol lines into taps.

Both speak the minitouch text protocol. On start an agent writes its header: ``v <version>`` (minitouch only; MaaTouch
starts at ``^``), ``^ <max-contacts> <max-x> <max-y> <max-pressure>`` and ``$ <pid>``. Then it reads commands, one a
line: ``d <contact> <x> <y> <pressure>`` (down), ``m <contact> <x> <y> <pressure>`` (move), ``u <contact>`` (up),
``c`` (commit the pending events), ``w <ms>`` (wait), ``r`` (reset) and, MaaTouch only, ``s <token>`` (answer
``<token>`` once everything before it is done: a client's round trip).

- maatouch is a Java program: ``CLASSPATH=/data/local/tmp/maatouch app_process / com.shxyke.MaaTouch.App`` in a shell
  whose stdin/stdout are the protocol stream (the shell connection itself). Without the pushed file it says
  ``Aborted``.
- minitouch is a native binary for the device's ABI: run from a shell (the shell connection is its lifetime), it
  listens on the abstract socket ``minitouch``, which a client reaches over ``adb forward tcp:N
  localabstract:minitouch`` (or ``localabstract:minitouch`` on a transport).

A contact that goes down and up within ``TAP_SLOP`` pixels is a tap at its down point; anything longer is a swipe
from down to up point, whose duration is the sum of the ``w`` waits in between (counted, not slept here: the game
spends it when the scenario has device latencies). An agent writes events straight to the input device, so the
scenario's `input` costs (the JVM start of every `input tap`) do not apply: its taps cost ``AGENT_TAP_MS``.
"""

from __future__ import annotations

import logging
import shlex
import socket
import threading
from typing import TYPE_CHECKING, Callable

from engine.sim.shell import device_swipe, device_tap, split_env

if TYPE_CHECKING:
    from engine.sim.simdevice import SimDevice

log = logging.getLogger(__name__)

MAATOUCH_CLASS = "com.shxyke.MaaTouch.App"
MINITOUCH_SOCKET = "minitouch"
MINITOUCH_RANGE = 32767
"""The touch panel's range minitouch reports (an emulator's virtual panel): clients scale screen pixels to it."""
TAP_SLOP = 10
AGENT_TAP_MS = 0.0
"""What one agent tap costs on the device beside the protocol's round trip (event injection: well under 1 ms)."""
POLL = 0.2


class TouchSession:
    """One protocol stream's contacts: feed it lines, it taps and swipes the simulated device."""

    def __init__(self, device: SimDevice, max_x: int, max_y: int, *, sync: bool) -> None:
        self.device = device
        width, height = device.game.graph.resolution
        self.scale = (width / max_x, height / max_y)
        self.sync = sync
        self.down: dict[int, list[int]] = {}
        """contact -> [x0, y0, x, y, waited_ms, up]"""

    def _point(self, x: str, y: str) -> tuple[int, int]:
        return int(round(int(x) * self.scale[0])), int(round(int(y) * self.scale[1]))

    def feed(self, line: str) -> bytes:
        """Run one protocol line; returns what the agent answers (only ``s`` answers)."""
        parts = line.split()
        if not parts:
            return b""
        op, args = parts[0], parts[1:]
        if op == "d":
            x, y = self._point(args[1], args[2])
            self.down[int(args[0])] = [x, y, x, y, 0, 0]
        elif op == "m" and int(args[0]) in self.down:
            self.down[int(args[0])][2:4] = self._point(args[1], args[2])
        elif op == "u" and int(args[0]) in self.down:
            self.down[int(args[0])][5] = 1
        elif op == "w":
            for contact in self.down.values():
                contact[4] += int(args[0])
        elif op == "c":
            self._commit()
        elif op == "r":
            self.down.clear()
        elif op == "s" and self.sync:
            return (" ".join(args) + "\n").encode()
        return b""

    def _commit(self) -> None:
        for key, (x0, y0, x, y, waited, up) in list(self.down.items()):
            if not up:
                continue
            del self.down[key]
            if abs(x - x0) <= TAP_SLOP and abs(y - y0) <= TAP_SLOP:
                device_tap(self.device, x0, y0, cost_ms=AGENT_TAP_MS)
            else:
                # The game spends a swipe's duration only with a non-zero overhead: a tiny one when it models latency.
                latency = self.device.game.scenario.swipe_ms > 0
                device_swipe(self.device, x0, y0, x, y, max(waited, 1), cost_ms=0.001 if latency else 0.0)


def serve_lines(sock: socket.socket, session: TouchSession, stopping: threading.Event) -> None:
    """Read protocol lines from `sock` until the client closes it (or the server stops)."""
    sock.settimeout(POLL)
    pending = b""
    while not stopping.is_set():
        try:
            data = sock.recv(4096)
        except socket.timeout:
            continue
        if not data:
            return
        pending += data
        *lines, pending = pending.split(b"\n")
        answer = b"".join(session.feed(line.decode("ascii", errors="replace")) for line in lines)
        if answer:
            sock.sendall(answer)


def agent_for(device: SimDevice, command: str) -> Callable[[socket.socket, threading.Event], None] | None:
    """The emulated agent a shell line starts, as a function serving the shell's stream; None for other lines."""
    try:
        env, argv = split_env(shlex.split(command))
    except ValueError:
        return None
    if argv[:1] == ["app_process"] and MAATOUCH_CLASS in argv:
        classpath = env.get("CLASSPATH", "")
        if classpath not in device.files:
            return lambda sock, stopping: sock.sendall(b"Aborted\n")
        return lambda sock, stopping: _run_maatouch(device, sock, stopping)
    if argv[:1] and argv[0].rsplit("/", 1)[-1] == "minitouch" and argv[0] in device.files:
        return lambda sock, stopping: _run_minitouch(device, sock, stopping)
    return None


def _run_maatouch(device: SimDevice, sock: socket.socket, stopping: threading.Event) -> None:
    width, height = device.game.graph.resolution
    sock.sendall(f"^ 2 {width} {height} 50\n$ {4000 + device.transport_id}\n".encode())
    serve_lines(sock, TouchSession(device, width, height, sync=True), stopping)


def _run_minitouch(device: SimDevice, sock: socket.socket, stopping: threading.Event) -> None:
    """minitouch in the foreground of a shell: its socket exists while the shell stream is open."""
    device.sockets[MINITOUCH_SOCKET] = True
    sock.sendall(b"Type B touch device sim-touch (32768x32768 with 10 contacts) detected on /dev/input/event1\n")
    sock.settimeout(POLL)
    try:
        while not stopping.is_set():
            try:
                if not sock.recv(64):
                    return
            except socket.timeout:
                continue
    finally:
        device.sockets.pop(MINITOUCH_SOCKET, None)


def connect_local(device: SimDevice, name: str, sock: socket.socket, stopping: threading.Event) -> bool:
    """Serve a client connected to the device's local socket `name`; False when nothing listens there."""
    if name != MINITOUCH_SOCKET or name not in device.sockets:
        return False
    sock.sendall(f"v 1\n^ 10 {MINITOUCH_RANGE} {MINITOUCH_RANGE} 0\n$ {5000 + device.transport_id}\n".encode())
    serve_lines(sock, TouchSession(device, MINITOUCH_RANGE, MINITOUCH_RANGE, sync=False), stopping)
    return True
