"""A fake ADB server on a loopback port, backed by simulated games instead of phones.

This module owns the listening socket and the threads; each client connection is an
``adb_protocol.Conversation``, which speaks the ADB host protocol well enough that adbutils and Debian's ``adb``
client drive it unchanged: device listing, transport selection (``host:transport:``, ``host:tport:``),
``host-serial:`` queries, and on a transport ``shell:``, ``shell,v2:``, ``exec:`` and ``framebuffer:``. The commands
a shell service runs are answered by ``engine.sim.shell`` (screencap, input, wm size, dumpsys display, getprop, echo,
am start).

The scenario's device faults happen in the conversation: a request may be answered ``FAIL device offline``, dropped
mid-answer, or left hanging (silent for a bounded number of seconds, then closed).
"""

from __future__ import annotations

import logging
import socket
import socketserver
import threading

from engine.sim.adb_protocol import (  # noqa: F401 - the protocol constants are re-exported
    ADB_VERSION,
    DRAIN_TIMEOUT,
    FEATURES,
    Closed,
    Conversation,
    SimDevice,
)
from engine.sim.game import SimGame
from engine.sim.shell import run_shell, screencap_png, screencap_raw  # noqa: F401 - re-exported for callers

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
        self.host = host
        self._requested_port = port
        self._server: socketserver.ThreadingTCPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._sockets_lock = threading.Lock()
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

    # ------------------------------------------------------------------ connection plumbing

    def _handle(self, sock: socket.socket) -> None:
        sock.settimeout(RECV_TIMEOUT)
        with self._sockets_lock:
            self._sockets.add(sock)
        try:
            Conversation(self, sock).run()
        except Closed:
            pass
        except (OSError, socket.timeout) as exc:
            log.debug("client connection ended: %s", exc)
        finally:
            with self._sockets_lock:
                self._sockets.discard(sock)
