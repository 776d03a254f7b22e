"""A fake ADB server on a loopback port, backed by simulated games instead of phones.

It speaks the ADB host protocol (requests are 4 hex digits of length then the text; replies start with OKAY or
FAIL) well enough that adbutils and Debian's ``adb`` client drive it unchanged: device listing, transport
selection (``host:transport:``, ``host:tport:``), ``host-serial:`` queries, and on a transport ``shell:``,
``shell,v2:``, ``exec:`` and ``framebuffer:``. A tiny shell understands the commands an automation engine sends
(screencap, input, wm size, dumpsys display, getprop, echo, am start).

The scenario's device faults happen here: a request may be answered ``FAIL device offline``, dropped mid-answer,
or left hanging (silent for a bounded number of seconds, then closed).
"""

from __future__ import annotations

import logging
import re
import shlex
import socket
import socketserver
import struct
import threading
from typing import Callable

import cv2
import numpy as np

from engine.sim.game import SimGame
from engine.sim.scenario import Faults

log = logging.getLogger(__name__)

ADB_VERSION = 41
"""Protocol version of adb 1.0.41 (Debian's client); a mismatch makes that client kill and restart the server."""
FEATURES = "shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir,apex,abb,fixed_push_symlink_timestamp,abb_exec"
RECV_TIMEOUT = 10.0
"""No client request may stall a handler thread longer than this."""
DRAIN_TIMEOUT = 0.5


class _Closed(Exception):
    """The client went away, or we drop the connection on purpose."""


def _block(text: str | bytes) -> bytes:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return b"%04x" % len(data) + data


class _Device:
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

    def next_fault(self) -> str:
        with self.lock:
            return self.faults.device_fault()


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
        self.devices = {s: _Device(s, g, i + 1) for i, (s, g) in enumerate(devices.items())}
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
            _Conversation(self, sock).run()
        except _Closed:
            pass
        except (OSError, socket.timeout) as exc:
            log.debug("client connection ended: %s", exc)
        finally:
            with self._sockets_lock:
                self._sockets.discard(sock)


