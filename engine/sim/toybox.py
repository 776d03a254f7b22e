"""The toybox commands a capture pipeline runs on the simulated phone: ``gzip``, ``nc`` and ``cat /proc/...``.

Built from toybox's own source (landley/toybox, the userland Android ships since 6.0):

- ``toys/lsb/gzip.c``: ``gzip [-19cdfk] [FILE...]``; with no files it compresses stdin to stdout (``-d``
  decompresses), the level is the last of -1..-9 given (default 6); with TOYBOX_LIBZ it writes through zlib's
  ``gzdopen(fd, "w<level>")``, so the stream is a standard gzip member (RFC 1952), which ``zlib`` with wbits 31
  writes here.
- ``toys/net/netcat.c``: ``nc [-w SECS] [-q SECS] [-W SECS] [-l] [-p PORT] HOST PORT``; without -l it needs exactly
  two arguments ("bad argument count"), connects (``-w``: "Timeout" after that many seconds), copies stdin to the
  socket and half-closes at stdin's end, and exits when the peer closes; ``-l -p PORT`` listens for one connection.
  A refused connection is ``nc: connect: Connection refused``, exit 1.

The phone's loopback is the simulator's, not the host's: ``127.0.0.1:PORT`` on the device reaches what listens
there on the device: an ``adb reverse`` (AOSP adb's reverse service: adbd listens on the device port and opens a
``tcp:HOSTPORT`` stream to the host for each connection, engine.sim.adbd) or an ``nc -l`` another command runs
(what ``adb forward tcp:L tcp:PORT`` reaches, through adbd's ``tcp:PORT`` service).
"""

from __future__ import annotations

import socket
import threading
import time
import zlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.sim.simdevice import SimDevice

LISTEN_BOUND = 10.0
"""Seconds an ``nc -l`` with no -w waits for its one connection before the simulator gives up on it."""


def gzip_cmd(device: SimDevice, args: list[str], stdin: bytes) -> tuple[bytes, bytes, int]:
    level, decompress = 6, False
    for arg in args:
        if not arg.startswith("-") or arg == "-":
            return b"", f"gzip: {arg}: files are not simulated; use stdin\n".encode(), 1
        for flag in arg[1:]:
            if flag.isdigit() and flag != "0":
                level = int(flag)
            elif flag == "d":
                decompress = True
            elif flag not in "cfk":
                return b"", f"gzip: Unknown option '{flag}' (see \"gzip --help\")\n".encode(), 1
    if decompress:
        try:
            return zlib.decompress(stdin, 31), b"", 0
        except zlib.error as exc:
            return b"", f"gzip: gzread: {exc}\n".encode(), 1
    cost = getattr(device.game.scenario, "gzip_ms", 0.0)  # the device's CPU time to deflate a frame (profile)
    if cost > 0:
        device.game.sleep(cost / 1000.0)
    packer = zlib.compressobj(level, zlib.DEFLATED, 31)
    return packer.compress(stdin) + packer.flush(), b"", 0


def _flags(args: list[str]) -> tuple[dict[str, str | bool], list[str]]:
    flags: dict[str, str | bool] = {}
    rest: list[str] = []
    it = iter(args)
    for arg in it:
        if arg.startswith("-") and len(arg) > 1:
            for i, flag in enumerate(arg[1:]):
                if flag in "wWpqs":
                    value = arg[i + 2:] or next(it, "")
                    flags[flag] = value
                    break
                flags[flag] = True
        else:
            rest.append(arg)
    return flags, rest


def nc_cmd(device: SimDevice, args: list[str], stdin: bytes) -> tuple[bytes, bytes, int]:
    flags, rest = _flags(args)
    try:
        wait = float(flags["w"]) if "w" in flags else None
        port = int(flags["p"]) if "p" in flags else None
    except ValueError:
        return b"", b"nc: bad argument (see \"nc --help\")\n", 1
    if flags.get("l"):
        return _listen(device, port, stdin, wait)
    if len(rest) != 2 or not rest[1].isdigit():
        return b"", b"nc: bad argument count (see \"nc --help\")\n", 1
    host, port = rest[0], int(rest[1])
    if host not in ("127.0.0.1", "localhost", "::1"):
        return b"", b"nc: connect: Network is unreachable\n", 1
    target = device.reverses.get(f"tcp:{port}")
    opener = device.open_host
    if target is None or opener is None:
        return b"", b"nc: connect: Connection refused\n", 1
    try:
        conn = opener(target, wait or LISTEN_BOUND)
    except TimeoutError:
        return b"", b"nc: Timeout\n", 1
    except OSError:
        return b"", b"nc: connect: Connection refused\n", 1
    return _copy(conn, stdin)


def _copy(conn: socket.socket, stdin: bytes) -> tuple[bytes, bytes, int]:
    """stdin to the socket, a half-close at its end, then what the peer sends until it closes (toybox pollinate)."""
    out = bytearray()
    try:
        conn.settimeout(LISTEN_BOUND)
        conn.sendall(stdin)
        conn.shutdown(socket.SHUT_WR)
        while chunk := conn.recv(65536):
            out += chunk
    except OSError as exc:
        return bytes(out), f"nc: {exc}\n".encode(), 1
    finally:
        conn.close()
    return bytes(out), b"", 0


def _listen(device: SimDevice, port: int | None, stdin: bytes, wait: float | None) -> tuple[bytes, bytes, int]:
    """``nc -l -p PORT``: one connection to the device's PORT (adbd's ``tcp:PORT`` service hands it over)."""
    if port is None:
        return b"", b"nc: -l without -p is not simulated\n", 1
    key = f"tcp:{port}"
    if key in device.listeners:
        return b"", b"nc: bind: Address already in use\n", 1
    arrived: list[socket.socket] = []
    ready = threading.Event()
    device.listeners[key] = lambda conn: (arrived.append(conn), ready.set())
    try:
        if not ready.wait(wait or LISTEN_BOUND):
            return b"", b"nc: Timeout\n" if wait else b"", 1
    finally:
        device.listeners.pop(key, None)
    return _copy(arrived[0], stdin)


def cat_cmd(device: SimDevice, args: list[str], stdin: bytes) -> tuple[bytes, bytes, int]:
    """``cat`` of stdin or of the two /proc files a client reads: uptime (boot time) and net/arp."""
    if not args:
        return stdin, b"", 0
    out = b""
    for path in args:
        if path == "/proc/uptime":
            up = time.monotonic() - device.booted
            out += f"{up:.2f} {up * 1.9:.2f}\n".encode()
        elif path == "/proc/net/arp":
            out += (b"IP address       HW type     Flags       HW address            Mask     Device\n"
                    b"10.0.2.2         0x1         0x2         52:54:00:12:35:02     *        eth0\n")
        elif path in device.files:
            out += device.files[path]
        else:
            return out, f"cat: {path}: No such file or directory\n".encode(), 1
    return out, b"", 0


PIPED = {"gzip": gzip_cmd, "nc": nc_cmd, "netcat": nc_cmd, "cat": cat_cmd}
"""Commands that read stdin, by name (engine.sim.shell runs them inside a pipeline)."""
