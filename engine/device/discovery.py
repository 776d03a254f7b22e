"""Finding the devices the engine can reach without the user knowing a port, and picking one for ``--serial auto``.

One scan merges three sources, concurrently and inside one bound: the ADB server's device list (offline and
unauthorized rows too), the emulator instances installed on this machine (engine.device.emulators reads each
emulator's own files), and a probe of the emulators' default ports on 127.0.0.1 that sends adb's CNXN handshake, so
a port counts only when something answers as adbd. The scan never starts an ADB server (adbutils would: the bounded
client does not) and says what it could not read.

One device reached two ways (``emulator-5554`` and ``127.0.0.1:5555``, adb's own pairing of console and adbd
ports) is one row; a MuMu 12 instance whose port moved by up to 2 (the next free one, as MuMu does when its port is
taken) is followed to the port that answers (ALAS connection.py detect_device does the same).
"""

from __future__ import annotations

import logging
import socket
import struct
import time
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterable

from engine.device.address import adb_server_address
from engine.device.client import BoundedClient
from engine.device.emulators import (
    EMULATOR_PATHS_ENV,
    EMULATORS,
    Found,
    Instance,
    emulator_of_port,
    read_install,
    standard_folders,
)

log = logging.getLogger(__name__)

SCAN_BOUND = 3.0
"""Seconds the whole scan may take."""
PROBE_BOUND = 0.5
"""Seconds one port probe may take (loopback answers in well under a millisecond, or refuses at once)."""
DETAIL_BOUND = 1.5
"""Seconds the details of one listed device (resolution, model, package) may take."""

_A_CNXN, _A_AUTH, _A_STLS = 0x4E584E43, 0x48545541, 0x534C5453
_A_VERSION, _MAX_PAYLOAD = 0x01000001, 256 * 1024

WHAT_TO_DO = {
    "device": "ready",
    "offline": "listed offline: the engine reconnects it (disconnect + connect); if it stays offline, restart the "
               "emulator",
    "unauthorized": "accept the USB debugging prompt on the device's screen",
    "not connected": "answers as adbd but the ADB server does not list it: the engine runs `adb connect` when it "
                     "opens it",
    "not running": "the instance is installed but its port does not answer: start the instance",
    "not adb": "the port is open but does not answer the ADB handshake: another program holds it",
}
USABLE = ("device", "not connected")
"""States `--serial auto` may pick."""


@dataclass
class Row:
    serial: str
    state: str
    emulator: str | None = None
    instance: str | None = None
    found_by: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    resolution: str | None = None
    model: str | None = None
    package: str | None = None
    """The game's package when it is installed on the device, else None."""
    note: str | None = None
    restart: list[str] = field(default_factory=list)
    """The instance's stop and start commands (what the devices file's ``restart:`` can hold)."""

    @property
    def what_to_do(self) -> str:
        return WHAT_TO_DO.get(self.state, f"the ADB server says {self.state!r}")

    def to_dict(self) -> dict:
        return {**asdict(self), "what_to_do": self.what_to_do}


@dataclass
class Scan:
    rows: list[Row]
    problems: list[str]
    server: dict
    elapsed_ms: float

    @property
    def usable(self) -> list[Row]:
        return [row for row in self.rows if row.state in USABLE]

    def to_dict(self) -> dict:
        return {"rows": [r.to_dict() for r in self.rows], "problems": self.problems, "server": self.server,
                "elapsed_ms": round(self.elapsed_ms, 1)}


# ---------------------------------------------------------------------------------------------- pieces


def canonical(serial: str) -> str:
    """The key one device has whichever way it was reached: ``emulator-N`` is ``127.0.0.1:N+1`` (adb pairs an
    emulator's console port N with its adbd port N+1; ALAS module/device/method/utils.py get_serial_pair), and
    ``localhost`` is 127.0.0.1."""
    if serial.startswith("emulator-") and serial[9:].isdigit():
        return f"127.0.0.1:{int(serial[9:]) + 1}"
    if serial.startswith("localhost:"):
        return "127.0.0.1:" + serial[10:]
    return serial


