"""Capture methods: one frame from the device by each of the ways the peers take one, all bounded and checked.

- ``raw``: ``screencap`` through the shell service (header + RGBA pixels; adbutils' exec-out path).
- ``gzip``: ``screencap | gzip -1``, inflated here: MaaFramework's RawWithGzip (MaaFramework
  source/MaaAdbControlUnit/Screencap/RawWithGzip.cpp, its ``ScreencapRawWithGzip`` command and
  ``ScreencapHelper::decode_gzip``). Fewer bytes over a slow transport for the device's deflate time.
- ``nc``: ``screencap | nc -w 3 127.0.0.1 PORT`` into a socket the engine listens on, reached through
  ``adb reverse tcp:PORT tcp:HOSTPORT``; where the device refuses reverse (adbd of Android 8 and below over Wi-Fi,
  as ya-webadb's reverse docs say: AdbReverseNotSupportedError),
  ``screencap | nc -l -p PORT`` reached through ``adb forward tcp:0 tcp:PORT`` (toybox netcat.c's -l: one
  connection): ALAS's ADB_nc (module/device/method/adb.py ``screenshot_adb_nc``,
  connection.py ``adb_shell_nc`` and ``reverse_server``: the reverse route it takes for BlueStacks Hyper-V and
  unknown devices) and MaaFramework's RawByNetcat (RawByNetcat.cpp: ``nc -w 3``, a one-second read bound). The bytes
  leave the shell stream: the device's tty layer and shell service are out of the way.
- ``png``: ``screencap -p``, decoded here (a PNG encode on the device, the slowest; MaaFramework's Encode).

Every method's bytes get the repairs raw frames get (shell warnings before the frame, CRLF damage) and the same
checks (a frame cut short is a ConnectionLost worth a retry; output no decoder reads is a BadFrame). ``Capture``
keeps the order the device uses (the stored pick of ``devices --bench`` first) and falls down it when a method
cannot give a frame at all; a method that gave frames before and then fails raises, as raw did alone before, until
it has failed ``STRIKES`` times in a row (a device that broke it: an emulator update, a gzip gone), when it too is
dropped and the next method is tried.
Lossy or APK-based methods (minicap, scrcpy, DroidCast) and Windows-only emulator libraries (MuMu's nemu_ipc,
LDPlayer's ldopengl) are left out on purpose (docs/guide/capture.md says why).
"""

from __future__ import annotations

import logging
import socket
import zlib
from typing import Any

import numpy as np

from engine.core.errors import BadFrame, ConnectionLost, DeviceTimeout
from engine.device import frames

log = logging.getLogger(__name__)

METHODS = ("raw", "gzip", "nc", "png")
"""Every capture method."""
DEFAULT_ORDER = ("raw", "png")
"""The order a device nobody measured falls down (as before the benchmark): raw, else PNG."""
MAX_INFLATED = 10_000 * 10_000 * 4 + 64
"""The most a gzip frame may inflate to (the largest frame decode_raw accepts): a bomb stops here."""
NC_WAIT = 3
"""nc's own -w: seconds it may take to connect (MaaFramework's RawByNetcat uses 3)."""
STRIKES = 3
"""Failures in a row after which a method that gave frames before is dropped from the order like one that never did."""
FORWARD_PORT = 27183
"""The device port ``nc -l`` listens on when nc goes through adb forward (any port the device leaves free)."""


