"""The suite's own port helpers (tests/ports.py, tests/adbserver.py): CI once failed when a port drawn by bind(0)
was taken by another worker's server before Debian's adb server could bind it."""

from __future__ import annotations

import os
import socket
import threading

import pytest

from tests import adbserver, ports


def test_a_free_port_lies_below_the_kernels_ephemeral_range_and_nothing_listens_there():
    low = ports._ephemeral_low()
    drawn = ports.free_ports(20)
    assert len(set(drawn)) == 20
    for port in drawn:
        assert port not in ports._AVOID
        if low - ports._LOW >= 1000:
            assert ports._LOW <= port < low  # never where bind(0) and outgoing connections take theirs
        assert ports._binds(port) and ports.nobody_listens(port)


def _squatter() -> tuple[socket.socket, threading.Event]:
    """A listener that answers every connection as CI's intruder did: four bytes that are not OKAY."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.settimeout(0.1)
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"000c")
    threading.Thread(target=serve, daemon=True).start()
    return sock, done


@pytest.mark.skipif(adbserver.ADB is None and not os.environ.get("CI"), reason="the adb client is not installed")
def test_an_adb_server_whose_port_was_taken_starts_on_another(monkeypatch):
    sock, done = _squatter()
    taken = sock.getsockname()[1]
    drawn = iter([taken])
    monkeypatch.setattr(adbserver, "free_port", lambda: next(drawn, None) or ports.free_port())
    server = adbserver.AdbServer()
    assert server.port == taken
    try:
        server.start()
        assert server.port != taken and len(server.failures) == 1 and server.failures[0].startswith(f"{taken}:")
        assert server("devices").returncode == 0
    finally:
        server.stop()
        done.set()
        sock.close()