def port_of(serial: str) -> int | None:
    host, _, port = canonical(serial).rpartition(":")
    return int(port) if host == "127.0.0.1" and port.isdigit() else None


def speaks_adb(port: int, timeout: float = PROBE_BOUND, host: str = "127.0.0.1") -> bool | None:
    """True: adbd answers on `port` (CNXN, AUTH or STLS back to our CNXN); False: open but something else; None:
    nothing listens. The message layout is AOSP's (packages/modules/adb/protocol.txt): six little-endian words."""
    payload = b"host::\x00"
    header = struct.pack("<6I", _A_CNXN, _A_VERSION, _MAX_PAYLOAD, len(payload), sum(payload) & 0xFFFFFFFF,
                         _A_CNXN ^ 0xFFFFFFFF)
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError:
        return None
    deadline = time.monotonic() + timeout
    try:
        sock.sendall(header + payload)
        reply = b""
        while len(reply) < 24:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            sock.settimeout(left)
            chunk = sock.recv(24 - len(reply))
            if not chunk:
                return False
            reply += chunk
        command, *_rest, magic = struct.unpack("<6I", reply)
        return command in (_A_CNXN, _A_AUTH, _A_STLS) and magic == command ^ 0xFFFFFFFF
    except OSError:
        return False
    finally:
        sock.close()


PORTS_ENV = "ENGINE_DISCOVERY_PORTS"
"""Comma-separated loopback ports to probe instead of the emulators' defaults (empty: probe none)."""


def default_ports() -> list[int]:
    """The ports a scan probes: ENGINE_DISCOVERY_PORTS when set, else every known emulator's default ports."""
    import os

    text = os.environ.get(PORTS_ENV)
    if text is not None:
        return [int(p) for p in text.replace(" ", "").split(",") if p.isdigit()]
    return sorted({p for e in EMULATORS for p in e.ports})


def installed(paths: Iterable[str | Path] = ()) -> Found:
    """Instances from the standard install folders, the given paths and ENGINE_EMULATOR_PATHS."""
    import os

    found = Found()
    extra = [p for p in os.environ.get(EMULATOR_PATHS_ENV, "").split(os.pathsep) if p]
    for emulator, folder in standard_folders():
        part = read_install(folder, emulator)
        found.instances += part.instances
        found.problems += part.problems
    for path in [*paths, *extra]:
        part = read_install(Path(path).expanduser())
        found.instances += part.instances
        found.problems += part.problems
    return found


def _server_list(client: BoundedClient, bound: float) -> tuple[list[tuple[str, str]], dict, list[str]]:
    """(serial, state) rows of the ADB server, what it is, and problems; never starts a server. The server's
    ``host:version`` is waited for as health waits for it (adbserver.SERVER_PROBE_BOUND): one that accepts and says
    nothing by then is a dead server, said so (``server["down"]``), and the scan does not spend its bound on it."""
    from engine.device.adbserver import SERVER_PROBE_BOUND

    address = f"{client.host}:{client.port}"
    server = {"address": address, "running": False, "version": None, "down": None}
    wait_s, version = min(bound, SERVER_PROBE_BOUND), None
    try:
        with client.bounded(wait_s):
            version = client.server_version()
        with client.bounded(bound):
            rows = [(info.serial, info.state) for info in client.list()]
    except Exception as exc:  # noqa: BLE001 - any failure is reported as a problem of this source
        text = str(exc)
        if "refused" in text.lower():
            server["down"] = f"no ADB server at {address}"
            return [], server, [f"no ADB server at {address} (the scan starts none; it probes the emulators' ports "
                                "itself)"]
        if version is None and "timeout" in (type(exc).__name__ + text).lower():
            server.update(running=None, down=f"dead ADB server at {address}: it accepts connections but does not "
                                             f"answer host:version within {wait_s:.1f} s")
            return [], server, [f"the ADB server at {address} did not answer: {server['down']}"]
        return [], server, [f"the ADB server at {address} did not answer: {text}"]
    server.update(running=True, version=version)
    return rows, server, []