class _Conversation:
    """One client connection: host requests until a transport is chosen, then one device service."""

    def __init__(self, server: FakeAdbServer, sock: socket.socket) -> None:
        self.server = server
        self.sock = sock
        self.device: _Device | None = None
        self.fault = "none"

    # ---- wire

    def _recv_exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise _Closed()
            data += chunk
        return data

    def read_request(self) -> str:
        size = int(self._recv_exact(4), 16)
        text = self._recv_exact(size).decode("utf-8", errors="replace")
        self.server.requests.append(text)
        log.debug("request %r", text)
        return text

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def okay(self, payload: bytes = b"") -> None:
        self.send(b"OKAY" + payload)

    def fail(self, message: str) -> None:
        self.send(b"FAIL" + _block(message))

    def finish(self) -> None:
        """Close our side gracefully: half-close, drain what the client still sends, so nothing is reset."""
        try:
            self.sock.shutdown(socket.SHUT_WR)
            self.sock.settimeout(DRAIN_TIMEOUT)
            while self.sock.recv(4096):
                pass
        except OSError:
            pass

    # ---- dispatch

    def run(self) -> None:
        while not self.server._stopping.is_set():
            request = self.read_request()
            if self.device is not None:
                self.service(request)
                return
            if not self.host_request(request):
                return

    def find(self, serial: str | None) -> _Device | None:
        if serial is None:
            return next(iter(self.server.devices.values()))
        if serial.startswith("id:") or serial.isdigit():
            wanted = int(serial.removeprefix("id:"))
            return next((d for d in self.server.devices.values() if d.transport_id == wanted), None)
        return self.server.devices.get(serial)

    def select(self, serial: str | None) -> bool:
        """Choose the transport for this connection, applying the scenario's device fault. False: stop."""
        device = self.find(serial)
        if device is None:
            self.fail(f"device '{serial}' not found" if serial else "no devices/emulators found")
            return False
        self.fault = device.next_fault()
        if self.fault == "offline":
            self.fail("device offline")
            return False
        self.device = device
        return True

    def hang_if_told(self) -> None:
        """A hung device: the transport was granted, but the service never answers (bounded; stop() ends it)."""
        if self.fault == "hang":
            seconds = self.device.faults.scenario.hang_seconds
            log.info("scenario: request on %s hangs for %.1fs", self.device.serial, seconds)
            self.server._stopping.wait(seconds)
            raise _Closed()

    def host_request(self, request: str) -> bool:
        """Answer a host request. Returns True when the connection continues with another request."""
        devices = self.server.devices
        if request == "host:version":
            self.okay(_block(b"%04x" % ADB_VERSION))
        elif request in ("host:devices", "host:devices-l"):
            self.okay(_block(self._device_list(request.endswith("-l"))))
        elif request in ("host:track-devices", "host:track-devices-l"):
            self.okay(_block(self._device_list(request.endswith("-l"))))
            self._hold_open()
        elif request == "host:features" or request == "host:host-features":
            self.okay(_block(FEATURES))
        elif request == "host:kill":
            log.info("a client asked the fake adb server to exit; it keeps serving until stop()")
            self.okay()
        elif request.startswith("host:connect:"):
            addr = request.removeprefix("host:connect:")
            device = devices.get(addr)
            if device is None:
                self.okay(_block(f"failed to connect to '{addr}': Connection refused"))
            else:
                self.okay(_block(("already connected to " if device.connected_once else "connected to ") + addr))
                device.connected_once = True
        elif request.startswith("host:disconnect:"):
            self.okay(_block(f"disconnected {request.removeprefix('host:disconnect:')}"))
        elif request in ("host:transport-any", "host:transport-usb", "host:transport-local"):
            if self.select(None):
                self.okay()
                return True
        elif request.startswith("host:transport:"):
            if self.select(request.removeprefix("host:transport:")):
                self.okay()
                return True
        elif request.startswith("host:transport-id:"):
            if self.select("id:" + request.removeprefix("host:transport-id:")):
                self.okay()
                return True
        elif request.startswith("host:tport:"):
            which = request.removeprefix("host:tport:")
            serial = which.removeprefix("serial:") if which.startswith("serial:") else None
            if self.select(serial):
                self.okay(struct.pack("<Q", self.device.transport_id))
                return True
        elif request.startswith(("host-serial:", "host-transport-id:", "host-usb:", "host-local:")):
            self._device_query(request)
        else:
            self.fail(f"unknown host service '{request}'")
        return False

    def _device_list(self, long: bool) -> str:
        lines = []
        for device in self.server.devices.values():
            if long:
                lines.append(
                    f"{device.serial:<22} device product:sim model:SimGame device:sim "
                    f"transport_id:{device.transport_id}"
                )
            else:
                lines.append(f"{device.serial}\tdevice")
        return "".join(line + "\n" for line in lines)

    def _hold_open(self) -> None:
        # track-devices: the list never changes, so wait (bounded by stop()) until the client hangs up.
        self.sock.settimeout(0.2)
        while not self.server._stopping.is_set():
            try:
                if not self.sock.recv(64):
                    return
            except socket.timeout:
                continue

    def _device_query(self, request: str) -> None:
        # host-serial:<serial>:<query>; the serial itself may contain ':' (127.0.0.1:5555).
        kind, rest = request.split(":", 1)
        serial, _, query = rest.rpartition(":")
        if kind == "host-transport-id":
            serial = "id:" + serial
        elif kind != "host-serial":
            serial = None
        if query.startswith("wait-for-"):
            device = self.find(serial)
            if device is None:
                self.fail(f"device '{serial}' not found")
            else:
                self.okay()
                self.okay()
            return
        if not self.select(serial):
            return
        self.hang_if_told()
        if self.fault == "closed":
            raise _Closed()
        device = self.device
        answers = {
            "features": FEATURES,
            "get-state": "device",
            "get-serialno": device.serial,
            "get-devpath": f"sim:{device.transport_id}",
        }
        if query in answers:
            self.okay(_block(answers[query]))
        else:
            self.fail(f"unknown device query '{query}'")

    # ---- device services

    def service(self, request: str) -> None:
        device = self.device
        if self.fault == "hang":
            self.okay()  # the service starts, then nothing ever comes out of it
            self.hang_if_told()
        m = re.match(r"^(shell|exec)(,[^:]*)?:(.*)$", request, re.S)
        if request == "framebuffer:":
            payload = _framebuffer(device.game.frame())
            self._answer(payload)
        elif m:
            name, options, command = m.group(1), (m.group(2) or "").split(","), m.group(3)
            out, err, both, code = run_shell(device, command)
            if name == "shell" and "v2" in options:
                packets = b""
                if out:
                    packets += b"\x01" + struct.pack("<I", len(out)) + out
                if err:
                    packets += b"\x02" + struct.pack("<I", len(err)) + err
                packets += b"\x03" + struct.pack("<I", 1) + bytes([code & 0xFF])
                self._answer(packets)
            else:
                self._answer(both)
        else:
            self.fail(f"unsupported service '{request.split(':', 1)[0]}'")
            self.finish()

    def _answer(self, payload: bytes) -> None:
        self.okay()
        if self.fault == "closed":
            # The scenario cuts the connection mid-answer: half the bytes, then a reset.
            self.send(payload[: len(payload) // 2])
            log.info("scenario: connection to %s closed mid-answer", self.device.serial)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            raise _Closed()
        self.send(payload)
        self.finish()


# --------------------------------------------------------------------------------------------------- the shell


def _framebuffer(frame: np.ndarray) -> bytes:
    """The framebuffer: service's version-2 answer: header (colour space sRGB, RGBA_8888 offsets) and pixels."""
    h, w = frame.shape[:2]
    rgba = cv2.cvtColor(frame, cv2.COLOR_BGR2RGBA).tobytes()
    # version, bpp, colour space, size, width, height, then (offset, length) of red, blue, green, alpha.
    return struct.pack("<14I", 2, 32, 1, len(rgba), w, h, 0, 8, 16, 8, 8, 8, 24, 8) + rgba


def screencap_raw(frame: np.ndarray) -> bytes:
    """``screencap`` without -p: width, height, format (1 = RGBA_8888), colour space, then RGBA pixels."""
    h, w = frame.shape[:2]
    return struct.pack("<4I", w, h, 1, 0) + cv2.cvtColor(frame, cv2.COLOR_BGR2RGBA).tobytes()


def screencap_png(frame: np.ndarray) -> bytes:
    ok, png = cv2.imencode(".png", frame, [cv2.IMWRITE_PNG_COMPRESSION, 1])
    if not ok:  # pragma: no cover - cv2 encodes any uint8 BGR image
        raise RuntimeError("PNG encoding failed")
    return png.tobytes()


def _split_commands(command: str) -> list[str]:
    """Split a shell line on ';' and '&&' outside quotes (enough for adbutils' `cmd; echo X4EXIT:$?`)."""
    parts, current, quote, i = [], "", None, 0
    while i < len(command):
        ch = command[i]
        if quote:
            current += ch
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            current += ch
        elif ch == ";" or command.startswith("&&", i):
            parts.append(current)
            current = ""
            i += 1 if ch == ";" else 2
            continue
        else:
            current += ch
        i += 1
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def run_shell(device: _Device, command: str) -> tuple[bytes, bytes, bytes, int]:
    """Run a (tiny subset of a) shell line on the simulated phone: (stdout, stderr, both interleaved, exit code).

    The interleaved stream is what a v1 shell (a pty) shows: adbutils' shell2 parses its exit marker from it.
    """
    out, err, both, code = b"", b"", b"", 0
    for part in _split_commands(command):
        part = part.replace("$?", str(code))
        try:
            argv = shlex.split(part)
        except ValueError:
            argv = part.split()
        if not argv:
            continue
        out_i, err_i, code = _run_one(device, argv)
        out += out_i
        err += err_i
        both += err_i + out_i
    return out, err, both, code


def _run_one(device: _Device, argv: list[str]) -> tuple[bytes, bytes, int]:
    name, args = argv[0], argv[1:]
    handler: Callable | None = _COMMANDS.get(name)
    if handler is not None:
        try:
            return handler(device, args)
        except (ValueError, IndexError):
            return b"", f"{name}: bad arguments: {' '.join(args)}\n".encode(), 1
    return b"", f"/system/bin/sh: {name}: not found\n".encode(), 127


def _cmd_screencap(device: _Device, args: list[str]) -> tuple[bytes, bytes, int]:
    frame = device.game.frame()
    if "-p" in args:
        return screencap_png(frame), b"", 0
    return screencap_raw(frame), b"", 0


def _cmd_input(device: _Device, args: list[str]) -> tuple[bytes, bytes, int]:
    game = device.game
    args = list(args)
    while args and args[0] in ("-d", "touchscreen", "touchpad", "keyboard"):
        args = args[2:] if args[0] == "-d" else args[1:]
    if not args:
        return b"", b"usage: input [<source>] <command> [<arg>...]\n", 1
    verb, rest = args[0], args[1:]
    if verb == "tap":
        game.tap(int(float(rest[0])), int(float(rest[1])))
    elif verb in ("swipe", "draganddrop"):
        x1, y1, x2, y2 = (int(float(v)) for v in rest[:4])
        game.swipe(x1, y1, x2, y2, int(rest[4]) if len(rest) > 4 else 300)
    elif verb == "keyevent":
        for key in rest:
            if key not in ("--longpress", "--doubletap"):
                game.key(key)
    elif verb == "text":
        pass
    else:
        return b"", f"Error: Unknown command: {verb}\n".encode(), 1
    return b"", b"", 0


def _cmd_wm(device: _Device, args: list[str]) -> tuple[bytes, bytes, int]:
    width, height = device.game.graph.resolution
    if args[:1] == ["size"]:
        return f"Physical size: {width}x{height}\n".encode(), b"", 0
    if args[:1] == ["density"]:
        return b"Physical density: 240\n", b"", 0
    return b"", b"wm: unknown command\n", 1


def _cmd_dumpsys(device: _Device, args: list[str]) -> tuple[bytes, bytes, int]:
    width, height = device.game.graph.resolution
    if args[:1] == ["display"]:
        text = (
            "DISPLAY MANAGER (dumpsys display)\n"
            f"  mDisplayWidth={width}\n  mDisplayHeight={height}\n"
            f'  DisplayDeviceInfo{{"Built-in Screen": uniqueId="local:0", {width} x {height}, modeId 1, '
            "density 240, rotation 0}\n"
            f"  mOverrideDisplayInfo=DisplayInfo{{\"Built-in Screen\", displayId 0, real {width} x {height}, "
            f"largest app {width} x {height}, rotation 0}}\n"
            "  orientation=0\n"
        )
        return text.encode(), b"", 0
    if args[:1] == ["window"]:
        return b"  mCurrentFocus=Window{0 u0 com.sim.game/com.sim.game.MainActivity}\n", b"", 0
    return b"", b"", 0


def _cmd_getprop(device: _Device, args: list[str]) -> tuple[bytes, bytes, int]:
    props = {
        "ro.product.model": "SimGame",
        "ro.product.manufacturer": "engine.sim",
        "ro.product.cpu.abi": "x86_64",
        "ro.build.version.sdk": "30",
        "ro.build.version.release": "11",
        "ro.serialno": device.serial,
        "sys.boot_completed": "1",
    }
    if args:
        return (props.get(args[0], "") + "\n").encode(), b"", 0
    return "".join(f"[{k}]: [{v}]\n" for k, v in props.items()).encode(), b"", 0


def _cmd_echo(device: _Device, args: list[str]) -> tuple[bytes, bytes, int]:
    if args[:1] == ["-n"]:
        return " ".join(args[1:]).encode(), b"", 0
    return (" ".join(args) + "\n").encode(), b"", 0


def _cmd_restart(device: _Device, args: list[str]) -> tuple[bytes, bytes, int]:
    # `am start ...` / `monkey -p pkg ...` relaunch the app: the game restarts at its login screen.
    if args[:1] in (["start"], ["start-activity"]) or "-p" in args:
        device.game.restart()
        return b"Starting: Intent { }\n", b"", 0
    return b"", b"", 0


_COMMANDS: dict[str, Callable[[_Device, list[str]], tuple[bytes, bytes, int]]] = {
    "screencap": _cmd_screencap,
    "input": _cmd_input,
    "wm": _cmd_wm,
    "dumpsys": _cmd_dumpsys,
    "getprop": _cmd_getprop,
    "echo": _cmd_echo,
    "true": lambda d, a: (b"", b"", 0),
    "false": lambda d, a: (b"", b"", 1),
    "am": _cmd_restart,
    "monkey": _cmd_restart,
}