class Capture:
    """The capture methods of one device, the order it tries them in, and the reverse socket ``nc`` sends to."""

    def __init__(self, device: Any) -> None:  # the engine.device.adb.AdbDevice it captures for (not imported: a circle)
        self.device = device
        self.order: list[str] = list(DEFAULT_ORDER)
        self.worked: set[str] = set()
        """Methods that gave a frame on this device: their later failures raise instead of falling down (until
        ``STRIKES`` of them in a row)."""
        self.strikes: dict[str, int] = {}
        """Failures in a row of each method that worked before."""
        self.failed: list[str] = []
        """Methods dropped from the order (no frame at all), for health and the stored pick."""
        self._listener: socket.socket | None = None
        self._device_port: int | None = None
        self._forward: tuple[int, int] | None = None
        """(host port, device port) once reverse was refused and nc goes through adb forward."""
        self.note: str | None = None
        """Where the order came from (the stored pick and when it was measured), for health."""
        self.on_fail = None
        """Called with a method dropped from the order (engine.device.bench marks a stored pick failed)."""

    def prefer(self, *ranking: str) -> None:
        """Try the methods of `ranking` in that order from now on (the stored pick first), PNG last."""
        ranked = [m for m in dict.fromkeys(ranking) if m in METHODS and m not in self.failed]
        self.order = ranked + [m for m in DEFAULT_ORDER if m not in ranked]

    @property
    def method(self) -> str | None:
        return self.order[0] if self.order and self.order[0] in self.worked else None

    def grab(self) -> np.ndarray:
        """One frame (the device's own size) by the first method in the order that gives one."""
        last: BadFrame | None = None
        for method in list(self.order):
            try:
                frame = self.once(method)
            except BadFrame as exc:
                # a method that gave frames before and fails now raises (a connection's trouble is retried by the
                # policy as a ConnectionLost or DeviceTimeout, never as this) until it has failed STRIKES times in
                # a row; one that never gave a frame here is this device's lack: the next method is tried
                if method in self.worked:
                    self.strikes[method] = self.strikes.get(method, 0) + 1
                if method == self.order[-1] or 0 < self.strikes.get(method, 0) < STRIKES:
                    raise
                log.warning("capture %s unusable on %s (%s); trying the next method", method, self.device.serial,
                            exc)
                self.order.remove(method)
                self.failed.append(method)
                if self.on_fail is not None:
                    self.on_fail(method)
                last = exc
                continue
            self.worked.add(method)
            self.strikes[method] = 0
            return frame
        raise last or BadFrame("no capture method is left", serial=self.device.serial)

    def once(self, method: str) -> np.ndarray:
        """One frame by `method`, decoded but not fitted to the graph (BadFrame, ConnectionLost, DeviceTimeout)."""
        device = self.device
        if method == "png":
            data = device._repaired(*frames.clean_png(device._exec("screencap -p")))
            if data.startswith(frames.PNG_MAGIC) and not data.rstrip().endswith(frames.PNG_END):
                raise ConnectionLost(f"screencap -p sent a PNG cut short ({len(data)} bytes)", serial=device.serial)
            return frames.decode_png(data)
        if method == "raw":
            data = device._exec("screencap")
        elif method == "gzip":
            data = _inflate(device._exec("screencap | gzip -1"), device.serial)
        elif method == "nc":
            data = self._by_socket()
        else:
            raise ValueError(f"unknown capture method {method!r}; known: {', '.join(METHODS)}")
        data = device._repaired(*frames.clean_raw(data))
        if frames.raw_truncated(data):
            raise ConnectionLost(f"{method} sent {len(data)} bytes, less than its header announced",
                                 serial=device.serial)
        return frames.decode_raw(data)

    # ---- nc through adb reverse

    def _reverse(self) -> int:
        """Listen on the host and ``reverse:forward:tcp:0;tcp:HOSTPORT``: the device port nc connects to (AOSP adb's
        handle_forward_request sends the port it picked for tcp:0 after its OKAY)."""
        if self._device_port is not None and self._listener is not None:
            return self._device_port
        listener = socket.create_server(("127.0.0.1", 0))
        conn = self.device._adb.open_transport()
        try:
            conn.send_command(f"reverse:forward:tcp:0;tcp:{listener.getsockname()[1]}")
            conn.check_okay()  # the server opened the stream to the device
            conn.check_okay()  # the device installed the listener
            port = int(conn.read_string_block())
        except Exception as exc:
            listener.close()
            raise BadFrame(f"adb reverse is refused here ({exc})", serial=self.device.serial) from exc
        finally:
            conn.close()
        self._listener, self._device_port = listener, port
        return port

    def _by_socket(self) -> bytes:
        device = self.device
        if self._forward is None:
            try:
                port = self._reverse()
            except BadFrame as exc:
                log.info("%s; nc goes through adb forward on %s", exc, device.serial)
                self._forward = self._forwarded()
        if self._forward is not None:
            return self._by_forward(*self._forward)
        left = device._client.remaining() or device._client.default_bound
        conn = device._adb.open_transport()
        try:
            conn.send_command(f"shell:screencap | nc -w {NC_WAIT} 127.0.0.1 {port}")
            # The frame comes on the socket while the shell stream stays open: its OKAY is not awaited first (a
            # device may send it only when the pipeline ends, and nc ends only once its bytes are read).
            self._listener.settimeout(max(0.05, min(left, NC_WAIT + 1.0)))
            try:
                peer, _ = self._listener.accept()
            except socket.timeout:
                said = _said(conn.conn).removeprefix(b"OKAY").strip()
                if said:  # nc not found, refused, a FAIL: the shell said why
                    raise BadFrame(f"nc gave no frame: {said[:200]!r}", serial=device.serial) from None
                if "nc" in self.worked:  # it worked before: a hiccup the policy retries
                    raise DeviceTimeout("nc did not connect in time", serial=device.serial) from None
                raise BadFrame("nc never connected (no nc, or the device cannot reach the reverse port)",
                               serial=device.serial) from None
            with peer:
                peer.settimeout(max(0.05, device._client.remaining() or left))
                out = bytearray()
                while chunk := peer.recv(1 << 20):
                    out += chunk
            return bytes(out)
        finally:
            conn.close()

    def _forwarded(self) -> tuple[int, int]:
        """``adb forward tcp:0 tcp:PORT`` (the server picks the host port and sends it after its two OKAYs)."""
        remote = FORWARD_PORT
        conn = self.device._client.make_connection()
        try:
            conn.send_command(f"host-serial:{self.device.serial}:forward:tcp:0;tcp:{remote}")
            conn.check_okay()
            conn.check_okay()
            return int(conn.read_string_block()), remote
        except Exception as exc:
            raise BadFrame(f"neither adb reverse nor adb forward works here ({exc})",
                           serial=self.device.serial) from exc
        finally:
            conn.close()

    def _by_forward(self, local: int, remote: int) -> bytes:
        """``screencap | nc -l -p PORT`` on the device, then connections to the forwarded host port until one
        brings the frame (one that comes before nc listens is closed empty by the device), within the bound."""
        import time

        device = self.device
        left = device._client.remaining() or device._client.default_bound
        end = time.monotonic() + min(left, NC_WAIT + 1.0)
        conn = device._adb.open_transport()
        try:
            conn.send_command(f"shell:screencap | nc -l -p {remote}")
            while time.monotonic() < end:
                with socket.create_connection((device.host, local), timeout=max(0.05, end - time.monotonic())) as peer:
                    peer.settimeout(max(0.05, end - time.monotonic()))
                    out = bytearray()
                    try:
                        while chunk := peer.recv(1 << 20):
                            out += chunk
                    except socket.timeout:
                        pass
                if out:
                    return bytes(out)
                time.sleep(0.02)
            if "nc" in self.worked:
                raise DeviceTimeout("nc -l gave no frame through adb forward in time", serial=device.serial)
            raise BadFrame("nc -l never gave a frame through adb forward", serial=device.serial)
        finally:
            conn.close()

    def close(self) -> None:
        """Stop listening and ask the device to drop the reverse port, the server its forward (best effort)."""
        forward, self._forward = self._forward, None
        if forward is not None:
            try:
                with self.device._client.bounded(1.0):
                    conn = self.device._client.make_connection()
                    try:
                        conn.send_command(f"host-serial:{self.device.serial}:killforward:tcp:{forward[0]}")
                        conn.check_okay()
                    finally:
                        conn.close()
            except Exception as exc:  # the server may be gone
                log.debug("forward not removed on %s: %s", self.device.serial, exc)
        listener, self._listener = self._listener, None
        if listener is None:
            return
        listener.close()
        try:
            with self.device._client.bounded(1.0):
                conn = self.device._adb.open_transport()
                conn.send_command(f"reverse:killforward:tcp:{self._device_port}")
                conn.close()
        except Exception as exc:  # the device may be gone: nothing to undo then
            log.debug("reverse not removed on %s: %s", self.device.serial, exc)