def _details(client: BoundedClient, serial: str, package: str | None) -> dict:
    """Resolution, model and whether `package` is installed, inside DETAIL_BOUND; missing answers stay None."""
    import adbutils

    out: dict = {}
    device = adbutils.AdbDevice(client, serial=serial)
    with client.bounded(DETAIL_BOUND):
        try:
            size = device.shell("wm size").strip().splitlines()
            out["resolution"] = size[-1].split(":")[-1].strip() if size else None
            out["model"] = device.shell("getprop ro.product.model").strip() or None
            if package:
                listed = device.shell(f"pm list packages {package}")
                out["package"] = package if f"package:{package}" in listed.split() else None
        except Exception as exc:  # noqa: BLE001 - details are best effort; the row stays
            out["note"] = f"details unread: {exc}"
    return out


def _linux_kind(model: str | None) -> str | None:
    """redroid, waydroid and Genymotion tell themselves apart by their product model (getprop)."""
    text = (model or "").lower()
    for word, name in (("redroid", "redroid"), ("waydroid", "waydroid"), ("genymotion", "Genymotion"),
                       ("vbox86", "Genymotion"), ("sdk_gphone", "Android emulator")):
        if word in text:
            return name
    return None


# ---------------------------------------------------------------------------------------------- the scan


def scan(*, adb_host: str | None = None, adb_port: int | None = None, emulator_paths: Iterable[str | Path] = (),
         package: str | None = None, ports: Iterable[int] | None = None, bound: float = SCAN_BOUND,
         details: bool = True) -> Scan:
    """Every device the engine can reach, each once, inside `bound` seconds.

    Args:
        adb_host, adb_port: the ADB server whose list is read (default: as adb finds it).
        emulator_paths: install folders to read besides the standard ones.
        package: the game's package; a row says whether it is installed.
        ports: the loopback ports to probe (default: every known emulator's default ports).
    """
    start = time.monotonic()
    host, port = adb_server_address(adb_host, adb_port)
    client = BoundedClient(host, port, default_bound=bound)
    pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="discover")
    try:
        listed_f = pool.submit(_server_list, client, bound / 2)
        found_f = pool.submit(installed, emulator_paths)
        wait([found_f], timeout=bound / 3)
        found = found_f.result() if found_f.done() else Found(problems=["reading the instance files took too long"])
        probe = set(ports if ports is not None else default_ports())
        for inst in found.instances:
            probe.add(inst.port)
            if inst.emulator == "MuMu 12":
                probe.update(inst.port + d for d in (-2, -1, 1, 2))
        probes = {p: pool.submit(speaks_adb, p) for p in sorted(probe) if 0 < p < 65536}
        left = max(0.1, bound - (time.monotonic() - start) - DETAIL_BOUND)
        wait([listed_f, *probes.values()], timeout=left)
        listed, server, problems = listed_f.result() if listed_f.done() else (
            [], {"address": f"{host}:{port}", "running": None, "version": None,
                 "down": f"the ADB server at {host}:{port} did not answer in time"},
            [f"the ADB server at {host}:{port} did not answer in time"])
        answers = {p: f.result() for p, f in probes.items() if f.done()}
        unanswered = sorted(p for p, f in probes.items() if not f.done())
        if unanswered:
            problems.append(f"ports not probed in time: {', '.join(map(str, unanswered))}")
        rows = _merge(listed, found.instances, answers)
        if details and server.get("running"):
            ready = [r for r in rows if r.state == "device"]
            futures = {r.serial: pool.submit(_details, client, r.serial, package) for r in ready}
            wait(futures.values(), timeout=DETAIL_BOUND + 0.2)
            for row in ready:
                if futures[row.serial].done():
                    for key, value in futures[row.serial].result().items():
                        setattr(row, key, value)
                row.emulator = row.emulator or _linux_kind(row.model)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return Scan(rows, found.problems + problems, server, (time.monotonic() - start) * 1000)


