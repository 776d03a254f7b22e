"""The simulated game as an emulator: the device side of the ADB protocol (adbd) on a loopback port.

Debian's real adb server connects to it (``adb connect 127.0.0.1:PORT``; on 5555..5585 it also finds it by itself at
start as ``emulator-<PORT-1>``, as it finds a local emulator) and drives it as it drives MuMu or LDPlayer. Built from
AOSP's adb sources (aosp-mirror/platform_system_core, ``adb/``): ``protocol.txt`` (messages, CNXN, OPEN, READY =
A_OKAY, WRTE with one WRTE in flight per stream until the next READY, CLSE, local and remote ids relative to the
sender), ``adb.cpp`` (``handle_packet`` and ``handle_new_connection``: a device without auth answers the host's
CNXN with its own CNXN; an OPEN is answered READY or CLSE(0, remote)), ``transport_local.cpp`` (the adb server probes
ports 5555, 5557, ... 5585 and names what answers ``emulator-<port - 1>``), ``SERVICES.TXT`` and ``SYNC.TXT`` (the
services a stream is opened to). The wire format is ``engine.sim.adbd_wire``.

A stream's service is the one the fake ADB host server runs (``adb_protocol.Conversation.service``: shell, shell v2,
exec, sync, framebuffer, the touch agents), served on one end of a socketpair; this module pumps the other end into
WRTE messages. The service's host-protocol status becomes the stream's answer: OKAY a READY, FAIL a CLSE, as the adb
server itself translates them the other way. Device faults of the scenario: ``offline`` drops the whole transport
(the adb server shows the device offline and reconnects), ``closed`` cuts a stream mid-answer, ``hang`` leaves it
silent for the scenario's seconds.
"""

from __future__ import annotations

import itertools
import logging
import socket
import threading
import time
from typing import TYPE_CHECKING

from engine.core.errors import StreamClosed
from engine.sim.adb_protocol import Conversation
from engine.sim.adb_server import sync_service
from engine.sim.adbd_wire import (
    A_AUTH,
    A_CLSE,
    A_CNXN,
    A_OKAY,
    A_OPEN,
    A_STLS,
    A_SYNC,
    A_VERSION,
    A_VERSION_MIN,
    A_VERSION_SKIP_CHECKSUM,
    A_WRTE,
    MAX_PAYLOAD,
    MAX_PAYLOAD_V1,
    Packet,
    banner,
    encode,
    fail_message,
    read_packet,
    EMULATOR_PORTS,
    emulator_serial,
    notify_adb_server,
    readable,
    recv_upto,
    shutdown,
)
from engine.sim.link import Link
from engine.sim.simdevice import SimDevice

__all__ = ["EMULATOR_PORTS", "AdbdServer", "emulator_serial", "notify_adb_server"]

if TYPE_CHECKING:
    from engine.sim.game import SimGame

log = logging.getLogger(__name__)

RECV_TIMEOUT = 10.0
"""Once a message has begun, the rest of it (and a host's READY for our last WRTE) must come within this."""
HANDSHAKE_TIMEOUT = 10.0
"""A connection that sends no CNXN within this is closed."""
POLL = 0.2
MIN_MAXDATA = 256
"""A host that accepts less than this per message cannot be served (protocol.txt: close the connection)."""
MAX_STREAMS = 64
"""Open streams one transport may hold; an OPEN beyond it is refused (CLSE)."""
MAX_TRANSPORTS = 16
"""Connections served at once (an adb server holds one; the emulator-N probe and `adb connect` make two)."""
class _Stream:
    """One stream: our id, the host's id, and our end of the socketpair the service runs on."""

    def __init__(self, local_id: int, remote_id: int, end: socket.socket) -> None:
        self.local_id = local_id
        self.remote_id = remote_id
        self.end = end
        self.ready = threading.Event()
        self.ready.set()  # protocol.txt: "an OPEN message also implies a READY message"
        self.closed_by_host = False
        self.opened = threading.Event()
        """A stream the device opened (a reverse connection): set by the host's READY or CLSE."""


