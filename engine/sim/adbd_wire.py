"""The ADB transport's messages as adbd reads and writes them: a 24-byte header and a bounded payload.

Built from AOSP's adb sources (android.googlesource.com platform/system/core, mirrored as
aosp-mirror/platform_system_core): ``adb/protocol.txt`` (the header: command, arg0, arg1, data_length, data_check,
magic = command ^ 0xffffffff, little-endian; "receipt of an invalid message header, corrupt message payload, or an
unrecognized command MUST result in the closing of the remote connection"), ``adb/adb.h`` (A_VERSION_MIN 0x01000000,
A_VERSION_SKIP_CHECKSUM 0x01000001: from that version on the payload checksum is neither sent nor checked;
MAX_PAYLOAD_V1 4096 bounds CNXN and AUTH packets) and ``adb/adb.cpp`` (``calculate_apacket_checksum``: the sum of the
payload's bytes; ``get_connection_string``: the banner ``device::ro.product.name=..;ro.product.model=..;
ro.product.device=..;features=..``). The socket helpers below are what adbd's reader and its streams share.
"""

from __future__ import annotations

import logging
import select
import socket
import struct
from dataclasses import dataclass

from engine.core.errors import StreamClosed

log = logging.getLogger("engine.sim.adbd")

A_SYNC = 0x434E5953
A_CNXN = 0x4E584E43
A_AUTH = 0x48545541
A_OPEN = 0x4E45504F
A_OKAY = 0x59414B4F
A_CLSE = 0x45534C43
A_WRTE = 0x45545257
A_STLS = 0x534C5453
KNOWN = {A_SYNC, A_CNXN, A_AUTH, A_OPEN, A_OKAY, A_CLSE, A_WRTE, A_STLS}

A_VERSION_MIN = 0x01000000
A_VERSION_SKIP_CHECKSUM = 0x01000001
A_VERSION = 0x01000001
MAX_PAYLOAD_V1 = 4 * 1024
MAX_PAYLOAD = 256 * 1024
"""What this adbd accepts in one message (adb.h's MAX_PAYLOAD for a device that predates 1 MiB payloads)."""

HEADER = struct.Struct("<6I")

FEATURES = ("shell_v2", "cmd", "stat_v2", "ls_v2", "fixed_push_mkdir", "apex", "fixed_push_symlink_timestamp")
"""What the simulated adbd tells the adb server it can do (adb/transport.cpp's feature names): shell_v2 makes
``adb shell`` open ``shell,v2:`` (separate stdout/stderr and the exit code), stat_v2 and ls_v2 the sync service's
STA2/LST2/LIS2 requests. No ``abb``/``abb_exec``: the simulator has no binder to serve them."""


@dataclass(frozen=True)
class Packet:
    command: int
    arg0: int
    arg1: int
    payload: bytes = b""

    @property
    def name(self) -> str:
        return struct.pack("<I", self.command).decode("ascii", errors="replace")


def checksum(payload: bytes) -> int:
    return sum(payload) & 0xFFFFFFFF


def encode(packet: Packet) -> bytes:
    """The header and payload of `packet`; the checksum is always filled in (newer peers ignore it)."""
    p = packet.payload
    return HEADER.pack(packet.command, packet.arg0, packet.arg1, len(p), checksum(p),
                       packet.command ^ 0xFFFFFFFF) + p


def recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 65536))
        if not chunk:
            raise StreamClosed("the adb server closed the transport")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_packet(sock: socket.socket, *, max_payload: int, check_data: bool) -> Packet:
    """One message from `sock` (whose timeout bounds each read).

    Raises:
        StreamClosed: the peer closed the connection, or the message breaks the protocol: wrong magic, an unknown
            command, a payload over `max_payload`, or (when `check_data`: a protocol version below
            A_VERSION_SKIP_CHECKSUM) a payload whose checksum does not match.
    """
    command, arg0, arg1, length, check, magic = HEADER.unpack(recv_exact(sock, HEADER.size))
    if magic != command ^ 0xFFFFFFFF:
        raise StreamClosed(f"bad magic {magic:#010x} for command {command:#010x}")
    if command not in KNOWN:
        raise StreamClosed(f"unknown command {command:#010x}")
    if length > max_payload:
        raise StreamClosed(f"payload of {length} bytes is over the {max_payload} this transport accepts")
    payload = recv_exact(sock, length) if length else b""
    if check_data and checksum(payload) != check:
        raise StreamClosed(f"payload checksum {checksum(payload):#x} is not the header's {check:#x}")
    return Packet(command, arg0, arg1, payload)


def banner(props: dict[str, str], features: tuple[str, ...] = FEATURES) -> bytes:
    """The CNXN payload adbd sends: ``device::`` then the three product properties and the features."""
    keys = ("ro.product.name", "ro.product.model", "ro.product.device")
    fields = [f"{key}={props.get(key, '')}" for key in keys] + ["features=" + ",".join(features)]
    text = "device::" + ";".join(fields)
    data = text.encode("utf-8")
    if len(data) > MAX_PAYLOAD_V1:
        raise ValueError(f"the connection banner is {len(data)} bytes, over adb's {MAX_PAYLOAD_V1}")
    return data


def readable(sock: socket.socket, seconds: float = 0.2) -> bool:
    """Data (or the end) is waiting on `sock` within `seconds`. poll(), not select(): any fd number works."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(seconds * 1000))


def recv_upto(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def fail_message(sock: socket.socket) -> str:
    """The reason after a host-protocol ``FAIL``: 4 hex digits of length, then the text (at most 4 KiB read)."""
    try:
        size = int(recv_upto(sock, 4) or b"0", 16)
        return recv_upto(sock, min(size, 4096)).decode("utf-8", errors="replace")
    except (ValueError, OSError):
        return "(no reason given)"


def shutdown(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


EMULATOR_PORTS = range(5555, 5586, 2)
"""The adb ports an adb server probes at start for local emulators (transport_local.cpp), named emulator-<port-1>."""


def emulator_serial(port: int) -> str | None:
    """The name an adb server gives a local emulator whose adbd listens on `port`, or None outside 5555..5585."""
    return f"emulator-{port - 1}" if port in EMULATOR_PORTS else None


def notify_adb_server(adbd_port: int, server_port: int, host: str = "127.0.0.1", timeout: float = 2.0) -> bool:
    """Tell a running adb server an emulator is up, as the Android emulator does at boot: the host request
    ``host:emulator:<adbd port>`` (adb.cpp's handle_host_request), after which the server connects to it and names
    it ``emulator-<port - 1>``. An adb server that is not running is no error (False), nor one that hangs."""
    request = f"host:emulator:{adbd_port}".encode()
    try:
        with socket.create_connection((host, server_port), timeout=timeout) as sock:
            sock.sendall(b"%04x" % len(request) + request)
            sock.settimeout(timeout)
            sock.recv(64)  # the server answers nothing and closes; wait for that so the request is read
    except OSError as exc:
        log.info("no adb server to tell on %s:%d (%s)", host, server_port, exc)
        return False
    return True
