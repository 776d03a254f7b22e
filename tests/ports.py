"""Loopback ports for servers a test starts in another process (an adb server, PostgreSQL, the MCP server, a
simulated emulator), and ports nothing listens on.

Why not `bind(("127.0.0.1", 0))`, read the port, close, hand it on: the kernel gives port 0 binds and every outgoing
connection a port from its ephemeral range (Linux: /proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default),
and the suite runs on several xdist workers whose servers, clients and port-0 binds all draw from that range. Between
the close and the child's own bind, another worker can take the port: CI once saw `adb start-server` on such a port
meet another test's server ("protocol fault (status 30 30 30 63?!)").

Here a port is drawn at random below the ephemeral range, away from the ports emulators and adb use by default
(which discovery scans), and checked twice: it binds, and nothing answers a connection. Two workers drawing the same
port is a chance in thousands, and a caller that starts a server can draw again when its start fails
(`tests/engine/sim/test_adbd.py` AdbServer.start)."""

from __future__ import annotations

import random
import socket
from pathlib import Path

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOW = 20000
_AVOID = {21503, 5037} | set(range(16384, 17409))  # MEmu, adb's default server, MuMu 12 (engine.device.emulators)
_random = random.SystemRandom()


def _ephemeral_low() -> int:
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def nobody_listens(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
        return False
    except OSError:
        return True


def _binds(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port() -> int:
    """A loopback port that binds and where nothing listens, outside the kernel's ephemeral range when it can be."""
    high = _ephemeral_low()
    if high - _LOW >= 1000:
        for _ in range(200):
            port = _random.randrange(_LOW, high)
            if port not in _AVOID and _binds(port) and nobody_listens(port):
                return port
    with socket.socket() as sock:  # no room below the ephemeral range: the kernel's pick
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_ports(n: int) -> list[int]:
    """`n` distinct ports as free_port gives them."""
    ports: list[int] = []
    for _ in range(50 * n):
        if len(ports) == n:
            break
        port = free_port()
        if port not in ports:
            ports.append(port)
    assert len(ports) == n, f"{n} distinct free ports not found"
    return ports
