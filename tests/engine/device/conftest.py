"""Fixtures of the device tests: tiny misbehaving TCP servers, a small simulated game, fast policies."""

from __future__ import annotations

import socket
import threading

import pytest

from engine.config.policies import Policies, Policy, load_policies
from engine.config.schema import Graph
from tests.ports import free_port


class TinyServer:
    """A loopback TCP server with one behaviour: ``hang`` (accept, never answer) or ``close`` (accept, hang up)."""

    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            if self.behaviour == "close":
                conn.close()
            else:
                self.accepted.append(conn)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for conn in self.accepted:
            conn.close()
        self.sock.close()


@pytest.fixture
def hung_server():
    server = TinyServer("hang")
    yield server
    server.stop()


@pytest.fixture
def closing_server():
    server = TinyServer("close")
    yield server
    server.stop()


@pytest.fixture
def dead_port() -> int:
    """A loopback port nothing listens on (connections are refused)."""
    return free_port()


def _fast(name: str, timeout: float, attempts: int = 1, retry_on=(), reconnect: bool = False) -> Policy:
    return Policy(name=name, attempts=attempts, timeout=timeout, retry_on=tuple(retry_on), reconnect=reconnect)


@pytest.fixture
def fast_policies() -> Policies:
    """The shipped policies with short bounds, so tests of hung devices finish quickly."""
    transient = ("TransientDeviceError",)
    quick = {
        "health": _fast("health", 1.0),
        "screenshot": _fast("screenshot", 1.5, attempts=3, retry_on=transient, reconnect=True),
        "tap": _fast("tap", 0.3, attempts=2, retry_on=("ConnectionLost", "DeviceOffline"), reconnect=True),
        "swipe": _fast("swipe", 0.3),
        "key": _fast("key", 0.3),
    }
    return load_policies().merged(Policies(quick))


@pytest.fixture(scope="session")
def tiny_graph() -> Graph:
    """Two pages: a tap on the centre of main goes to b; back on b returns to main."""
    return Graph.model_validate(
        {
            "game": "tiny",
            "resolution": [1280, 720],
            "servers": ["en"],
            "fallback_server": "en",
            "start_page": "page_main",
            "buttons": [{"name": "GO", "area": [600, 320, 680, 400], "color": [20, 160, 220], "text": "GO"}],
            "pages": [
                {"name": "page_main", "links": [{"to": "page_b", "action": {"type": "tap", "button": "GO"}}]},
                {"name": "page_b", "links": [{"to": "page_main", "action": {"type": "key", "key": "back"}}]},
            ],
        }
    ).resolve()
