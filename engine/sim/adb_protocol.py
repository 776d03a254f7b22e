"""The ADB host protocol over one client connection: host requests until a transport is chosen, then one service.

Requests are 4 hex digits of length then the text; replies start with OKAY or FAIL. The scenario's device faults are
applied here, per request: ``FAIL device offline``, a connection dropped mid-answer, or a service that never answers.
"""

from __future__ import annotations

import logging
import re
import socket
import struct
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np

from engine.core.errors import StreamClosed
from engine.sim.shell import device_frame, run_shell
from engine.sim.touch import agent_for, connect_local

if TYPE_CHECKING:
    from engine.sim.simdevice import SimDevice

log = logging.getLogger(__name__)

ADB_VERSION = 41
"""Protocol version of adb 1.0.41 (Debian's client); a mismatch makes that client kill and restart the server."""
FEATURES = "shell_v2,cmd,stat_v2,ls_v2,fixed_push_mkdir,apex,abb,fixed_push_symlink_timestamp,abb_exec"
DRAIN_TIMEOUT = 0.5


def block(text: str | bytes) -> bytes:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return b"%04x" % len(data) + data


def framebuffer(frame: np.ndarray) -> bytes:
    """The framebuffer: service's version-2 answer: header (colour space sRGB, RGBA_8888 offsets) and pixels."""
    h, w = frame.shape[:2]
    rgba = cv2.cvtColor(frame, cv2.COLOR_BGR2RGBA).tobytes()
    # version, bpp, colour space, size, width, height, then (offset, length) of red, blue, green, alpha.
    return struct.pack("<14I", 2, 32, 1, len(rgba), w, h, 0, 8, 16, 8, 8, 8, 24, 8) + rgba


