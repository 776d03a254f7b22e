"""Fast touch: maatouch and minitouch (from the MaaAgentBinary package) pushed to the device and spoken to directly.

An ``input tap`` starts a Java program on the device for every tap (about 250 ms on an emulator); a touch agent is
started once and then takes each tap as one protocol line (the minitouch text protocol, see engine.sim.touch):

- maatouch: pushed to /data/local/tmp/maatouch, run as ``CLASSPATH=/data/local/tmp/maatouch app_process /
  com.shxyke.MaaTouch.App``; its stdin/stdout are the protocol stream (the shell connection is kept open). Each
  gesture ends with ``s <token>``, which it echoes when done: a tap is one acknowledged round trip.
- minitouch: the binary for the device's ABI (``getprop ro.product.cpu.abi``) pushed to /data/local/tmp/minitouch and
  run from a shell held open; the client reaches its abstract socket through ``adb forward tcp:N
  localabstract:minitouch``. It acknowledges nothing: a tap is one write.

``choose(...)`` tries what the control setting allows (``auto``: maatouch, then minitouch) and says which it took and
why; the caller falls back to ``input tap`` when no agent starts.
"""

from __future__ import annotations

import importlib.util
import logging
import socket
import time
from pathlib import Path
from typing import Any, Protocol

from engine.core.errors import AgentUnavailable

log = logging.getLogger(__name__)


class AgentHost(Protocol):
    """What an agent needs of the device it runs on (engine.device.adb.AdbDevice): where its ADB server is and
    the adbutils objects that push files and open streams."""

    serial: str
    host: str
    port: int
    _adb: Any
    _client: Any


CONTROLS = ("adb", "maatouch", "minitouch", "auto")
AGENTS = ("maatouch", "minitouch")
REMOTE_DIR = "/data/local/tmp"
MAATOUCH_CLASS = "com.shxyke.MaaTouch.App"
MINITOUCH_SOCKET = "localabstract:minitouch"
START_BOUND = 6.0
"""Seconds an agent may take to be pushed, started and to say hello (app_process starts a JVM)."""


def agent_binary(kind: str, abi: str = "") -> Path:
    """The MaaAgentBinary file for `kind` (and the device's ABI for minitouch)."""
    spec = importlib.util.find_spec("MaaAgentBinary")
    if spec is None or not spec.submodule_search_locations:
        raise AgentUnavailable("the MaaAgentBinary package is not installed (pip install MaaAgentBinary)")
    root = Path(list(spec.submodule_search_locations)[0])
    folder = root / "maatouch" / "universal" if kind == "maatouch" else root / "minitouch" / abi
    path = folder / kind
    if not path.is_file():
        raise AgentUnavailable(f"MaaAgentBinary has no {kind} for ABI {abi!r}")
    return path


def open_service(host: str, port: int, serial: str, service: str, timeout: float) -> socket.socket:
    """A raw ADB stream to `service` on `serial`, kept open by the caller (outside adbutils' bounded calls)."""
    sock = socket.create_connection((host, port), timeout=timeout)
    try:
        for request in (f"host:transport:{serial}", service):
            data = request.encode()
            sock.sendall(b"%04x" % len(data) + data)
            status = _read_exact(sock, 4)
            if status != b"OKAY":
                raise AgentUnavailable(f"{service}: {_read_exact(sock, int(_read_exact(sock, 4), 16)).decode()}")
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock
    except BaseException:
        sock.close()
        raise


def _read_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("the stream closed")
        data += chunk
    return data


