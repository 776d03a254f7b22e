"""A fake ADB server on a loopback port, backed by simulated games instead of phones.

This module owns the listening socket and the threads; each client connection is an
``adb_protocol.Conversation``, which speaks the ADB host protocol well enough that adbutils and Debian's ``adb``
client drive it unchanged: device listing, transport selection (``host:transport:``, ``host:tport:``),
``host-serial:`` queries, forward / list-forward / killforward (a loopback listener per forward), and on a transport
``shell:``, ``shell,v2:``, ``exec:``, ``framebuffer:``, ``sync:`` (push, stat, pull, list), ``reverse:`` and
``localabstract:``. The commands a shell service runs are answered by ``engine.sim.shell`` (screencap, input, wm,
dumpsys, getprop, pm, am, monkey, ...); the touch agents it starts (maatouch, minitouch) by ``engine.sim.touch``.

The scenario's device faults happen in the conversation: a request may be answered ``FAIL device offline``, dropped
mid-answer, or left hanging (silent for a bounded number of seconds, then closed).
"""

from __future__ import annotations

import logging
import socket
import socketserver
import struct
import threading
import time

from engine.core.errors import StreamClosed
from engine.sim.adb_protocol import (  # noqa: F401 - the protocol constants are re-exported
    ADB_VERSION,
    DRAIN_TIMEOUT,
    FEATURES,
    Conversation,
)
from engine.sim.game import SimGame
from engine.sim.shell import run_shell, screencap_png, screencap_raw  # noqa: F401 - re-exported for callers
from engine.sim.simdevice import SimDevice
from engine.sim.touch import connect_local

log = logging.getLogger(__name__)

RECV_TIMEOUT = 10.0
"""No client request may stall a handler thread longer than this."""


class FakeAdbServer:
    """A threaded fake ADB server. Use as a context manager, or start() and stop().

    Args:
        devices: one game (served as serial ``sim-0``) or a mapping serial -> game.
        host, port: where to listen; port 0 picks a free port (read it from ``.port`` after start()).
    """

    def __init__(self, devices: dict[str, SimGame] | SimGame, host: str = "127.0.0.1", port: int = 0) -> None:
        if isinstance(devices, SimGame):
            devices = {"sim-0": devices}
        if not devices:
            raise ValueError("a fake ADB server needs at least one device")
        self.devices = {s: SimDevice(s, g, i + 1) for i, (s, g) in enumerate(devices.items())}
        for device in self.devices.values():  # this server is the host: a reverse target is a loopback port here
            device.open_host = _open_host
        self.host = host
        self._requested_port = port
        self._server: socketserver.ThreadingTCPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._sockets_lock = threading.Lock()
        self._forwards: dict[str, tuple[str, str, socket.socket]] = {}
        self._forwards_lock = threading.Lock()
        self.requests: list[str] = []
        """Every request text received, in order (for tests and debugging)."""

    # ------------------------------------------------------------------ lifecycle

    @property
    def port(self) -> int:
        if self._server is None:
            return self._requested_port
        return self._server.server_address[1]

    @property
    def serials(self) -> list[str]:
        return list(self.devices)

    @property
    def serial(self) -> str:
        """The first (usually only) device's serial."""
        return next(iter(self.devices))

    def start(self) -> FakeAdbServer:
        if self._server is not None:
            return self
        owner = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                owner._handle(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True
            block_on_close = False

        self._stopping.clear()
        self._server = Server((self.host, self._requested_port), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name=f"fake-adb:{self.port}",
            daemon=True,
        )
        self._thread.start()
        log.info("fake adb server on %s:%d serving %s", self.host, self.port, ", ".join(self.devices))
        return self

    def stop(self) -> None:
        """Stop listening and drop every open connection (hung requests included) at once."""
        server, self._server = self._server, None
        if server is None:
            return
        self._requested_port = server.server_address[1]
        self._stopping.set()
        self.remove_forward(None)
        server.shutdown()
        server.server_close()
        with self._sockets_lock:
            for sock in list(self._sockets):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        if self._thread is not None:
            self._thread.join(timeout=2)

    def __enter__(self) -> FakeAdbServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # ------------------------------------------------------------------ adb forward

    def add_forward(self, serial: str, local: str, remote: str) -> int:
        """Listen on loopback `local` (tcp:PORT, tcp:0 picks one); each connection reaches `remote` on `serial`."""
        self.remove_forward(local)
        listener = socket.create_server((self.host, int(local.removeprefix("tcp:"))))
        port = listener.getsockname()[1]
        with self._forwards_lock:
            self._forwards[f"tcp:{port}"] = (serial, remote, listener)
        threading.Thread(target=self._accept_forwarded, args=(listener, serial, remote), daemon=True,
                         name=f"fake-adb-forward:{port}").start()
        return port

    def forwards(self) -> dict[str, tuple[str, str]]:
        with self._forwards_lock:
            return {local: (serial, remote) for local, (serial, remote, _) in self._forwards.items()}

    def remove_forward(self, local: str | None) -> bool:
        """Close the forward on `local` (every forward when None); False when there was none."""
        with self._forwards_lock:
            names = list(self._forwards) if local is None else [local] if local in self._forwards else []
            listeners = [self._forwards.pop(name)[2] for name in names]
        for listener in listeners:
            try:
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        return bool(listeners)

    def _accept_forwarded(self, listener: socket.socket, serial: str, remote: str) -> None:
        while not self._stopping.is_set():
            try:
                sock, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve_forwarded, args=(sock, serial, remote), daemon=True).start()

    def _serve_forwarded(self, sock: socket.socket, serial: str, remote: str) -> None:
        device = self.devices.get(serial)
        with sock:
            if device is not None and remote.startswith("localabstract:"):
                try:
                    connect_local(device, remote.removeprefix("localabstract:"), sock, self._stopping)
                except OSError as exc:
                    log.debug("forwarded connection ended: %s", exc)
            elif device is not None and remote in device.listeners:  # an `nc -l -p PORT` on the device
                device.listeners[remote](sock.dup())

    # ------------------------------------------------------------------ connection plumbing

    def _handle(self, sock: socket.socket) -> None:
        sock.settimeout(RECV_TIMEOUT)
        with self._sockets_lock:
            self._sockets.add(sock)
        try:
            Conversation(self, sock).run()
        except StreamClosed:
            pass
        except (OSError, socket.timeout) as exc:
            log.debug("client connection ended: %s", exc)
        finally:
            with self._sockets_lock:
                self._sockets.discard(sock)

    def sync_service(self, conv: Conversation, device: SimDevice) -> None:
        """The file service (``sync:``) a Conversation hands its stream to (this module's sync_service)."""
        sync_service(conv, device)