class Conversation:
    """One client connection: host requests until a transport is chosen, then one device service."""

    def __init__(self, server: Any, sock: socket.socket) -> None:
        """`server` is the engine.sim.adb_server.FakeAdbServer that accepted `sock` (its devices, forwards, sync
        service and stop event), or the engine.sim.adbd.AdbdServer whose stream `sock` is (it calls ``service``
        only)."""
        self.server = server
        self.sock = sock
        self.device: SimDevice | None = None
        self.fault = "none"

    # ---- wire

    def _recv_exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise StreamClosed()
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
        self.send(b"FAIL" + block(message))

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

    def find(self, serial: str | None) -> SimDevice | None:
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
        if device.state != "device":  # adb's own words (AOSP adb transport.cpp acquire_one_transport)
            self.fail("device offline" if device.state == "offline" else "device unauthorized.\nThis adb server's "
                      "$ADB_VENDOR_KEYS is not set\nTry 'adb kill-server' if that seems wrong.\nOtherwise check "
                      "for a confirmation dialog on your device.")
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
            raise StreamClosed()

    def host_request(self, request: str) -> bool:
        """Answer a host request. Returns True when the connection continues with another request."""
        devices = self.server.devices
        if request == "host:version":
            self.okay(block(b"%04x" % ADB_VERSION))
        elif request in ("host:devices", "host:devices-l"):
            self.okay(block(self._device_list(request.endswith("-l"))))
        elif request in ("host:track-devices", "host:track-devices-l"):
            self.okay(block(self._device_list(request.endswith("-l"))))
            self._hold_open()
        elif request == "host:features" or request == "host:host-features":
            self.okay(block(FEATURES))
        elif request == "host:kill":
            log.info("a client asked the fake adb server to exit; it keeps serving until stop()")
            self.okay()
        elif request.startswith("host:connect:"):
            addr = request.removeprefix("host:connect:")
            device = devices.get(addr)
            reply = device.connect_reply if device is not None else "refused"
            host, _, port = addr.rpartition(":")
            # adb's replies (AOSP adb/client/adb_client.cpp and socket_spec.cpp; ALAS connection.py quotes them)
            answers = {"refused": f"failed to connect to '{addr}': Connection refused",
                       "bad port": f"bad port number '{port}' in '{addr}'",
                       "failed": f"failed to connect to '{addr}': Operation timed out"}
            if reply in answers:
                self.okay(block(answers[reply]))
            else:
                self.okay(block(("already connected to " if device.connected_once else "connected to ") + addr))
                device.connected_once = True
        elif request.startswith("host:disconnect:"):
            self.okay(block(f"disconnected {request.removeprefix('host:disconnect:')}"))
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
        elif request.startswith(("host:forward:", "host:killforward", "host:list-forward")):
            self._forward(None, request.removeprefix("host:"))
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
                    f"{device.serial:<22} {device.state} product:sim model:SimGame device:sim "
                    f"transport_id:{device.transport_id}"
                )
            else:
                lines.append(f"{device.serial}\t{device.state}")
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
        if self._forward_query(kind, rest):
            return
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
            raise StreamClosed()
        device = self.device
        answers = {
            "features": FEATURES,
            "get-state": "device",
            "get-serialno": device.serial,
            "get-devpath": f"sim:{device.transport_id}",
        }
        if query in answers:
            self.okay(block(answers[query]))
        else:
            self.fail(f"unknown device query '{query}'")

    def _forward_query(self, kind: str, rest: str) -> bool:
        """host-serial:S:forward:..., killforward..., list-forward (the spec itself has ':'). True if answered."""
        for verb in ("forward:", "killforward", "list-forward"):
            if rest.startswith(verb) and kind in ("host-usb", "host-local"):
                self._forward(None, rest)
                return True
            at = rest.find(":" + verb)
            if at >= 0 and kind in ("host-serial", "host-transport-id"):
                target = rest[:at] if kind == "host-serial" else "id:" + rest[:at]
                self._forward(target, rest[at + 1:])
                return True
        return False

    def _forward(self, serial: str | None, query: str) -> None:
        """forward:[norebind:]LOCAL;REMOTE, killforward:LOCAL, killforward-all, list-forward (adb's two OKAYs)."""
        server = self.server
        if query == "list-forward":
            lines = "".join(f"{s} {local} {remote}\n" for local, (s, remote) in server.forwards().items())
            self.okay(block(lines))
            return
        if query == "killforward-all":
            server.remove_forward(None)
            self.okay(b"OKAY")
            return
        if query.startswith("killforward:"):
            if server.remove_forward(query.removeprefix("killforward:")):
                self.okay(b"OKAY")
            else:
                self.fail(f"listener '{query.removeprefix('killforward:')}' not found")
            return
        spec = query.removeprefix("forward:").removeprefix("norebind:")
        local, _, remote = spec.partition(";")
        device = self.find(serial)
        if device is None or not local.startswith("tcp:") or not remote:
            self.fail(f"cannot bind listener: bad forward '{spec}'" if device else f"device '{serial}' not found")
            return
        try:
            port = server.add_forward(device.serial, local, remote)
        except OSError as exc:
            self.fail(f"cannot bind listener: {exc}")
            return
        self.okay(b"OKAY" + (block(str(port)) if local == "tcp:0" else b""))

    # ---- device services

    def service(self, request: str) -> None:
        device = self.device
        if self.fault == "hang":
            self.okay()  # the service starts, then nothing ever comes out of it
            self.hang_if_told()
        m = re.match(r"^(shell|exec)(,[^:]*)?:(.*)$", request, re.S)
        # Agents speak raw bytes: only on a v1 shell (adbutils, ALAS), not inside shell v2's packets.
        agent = agent_for(device, m.group(3)) if m and "v2" not in (m.group(2) or "") else None
        if agent is not None:
            self.okay()
            agent(self.sock, self.server._stopping)
            self.finish()
        elif request == "sync:":
            self.okay()
            self.server.sync_service(self, device)  # the server module owns the file services
        elif request.startswith("localabstract:"):
            self.okay()
            if not connect_local(device, request.removeprefix("localabstract:"), self.sock, self.server._stopping):
                raise StreamClosed()  # nothing listens there: the device closes the stream at once
            self.finish()
        elif request.startswith(("host:forward:", "host:killforward", "host:list-forward")):
            self._forward(device.serial, request.removeprefix("host:"))  # Debian's adb: host:tport, then this
        elif request.startswith("reverse:"):
            self._reverse(request.removeprefix("reverse:"))
        elif request.startswith("tcp:"):  # what `adb forward tcp:L tcp:PORT` opens: the device's own PORT
            listener = device.listeners.get(request)
            if listener is None:
                self.fail(f"connect to {request} failed: Connection refused")
                self.finish()
                return
            self.okay()
            listener(self.sock.dup())  # the `nc -l` that listens there now owns the connection
        elif request == "framebuffer:":
            payload = framebuffer(device_frame(device))
            self._answer(payload)
        elif m:
            name, options, command = m.group(1), (m.group(2) or "").split(","), m.group(3)
            # adbd answers OKAY as the process starts, before its output (a pipeline into `nc` ends only once
            # the host has read the socket: a client that waits for the OKAY first must get it first)
            self.okay()
            out, err, both, code = run_shell(device, command)
            if name == "shell" and "v2" in options:
                packets = b""
                if out:
                    packets += b"\x01" + struct.pack("<I", len(out)) + out
                if err:
                    packets += b"\x02" + struct.pack("<I", len(err)) + err
                packets += b"\x03" + struct.pack("<I", 1) + bytes([code & 0xFF])
                self._answer(packets, okayed=True)
            else:
                self._answer(both, okayed=True)
        else:
            self.fail(f"unsupported service '{request.split(':', 1)[0]}'")
            self.finish()

    def _reverse(self, query: str) -> None:
        """reverse:forward:[norebind:]REMOTE;LOCAL, reverse:list-forward, reverse:killforward[-all], as AOSP adb's
        handle_forward_request answers them on the device (one OKAY, then the port picked for tcp:0); `nc` on the
        device connects through the table (engine.sim.toybox)."""
        table = self.device.reverses
        if query == "list-forward":
            self.okay(block("".join(f"UsbFfs {r} {loc}\n" for r, loc in table.items())))
        elif query == "killforward-all":
            table.clear()
            self.okay(b"OKAY")
        elif query.startswith("killforward:"):
            if table.pop(query.removeprefix("killforward:"), None) is None:
                self.fail(f"listener '{query.removeprefix('killforward:')}' not found")
            else:
                self.okay(b"OKAY")
        elif query.startswith("forward:"):
            norebind = query.startswith("forward:norebind:")
            remote, _, local = query.removeprefix("forward:").removeprefix("norebind:").partition(";")
            if not remote.startswith("tcp:") or not local.startswith("tcp:"):
                self.fail(f"bad forward: {query.removeprefix('forward:')}")
            elif norebind and remote in table:
                self.fail("cannot rebind existing socket")
            else:
                port = remote.removeprefix("tcp:")
                if port == "0":  # adb.cpp: the device picks a free port and sends it back
                    port = str(next(p for p in range(32768, 61000) if f"tcp:{p}" not in table))
                table[f"tcp:{port}"] = local
                self.okay(b"OKAY" + (block(port) if remote == "tcp:0" else b""))
        else:
            self.fail(f"unknown reverse request '{query}'")
        self.finish()

    def _answer(self, payload: bytes, okayed: bool = False) -> None:
        if not okayed:
            self.okay()
        if self.fault == "closed":
            # The scenario cuts the connection mid-answer: half the bytes, then a reset.
            self.send(payload[: len(payload) // 2])
            log.info("scenario: connection to %s closed mid-answer", self.device.serial)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            raise StreamClosed()
        self.send(payload)
        self.finish()