def _inflate(data: bytes, serial: str) -> bytes:
    """The raw frame inside gzip output, at most MAX_INFLATED bytes; text the shell printed instead is a
    BadFrame (no gzip on the device), a stream cut short a ConnectionLost."""
    start = data.find(b"\x1f\x8b\x08")
    if start < 0:
        raise BadFrame(f"screencap | gzip sent no gzip stream ({bytes(data[:60])!r})", serial=serial)
    inflater = zlib.decompressobj(31)
    try:
        out = inflater.decompress(data[start:], MAX_INFLATED)
    except zlib.error as exc:
        raise BadFrame(f"screencap | gzip sent a damaged stream: {exc}", serial=serial) from exc
    if inflater.unconsumed_tail:
        raise BadFrame(f"a gzip frame inflates beyond {MAX_INFLATED} bytes", serial=serial)
    if not inflater.eof:
        raise ConnectionLost(f"screencap | gzip stream cut short ({len(data)} bytes)", serial=serial)
    return out


def _said(sock) -> bytes:
    """What a finished shell stream printed (its error), read without waiting long."""
    sock = getattr(sock, "_sock", sock)  # the bounded client's socket ignores settimeout
    try:
        sock.settimeout(0.2)
        return sock.recv(4096).strip()
    except OSError:
        return b""
