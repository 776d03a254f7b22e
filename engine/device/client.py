"""adbutils' client and connection with a hard deadline on every socket operation.

adbutils gives each connection one socket timeout, so a server that dribbles bytes can hold a call for as many
timeouts as it sends chunks; it runs ``adb start-server`` (up to 20 s) when the server does not answer; and it
sleeps 10 ms whenever it closes a connection. Here every connect, send and receive waits at most until the
call's deadline, a refused connection is reported at once, and closing does not sleep. The protocol itself stays
adbutils': devices are plain ``adbutils.AdbDevice`` objects on this client.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Iterator

import adbutils
from adbutils._adb import AdbConnection
from adbutils.errors import AdbConnectionError, AdbTimeout

DEFAULT_BOUND = 3.0
"""Seconds a connection may live when no caller set a deadline (adbutils' own calls outside ``bounded``)."""


class _DeadlineSocket:
    """A socket whose every send and receive ends by one deadline (adbutils' own settimeout calls are ignored)."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self.deadline = deadline

    def _arm(self) -> None:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("call deadline passed")
        self._sock.settimeout(left)

    def recv(self, n: int) -> bytes:
        self._arm()
        return self._sock.recv(n)

    def recv_into(self, buffer, n: int = 0) -> int:
        self._arm()
        return self._sock.recv_into(buffer, n)

    def send(self, data: bytes) -> int:
        self._arm()
        return self._sock.send(data)

    def sendall(self, data: bytes) -> None:
        self._arm()
        self._sock.sendall(data)

    def settimeout(self, value: float | None) -> None:
        pass

    def __getattr__(self, name: str):
        return getattr(self._sock, name)


class BoundedConnection(AdbConnection):
    """An AdbConnection that connects within the deadline, never spawns adb, and closes without sleeping."""

    def __init__(self, host: str, port: int, deadline: float) -> None:
        self._target = (host, port)
        self._deadline = deadline
        super().__init__(host, port)

    def _safe_connect(self) -> _DeadlineSocket:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise AdbTimeout("call deadline passed before connecting to the adb server")
        try:
            sock = socket.create_connection(self._target, timeout=left)
        except socket.timeout:
            raise AdbTimeout(f"connect to adb server {self._target[0]}:{self._target[1]} timed out") from None
        except OSError as exc:
            raise AdbConnectionError(f"connect to adb server {self._target[0]}:{self._target[1]} failed: {exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return _DeadlineSocket(sock, self._deadline)

    def close(self) -> None:
        try:
            sock = self.conn
        except adbutils.AdbError:
            return
        with contextlib.suppress(OSError):
            sock.close()
        self._AdbConnection__conn = None  # adbutils keeps it name-mangled; closed means None there


class BoundedClient(adbutils.AdbClient):
    """adbutils.AdbClient whose connections end by the deadline of the ``bounded`` block they are made in."""

    def __init__(self, host: str | None = None, port: int | None = None, default_bound: float = DEFAULT_BOUND):
        super().__init__(host, port, socket_timeout=default_bound)
        self.default_bound = default_bound
        self._local = threading.local()
        self._version: int | None = None

    @contextlib.contextmanager
    def bounded(self, seconds: float) -> Iterator[float]:
        """Connections made inside end by now + `seconds` (or an enclosing block's earlier deadline).

        Connections still open when the block ends are closed: adbutils leaves a connection open when a request
        on it fails (``open_transport`` raising in ``check_okay``).
        """
        outer = getattr(self._local, "deadline", None)
        outer_open = getattr(self._local, "open", None)
        deadline = time.monotonic() + seconds
        if outer is not None:
            deadline = min(deadline, outer)
        self._local.deadline = deadline
        self._local.open = []
        try:
            yield deadline
        finally:
            for conn in self._local.open:
                conn.close()
            self._local.deadline = outer
            self._local.open = outer_open

    def remaining(self) -> float | None:
        deadline = getattr(self._local, "deadline", None)
        return None if deadline is None else deadline - time.monotonic()

    def make_connection(self, timeout: float | None = None) -> BoundedConnection:
        deadline = getattr(self._local, "deadline", None)
        if deadline is None:
            deadline = time.monotonic() + (timeout or self.default_bound)
        conn = BoundedConnection(self.host, self.port, deadline)
        opened = getattr(self._local, "open", None)
        if opened is not None:
            opened.append(conn)
        return conn

    def server_version(self) -> int:
        # adbutils asks before every transport; the answer only changes when the server restarts (reconnect()).
        if self._version is None:
            self._version = super().server_version()
        return self._version

    def forget_version(self) -> None:
        self._version = None