def _merge(listed: list[tuple[str, str]], instances: list[Instance], answers: dict[int, bool | None]) -> list[Row]:
    rows: dict[str, Row] = {}
    for serial, state in listed:
        key = canonical(serial)
        row = rows.get(key)
        if row is None:
            rows[key] = Row(serial, state, emulator=emulator_of_port(port_of(serial) or 0) if port_of(serial)
                            else None, found_by=["adb server"])
        else:  # the same device under its other name: keep the one that works, and host:port (adb connect can
            # bring it back after a drop) when both do
            if (row.state != "device" and state == "device") or (
                    row.state == state and serial.startswith("127.0.0.1:") and not row.serial.startswith("127.")):
                row.aliases.append(row.serial)
                row.serial, row.state = serial, state
            else:
                row.aliases.append(serial)
    listed_ports = {port_of(s) for s, _ in listed} - {None}
    claimed: set[int] = set()
    for inst in instances:
        port = inst.port
        if inst.emulator == "MuMu 12" and port not in listed_ports and not answers.get(port):
            moved = next((p for d in (1, -1, 2, -2) if (p := port + d) not in claimed
                          and (p in listed_ports or answers.get(p))), None)
            note = f"port moved from {port} to {moved}" if moved else None
            port = moved or port
        else:
            note = None
        claimed.add(port)
        key = f"127.0.0.1:{port}"
        row = rows.get(key)
        if row is None:
            state = {True: "not connected", False: "not adb"}.get(answers.get(port), "not running")
            row = rows[key] = Row(key, state, found_by=[])
        row.emulator, row.instance = inst.emulator, inst.name
        row.found_by.append(f"instance file {inst.source}")
        row.restart = list(inst.restart)
        row.note = note or row.note
    for port, answer in sorted(answers.items()):
        key = f"127.0.0.1:{port}"
        if answer is not None and key not in rows:  # open but no adbd: listed, so the user learns who holds it
            rows[key] = Row(key, "not connected" if answer else "not adb", emulator=emulator_of_port(port),
                            found_by=["port probe"])
        elif answer and "port probe" not in rows[key].found_by:
            rows[key].found_by.append("port probe")
    return list(rows.values())


# ---------------------------------------------------------------------------------------------- picking


def describe(row: Row) -> str:
    """One line for a row: serial, emulator and instance, state."""
    who = " ".join(x for x in (row.emulator, row.instance and f"'{row.instance}'") if x)
    return f"{row.serial}  {row.state}" + (f"  ({who})" if who else "")


def follow_mumu(serial: str, probe=speaks_adb) -> str:
    """`serial` itself, or, for a MuMu 12 port (16384-17408) where nothing answers, the one port within 2 of it
    that answers as adbd (MuMu takes the next free port when its own is taken; ALAS detect_device follows it)."""
    port = port_of(serial)
    if port is None or not 16384 <= port <= 17408 or serial != canonical(serial) or probe(port):
        return serial
    moved = [p for p in (port + 1, port - 1, port + 2, port - 2) if probe(p)]
    return f"127.0.0.1:{moved[0]}" if len(moved) == 1 else serial


def follow_bluestacks(serial: str, emulator_paths: Iterable[str | Path] = ()) -> str:
    """`serial` itself, or for ALAS's BlueStacks 5 Hyper-V names (``bluestacks5-hyperv``, ``bluestacks5-hyperv-1``)
    the 127.0.0.1 port its bluestacks.conf gives now (it changes at every launch; ALAS connection_attr.py
    find_bluestacks5_hyperv reads it the same way), looked for in the standard data folders and `emulator_paths`."""
    from engine.device import emulators

    if not emulators.BLUESTACKS_HYPERV.match(serial):
        return serial
    folders = [p for e, p in emulators.standard_folders() if e.read is emulators.read_bluestacks5]
    for folder in [*folders, *(Path(p) for p in emulator_paths)]:
        try:
            conf = (folder / "bluestacks.conf").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        port = emulators.bluestacks_hyperv_port(serial, conf)
        if port:
            return f"127.0.0.1:{port}"
    return serial