class TouchAgent:
    """A started agent: taps and swipes in device pixels, each one protocol exchange."""

    def __init__(self, kind: str, stream: socket.socket, screen: tuple[int, int], holder: socket.socket | None = None,
                 timeout: float = 2.0) -> None:
        self.kind = kind
        self._sock = stream
        self._holder = holder
        self._reader = stream.makefile("rb")
        stream.settimeout(timeout)
        self.max_x, self.max_y = screen
        self.pid: str | None = None
        self._screen = screen
        self._token = 0
        try:
            self.hello()
        except BaseException:
            self._reader.close()
            raise

    def hello(self) -> None:
        """Read the header: ``v`` (minitouch), ``^ contacts max_x max_y pressure``, ``$ pid``."""
        while True:
            line = self._reader.readline().decode("ascii", errors="replace").strip()
            if not line or line == "Aborted":
                raise AgentUnavailable(f"{self.kind} did not start ({line or 'no header'})")
            if line.startswith("^"):
                _, _, max_x, max_y, _ = line.split()
                self.max_x, self.max_y = int(max_x), int(max_y)
            elif line.startswith("$"):
                self.pid = line[1:].strip()
                return

    def _xy(self, x: int, y: int) -> str:
        w, h = self._screen
        return f"{int(round(x * self.max_x / w))} {int(round(y * self.max_y / h))}"

    def set_timeout(self, seconds: float) -> None:
        self._sock.settimeout(seconds)

    def tap(self, x: int, y: int) -> None:
        self._send(f"d 0 {self._xy(x, y)} 50\nc\nu 0\nc\n")

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> None:
        steps = max(2, min(20, duration_ms // 20))
        lines = [f"d 0 {self._xy(x1, y1)} 50", "c"]
        for i in range(1, steps + 1):
            x, y = x1 + (x2 - x1) * i // steps, y1 + (y2 - y1) * i // steps
            lines += [f"w {max(1, duration_ms // steps)}", f"m 0 {self._xy(x, y)} 50", "c"]
        self._send("\n".join(lines + ["u 0", "c"]) + "\n")

    def _send(self, text: str) -> None:
        if self.kind == "maatouch":
            self._token += 1
            token = f"{self._token}"
            self._sock.sendall((text + f"s {token}\n").encode())
            while True:
                line = self._reader.readline()
                if not line:
                    raise ConnectionError(f"{self.kind} closed its stream")
                if line.strip().decode("ascii", errors="replace") == token:
                    return
        else:
            self._sock.sendall(text.encode())

    def close(self) -> None:
        self._reader.close()
        for sock in (self._sock, self._holder):
            if sock is not None:
                try:
                    sock.close()
                except OSError:
                    pass


def start_agent(device: AgentHost, kind: str, screen: tuple[int, int]) -> TouchAgent:
    """Push `kind` to `device`, start it and say hello; AgentUnavailable (or an adb error) when it cannot."""
    adb = device._adb
    with device._client.bounded(START_BOUND):
        abi = adb.shell("getprop ro.product.cpu.abi").strip() if kind == "minitouch" else ""
        remote = f"{REMOTE_DIR}/{kind}"
        adb.sync.push(agent_binary(kind, abi).read_bytes(), remote, 0o755)
        if kind == "minitouch":
            adb.shell(f"chmod 755 {remote}")
    deadline = time.monotonic() + START_BOUND
    if kind == "maatouch":
        stream = open_service(device.host, device.port, device.serial,
                              f"shell:CLASSPATH={remote} app_process / {MAATOUCH_CLASS}", START_BOUND)
        try:
            return TouchAgent(kind, stream, screen)
        except BaseException:
            stream.close()
            raise
    holder = open_service(device.host, device.port, device.serial, f"shell:{remote}", START_BOUND)
    try:
        with device._client.bounded(START_BOUND):
            local = adb.forward_port(MINITOUCH_SOCKET)
        while True:  # minitouch needs a moment before its socket listens
            try:
                stream = socket.create_connection((device.host, local), timeout=START_BOUND)
                try:
                    return TouchAgent(kind, stream, screen, holder=holder)
                except BaseException:
                    stream.close()
                    raise
            except (AgentUnavailable, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    raise AgentUnavailable("minitouch's socket never answered") from None
                time.sleep(0.05)
    except BaseException:
        holder.close()
        raise


def choose(device: AgentHost, control: str, screen: tuple[int, int]) -> tuple[TouchAgent | None, str]:
    """Start the agent `control` asks for (``auto``: the fastest that starts); (agent or None, why)."""
    if control == "adb":
        return None, "adb: input tap (asked for)"
    tried = []
    for kind in (AGENTS if control == "auto" else (control,)):
        start = time.monotonic()
        try:
            agent = start_agent(device, kind, screen)
        except Exception as exc:  # any failure means: not this agent here
            log.info("%s unavailable on %s: %s", kind, device.serial, exc)
            tried.append(f"{kind} failed ({exc})")
            continue
        took = (time.monotonic() - start) * 1000
        return agent, "; ".join(tried + [f"{control}: {kind} started in {took:.0f} ms"])
    return None, "; ".join(tried + ["falling back to adb input tap"])