# ---------------------------------------------------------------------- the sync service (adb push / pull / stat)


def sync_service(conv: Conversation, device: SimDevice) -> None:
    """Requests of 4-byte id + little-endian length until QUIT: STAT/STA2/LST2, LIST, SEND (push) and RECV (pull)."""
    while True:
        head = conv._recv_exact(8)
        rid, size = head[:4], struct.unpack("<I", head[4:])[0]
        if rid == b"QUIT":
            return
        arg = conv._recv_exact(size).decode("utf-8", errors="replace")
        if rid in (b"STAT", b"STA2", b"LST2"):
            conv.send(_stat(device, arg, v2=rid != b"STAT", rid=rid))
        elif rid in (b"LIST", b"LIS2"):
            conv.send(b"DONE" + bytes(16 if rid == b"LIST" else 68))
        elif rid == b"SEND":
            _receive_file(conv, device, arg)
        elif rid == b"RECV":
            data = device.files.get(arg)
            if data is None:
                conv.send(b"FAIL" + struct.pack("<I", 25) + b"No such file or directory")
                continue
            for at in range(0, len(data), 64 * 1024):
                chunk = data[at:at + 64 * 1024]
                conv.send(b"DATA" + struct.pack("<I", len(chunk)) + chunk)
            conv.send(b"DONE" + struct.pack("<I", 0))
        else:
            conv.send(b"FAIL" + struct.pack("<I", 15) + b"unknown request")
            return


def _stat(device: SimDevice, path: str, *, v2: bool, rid: bytes) -> bytes:
    data = device.files.get(path)
    folder = path.rstrip("/") in ("", "/data", "/data/local", "/data/local/tmp", "/sdcard")
    mode = 0o100755 if data is not None else 0o040771 if folder else 0
    size = len(data) if data is not None else 4096 if folder else 0
    mtime = device.mtimes.get(path, 0)
    if not v2:
        return b"STAT" + struct.pack("<III", mode, size, mtime)
    error = 0 if mode else 2  # ENOENT
    return rid + struct.pack("<IQQIIIIQqqq", error, 1, 1, mode, 1, 2000, 2000, size, mtime, mtime, mtime)


def _receive_file(conv: Conversation, device: SimDevice, arg: str) -> None:
    path = arg.rsplit(",", 1)[0]
    data = bytearray()
    while True:
        head = conv._recv_exact(8)
        rid, size = head[:4], struct.unpack("<I", head[4:])[0]
        if rid == b"DATA":
            data += conv._recv_exact(size)
        elif rid == b"DONE":
            device.files[path] = bytes(data)
            device.mtimes[path] = size or int(time.time())
            conv.send(b"OKAY" + bytes(4))
            return
        else:
            conv.send(b"FAIL" + struct.pack("<I", 14) + b"bad send frame")
            return


def _open_host(target: str, timeout: float) -> socket.socket:
    """A device's reverse connection to ``tcp:PORT`` on this (the host's) loopback."""
    return socket.create_connection(("127.0.0.1", int(target.removeprefix("tcp:"))), timeout=timeout)