class _Transport:
    """One connection from an adb server: the handshake, then messages until either side closes."""

    def __init__(self, server: AdbdServer, sock: socket.socket) -> None:
        self.server = server
        self.sock = sock
        self.send_lock = threading.Lock()
        self.version = A_VERSION_MIN
        self.max_send = MAX_PAYLOAD_V1
        self.online = False
        self.streams: dict[int, _Stream] = {}
        self.streams_lock = threading.Lock()
        self.ids = itertools.count(1)

    # ---- wire

    def send(self, command: int, arg0: int, arg1: int, payload: bytes = b"") -> None:
        with self.send_lock:
            self.sock.sendall(encode(Packet(command, arg0, arg1, payload)))

    def _wait_readable(self, bound: float | None) -> None:
        """Block until a message begins (an idle transport may stay open for hours), or stop()."""
        deadline = None if bound is None else time.monotonic() + bound
        while not self.server.stopping.is_set():
            if readable(self.sock, POLL):
                return
            if deadline is not None and time.monotonic() >= deadline:
                raise StreamClosed("no CNXN from the adb server in time")
        raise StreamClosed("the simulated emulator is stopping")

    def read(self) -> Packet:
        self._wait_readable(None if self.online else HANDSHAKE_TIMEOUT)
        max_payload = MAX_PAYLOAD if self.online else MAX_PAYLOAD_V1
        # Checksums are checked only once a version below A_VERSION_SKIP_CHECKSUM is agreed: a host that
        # reconnects sends its CNXN with the version it agreed before (adb 1.0.41 sends no checksum then).
        check = self.online and self.version < A_VERSION_SKIP_CHECKSUM
        return read_packet(self.sock, max_payload=max_payload, check_data=check)

    # ---- the connection

    def run(self) -> None:
        try:
            while True:
                packet = self.read()
                if packet.command == A_CNXN:
                    self._connect(packet)
                elif packet.command in (A_AUTH, A_STLS, A_SYNC):
                    continue  # no auth, no TLS; SYNC is obsolete (protocol.txt): ignored as adbd ignores them
                elif not self.online:
                    continue  # "any messages received before a CONNECT message MUST be ignored"
                elif packet.command == A_OPEN:
                    self._open(packet)
                elif packet.command == A_OKAY:
                    stream = self._stream(packet.arg1)
                    if stream is not None and stream.remote_id == 0:  # the host took a stream we opened
                        stream.remote_id = packet.arg0
                        stream.opened.set()
                    if stream is not None and packet.arg0 == stream.remote_id:
                        stream.ready.set()
                elif packet.command == A_WRTE:
                    self._write(packet)
                elif packet.command == A_CLSE:
                    stream = self._stream(packet.arg1)
                    if stream is not None:
                        stream.closed_by_host = True
                        stream.opened.set()
                        shutdown(stream.end)
        finally:
            self.close()

    def close(self) -> None:
        with self.streams_lock:
            streams = list(self.streams.values())
        for stream in streams:
            shutdown(stream.end)
        shutdown(self.sock)

    def _connect(self, packet: Packet) -> None:
        version, maxdata = packet.arg0, packet.arg1
        if version < A_VERSION_MIN or maxdata < MIN_MAXDATA:
            raise StreamClosed(f"CNXN with version {version:#x}, maxdata {maxdata}: cannot serve it")
        if self.online:
            # A CNXN on a live transport starts it over (adb.cpp's handle_new_connection: offline, then online):
            # the streams of the old session end.
            with self.streams_lock:
                streams = list(self.streams.values())
            for stream in streams:
                stream.closed_by_host = True
                shutdown(stream.end)
        self.version = min(version, A_VERSION)
        self.max_send = min(maxdata, MAX_PAYLOAD)
        self.online = True
        self.server.device.open_host = self.open_to_host  # the reverse connections of `nc` go over this transport
        identity = packet.payload.split(b"\0", 1)[0].decode("utf-8", errors="replace")
        log.info("adb server connected to %s (%s, version %#x, maxdata %d)", self.server.serial, identity,
                 self.version, maxdata)
        self.send(A_CNXN, A_VERSION, MAX_PAYLOAD, banner(self.server.device.props))

    def _stream(self, local_id: int) -> _Stream | None:
        with self.streams_lock:
            return self.streams.get(local_id)

    def _write(self, packet: Packet) -> None:
        stream = self._stream(packet.arg1)
        if stream is None or packet.arg0 != stream.remote_id:
            return  # protocol.txt: a WRTE to no open stream is ignored
        try:
            stream.end.sendall(packet.payload)
        except OSError:
            return  # the service is done; its pump sends the CLSE
        self.send(A_OKAY, stream.local_id, stream.remote_id)

    # ---- streams

    def _open(self, packet: Packet) -> None:
        remote_id = packet.arg0
        if remote_id == 0 or packet.arg1 != 0:
            return
        destination = packet.payload.split(b"\0", 1)[0].decode("utf-8", errors="replace")
        self.server.requests.append(destination)
        device = self.server.device
        with self.streams_lock:
            crowded = len(self.streams) >= MAX_STREAMS
        if crowded:
            log.warning("refusing %r: %d streams are open on this transport", destination, MAX_STREAMS)
            self.send(A_CLSE, 0, remote_id)
            return
        fault = device.next_fault()
        if fault == "offline":
            log.info("scenario: %s drops its transport (offline) on %r", device.serial, destination)
            raise StreamClosed("scenario: the emulator went offline")
        service_end, our_end = socket.socketpair()
        service_end.settimeout(RECV_TIMEOUT)
        our_end.settimeout(RECV_TIMEOUT)
        stream = _Stream(next(self.ids), remote_id, our_end)
        with self.streams_lock:
            self.streams[stream.local_id] = stream
        conv = Conversation(self.server, service_end)
        conv.device = device
        conv.fault = fault
        threading.Thread(target=_serve, args=(conv, destination), daemon=True,
                         name=f"adbd-service:{stream.local_id}").start()
        threading.Thread(target=self._pump, args=(stream,), daemon=True,
                         name=f"adbd-pump:{stream.local_id}").start()

    def open_to_host(self, destination: str, timeout: float) -> socket.socket:
        """A stream the device opens to the host, as adbd does for each connection to an ``adb reverse`` port
        (AOSP adb: the device's listener calls connect_to_remote, an OPEN of ``tcp:HOSTPORT``; the adb server
        connects to that port on the host and answers READY, or CLSE when nothing listens there).

        Raises:
            ConnectionRefusedError: the host closed it; TimeoutError: no answer in `timeout` seconds.
        """
        service_end, our_end = socket.socketpair()
        stream = _Stream(next(self.ids), 0, our_end)
        stream.ready.clear()
        with self.streams_lock:
            self.streams[stream.local_id] = stream
        self.send(A_OPEN, stream.local_id, 0, destination.encode() + b"\0")
        answered = stream.opened.wait(timeout)
        if not answered or stream.closed_by_host:
            with self.streams_lock:
                self.streams.pop(stream.local_id, None)
            service_end.close()
            our_end.close()
            if not answered:
                raise TimeoutError(f"the adb server did not answer OPEN {destination} in {timeout:.1f} s")
            raise ConnectionRefusedError(f"the adb server refused {destination}")
        threading.Thread(target=self._pump, args=(stream, False), daemon=True,
                         name=f"adbd-reverse:{stream.local_id}").start()
        return service_end

    def _pump(self, stream: _Stream, status: bool = True) -> None:
        """The service's status becomes READY or CLSE, its output WRTE messages (one in flight), its end a CLSE.
        A stream the device opened has no status: the host's READY opened it."""
        opened = not status
        try:
            if status and not self._output_waiting(stream):
                return
            status_bytes = recv_upto(stream.end, 4) if status else b"OKAY"
            if status_bytes != b"OKAY":
                if status_bytes == b"FAIL":
                    log.info("stream %d refused: %s", stream.local_id, fail_message(stream.end))
                return
            if status:
                self.send(A_OKAY, stream.local_id, stream.remote_id)
            opened = True
            while self._output_waiting(stream):
                data = stream.end.recv(self.max_send)
                if not data:
                    return
                if not self._wait_ready(stream):
                    return
                stream.ready.clear()
                self.server.link.send(len(data))  # the profile's bandwidth (engine.sim.link)
                self.send(A_WRTE, stream.local_id, stream.remote_id, data)
        except OSError as exc:
            log.debug("stream %d ended: %s", stream.local_id, exc)
        finally:
            with self.streams_lock:
                self.streams.pop(stream.local_id, None)
            if not stream.closed_by_host:
                try:
                    self.send(A_CLSE, stream.local_id if opened else 0, stream.remote_id)
                except OSError:
                    pass
            shutdown(stream.end)
            stream.end.close()

    def _output_waiting(self, stream: _Stream) -> bool:
        """Wait for the service's next bytes (or its end): a touch agent or a hung service may be silent for
        long, so this waits without a bound of its own until the host closes the stream or stop()."""
        while not (stream.closed_by_host or self.server.stopping.is_set()):
            if readable(stream.end, POLL):
                return True
        return False

    def _wait_ready(self, stream: _Stream) -> bool:
        """Wait for the host's READY for our last WRTE (protocol.txt: one WRTE in flight), within RECV_TIMEOUT."""
        deadline = time.monotonic() + RECV_TIMEOUT
        while not stream.ready.wait(POLL):
            if stream.closed_by_host or self.server.stopping.is_set() or time.monotonic() >= deadline:
                return False
        return not stream.closed_by_host


def _serve(conv: Conversation, destination: str) -> None:
    try:
        if destination.startswith(("shell", "exec:")):
            conv.server.link.command()  # the profile's process start (engine.sim.link)
        conv.service(destination)
    except (StreamClosed, OSError) as exc:
        log.debug("service %r ended: %s", destination, exc)
    finally:
        conv.sock.close()


class AdbdServer:
    """A simulated emulator: one game behind an adbd on a loopback port. Use as a context manager, or start()/stop().

    Args:
        game: the simulated game.
        port: the adbd port (0 picks a free one; read it from ``.port`` after start()).
        serial: its ``ro.serialno`` (default ``sim-<port>``); model: its ``ro.product.model`` (default
            ``SimGame_<port>``), so several emulators tell themselves apart.
    """

    def __init__(self, game: SimGame, *, host: str = "127.0.0.1", port: int = 0, serial: str | None = None,
                 model: str | None = None) -> None:
        self.game = game
        self.host = host
        self._requested_port = port
        self._serial = serial
        self._model = model
        self.device: SimDevice | None = None
        self.stopping = threading.Event()
        self._stopping = self.stopping  # the name Conversation's services wait on
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._transports: set[_Transport] = set()
        self._lock = threading.Lock()
        self.requests: list[str] = []
        """Every stream destination opened, in order (for tests and debugging)."""
        self.link = Link.of(game.scenario)
        """The transport's bandwidth and command start-up, from the scenario's profile (engine.sim.link)."""

    @property
    def port(self) -> int:
        return self._listener.getsockname()[1] if self._listener is not None else self._requested_port

    @property
    def serial(self) -> str:
        return self.device.serial if self.device is not None else self._serial or f"sim-{self._requested_port}"

    @property
    def devices(self) -> dict[str, SimDevice]:
        return {self.device.serial: self.device} if self.device is not None else {}

    def start(self) -> AdbdServer:
        if self._listener is not None:
            return self
        self.stopping.clear()
        self._listener = socket.create_server((self.host, self._requested_port))
        port = self.port
        if self.device is None:
            self.device = SimDevice(self._serial or f"sim-{port}", self.game, 1)
            self.device.props.update({"ro.product.name": "sim", "ro.product.device": "sim",
                                      "ro.product.model": self._model or f"SimGame_{port}"})
        self._thread = threading.Thread(target=self._accept, name=f"adbd:{port}", daemon=True)
        self._thread.start()
        log.info("simulated emulator %s: adbd on %s:%d%s", self.device.serial, self.host, port,
                 f" (an adb server names it {emulator_serial(port)})" if emulator_serial(port) else "")
        return self

    def stop(self) -> None:
        """Stop listening and drop every transport and stream at once."""
        listener, self._listener = self._listener, None
        if listener is None:
            return
        self._requested_port = listener.getsockname()[1]
        self.stopping.set()
        shutdown(listener)
        listener.close()
        with self._lock:
            transports = list(self._transports)
        for transport in transports:
            transport.close()
        if self._thread is not None:
            self._thread.join(timeout=2)

    def __enter__(self) -> AdbdServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def sync_service(self, conv: Conversation, device: SimDevice) -> None:
        """``sync:`` (push, pull, stat, list): the fake host server's file service, on this stream."""
        sync_service(conv, device)

    def _accept(self) -> None:
        listener = self._listener
        while listener is not None and not self.stopping.is_set():
            try:
                sock, _ = listener.accept()
            except OSError:
                return
            with self._lock:
                crowded = len(self._transports) >= MAX_TRANSPORTS
            if crowded:
                log.warning("refusing a connection: %d adb servers are connected already", MAX_TRANSPORTS)
                sock.close()
                continue
            threading.Thread(target=self._handle, args=(sock,), daemon=True, name=f"adbd-transport:{self.port}").start()

    def _handle(self, sock: socket.socket) -> None:
        sock.settimeout(RECV_TIMEOUT)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        transport = _Transport(self, sock)
        with self._lock:
            self._transports.add(transport)
        try:
            transport.run()
        except StreamClosed as exc:
            log.debug("transport closed: %s", exc)
        except OSError as exc:
            log.debug("transport ended: %s", exc)
        finally:
            with self._lock:
                self._transports.discard(transport)
            sock.close()
