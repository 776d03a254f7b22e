"""One ADB server, no fights: what listens at the ADB server address, whether its version is the engine's adb's, and
whether the engine started it (only then may it restart it, unless the user says so).

adb clients kill a server of another version and start their own (adb's "server version doesn't match this client"),
so an emulator's bundled adb and the system's take turns killing each other's server and every device drops. The
engine reports the mismatch with both versions and the fix instead of joining the fight. A server the engine starts
is recorded in ``$ENGINE_HOME/adb-servers.json`` (port, pid); it stays up for the user's other tools, as adb's own
convention is.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path

from engine.core.errors import AdbServerDown
from engine.core.paths import agent_home
from engine.device.address import adb_server_address

log = logging.getLogger(__name__)

ADB_ENV = "ENGINE_ADB"
"""The adb binary the engine runs (default: adbutils' choice: ADBUTILS_ADB_PATH, adb on PATH, its bundled one)."""
TAKEOVER_ENV = "ENGINE_ADB_TAKEOVER"
"""Set to 1 to let the engine restart an ADB server it did not start (as --restart-adb-server)."""
VERSION_BOUND = 5.0
START_BOUND = 20.0
_VERSION = re.compile(r"Android Debug Bridge version 1\.0\.(\d+)")


def adb_binary() -> str | None:
    """The adb the engine would run, or None when there is none."""
    if os.environ.get(ADB_ENV):
        return os.environ[ADB_ENV]
    try:
        import adbutils

        return adbutils.adb_path()
    except Exception:  # noqa: BLE001 - no adb at all is an answer
        return None


def binary_version(path: str | None) -> int | None:
    """The protocol version (41 for 1.0.41) `adb version` prints, or None when it cannot be read in time."""
    if not path:
        return None
    try:
        out = subprocess.run([path, "version"], capture_output=True, text=True, timeout=VERSION_BOUND).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = _VERSION.search(out)
    return int(match.group(1)) if match else None


def probe_server(host: str, port: int, timeout: float = 1.0) -> tuple[str, int | None]:
    """("none", None) nothing listens; ("adb", version) an ADB server answers host:version; ("silent", None)
    something accepts but says nothing within `timeout` (a hung server); ("other", None) something else holds the
    port."""
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError:
        return "none", None
    try:
        sock.settimeout(timeout)
        sock.sendall(b"000chost:version")
        reply = b""
        while len(reply) < 12:
            chunk = sock.recv(12 - len(reply))
            if not chunk:
                break
            reply += chunk
    except socket.timeout:
        return ("silent" if not reply else "other"), None
    except OSError:
        return "other", None
    finally:
        sock.close()
    if reply[:4] == b"OKAY" and len(reply) == 12:
        try:
            return "adb", int(reply[8:12], 16)
        except ValueError:
            return "other", None
    return "other", None


# ---------------------------------------------------------------------------------------------- ownership


def _owned_file() -> Path:
    return agent_home() / "adb-servers.json"


def owned() -> dict[str, dict]:
    """Servers the engine started, by port (as text)."""
    try:
        data = json.loads(_owned_file().read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _record(port: int, entry: dict | None) -> None:
    data = owned()
    if entry is None:
        data.pop(str(port), None)
    else:
        data[str(port)] = entry
    path = _owned_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")
    except OSError as exc:
        log.warning("cannot record the ADB server the engine started: %s", exc)


def is_owned(port: int) -> bool:
    return str(port) in owned()


def takeover_allowed(flag: bool = False) -> bool:
    return flag or os.environ.get(TAKEOVER_ENV, "") in ("1", "true", "yes")


@dataclass(frozen=True)
class ServerCheck:
    address: str
    listening: str
    """none, adb or other."""
    server_version: int | None
    binary: str | None
    binary_version: int | None
    owned: bool
    problem: str | None = None
    fix: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        if self.problem:
            return f"{self.problem}. {self.fix}"
        if self.listening == "none":
            return f"no ADB server at {self.address}; the engine's adb is {self._bin()}"
        return (f"server at {self.address} is 1.0.{self.server_version}"
                f"{' (started by the engine)' if self.owned else ''}; the engine's adb is {self._bin()}")

    def _bin(self) -> str:
        if self.binary is None:
            return "not found"
        version = f"1.0.{self.binary_version}" if self.binary_version else "version unread"
        return f"{self.binary} ({version})"


def check(host: str | None = None, port: int | None = None, *, listening: bool | None = None,
          version: int | None = None) -> ServerCheck:
    """What holds the ADB server address, and whether its version is the engine's adb's.

    Args:
        listening, version: what a scan already learnt (skips asking again when it is an ADB server).
    """
    host, port = adb_server_address(host, port)
    kind, server_version = ("adb", version) if listening and version else probe_server(host, port)
    binary = adb_binary()
    bin_version = binary_version(binary)
    address = f"{host}:{port}"
    problem = fix = None
    if kind == "silent":
        problem = f"something holds port {port} ({address}) but does not answer host:version (a hung ADB server?)"
        fix = f"Restart the ADB server on port {port} (adb -P {port} kill-server, then start-server)"
    elif kind == "other":
        problem = f"port {port} ({address}) is held by something that is not an ADB server"
        fix = (f"Stop the program holding port {port}, or use another port: ANDROID_ADB_SERVER_PORT=N (or --adb-port "
               "N) for the engine and every adb you run")
    elif kind == "adb" and bin_version and server_version and server_version != bin_version:
        problem = (f"the ADB server at {address} is version 1.0.{server_version} but the engine's adb ({binary}) is "
                   f"1.0.{bin_version}: each adb kills a server of another version, so tools fight and devices drop")
        fix = (f"Use one adb for every tool: set {ADB_ENV} (or ADBUTILS_ADB_PATH) to the adb that started the server, "
               "or point the emulator's tools at the same adb; or let the engine replace the server with "
               f"{TAKEOVER_ENV}=1")
    return ServerCheck(address, kind, server_version, binary, bin_version, is_owned(port), problem, fix)


def start(host: str | None = None, port: int | None = None, *, binary: str | None = None,
          bound: float = START_BOUND) -> int:
    """Start an ADB server on `port` with the engine's adb and record it as the engine's; returns its version.

    Raises:
        AdbServerDown: no adb, the port is held by something else, or the server does not come up in time.
    """
    host, port = adb_server_address(host, port)
    kind, version = probe_server(host, port)
    if kind in ("other", "silent"):
        raise AdbServerDown(f"port {port} is held by something that is not an answering ADB server; the engine "
                            "starts none there (use another ANDROID_ADB_SERVER_PORT)")
    if kind == "adb":
        return int(version or 0)
    binary = binary or adb_binary()
    if not binary:
        raise AdbServerDown("no adb binary: install adb (Debian: apt-get install adb) or set ENGINE_ADB")
    try:
        subprocess.run([binary, "-P", str(port), "start-server"], capture_output=True, timeout=bound,
                       check=False, env={**os.environ, "ANDROID_ADB_SERVER_PORT": str(port)})
    except (OSError, subprocess.SubprocessError) as exc:
        raise AdbServerDown(f"{binary} start-server on port {port} failed: {exc}") from exc
    kind, version = probe_server(host, port)
    if kind != "adb":
        raise AdbServerDown(f"{binary} start-server did not bring up an ADB server on port {port}")
    _record(port, {"binary": binary, "version": version, "pid": _listener_pid(port)})
    log.info("started the ADB server on port %d (%s, 1.0.%s)", port, binary, version)
    return int(version or 0)


def kill(host: str | None = None, port: int | None = None, *, force: bool = False) -> bool:
    """Ask the server on `port` to exit (host:kill) when the engine started it, or when `force` (the user said
    so). Returns whether it was asked; never touches a server it does not own otherwise."""
    host, port = adb_server_address(host, port)
    if not (is_owned(port) or takeover_allowed(force)):
        log.info("not stopping the ADB server on port %d: the engine did not start it", port)
        return False
    try:
        with socket.create_connection((host, port), timeout=2.0) as sock:
            sock.settimeout(2.0)
            sock.sendall(b"0009host:kill")
            sock.recv(4)
    except OSError:
        pass
    _record(port, None)
    return True


def _listener_pid(port: int) -> int | None:
    """The pid listening on 127.0.0.1:`port` (Linux /proc; None elsewhere or when unreadable)."""
    from engine.device.procnet import listener_pids

    pids = listener_pids(port)
    return pids[0] if pids else None


def settle(host: str | None = None, port: int | None = None) -> ServerCheck:
    """Check the server a device will be reached through, before a session opens it: a port held by something
    else raises; a version mismatch is replaced when the user allowed it (ENGINE_ADB_TAKEOVER=1), else returned
    for the caller to report.

    Raises:
        AdbServerDown: the port is held by something that is not an ADB server.
    """
    found = check(host, port)
    if found.listening == "other":
        raise AdbServerDown(f"{found.problem}. {found.fix}")
    if found.problem and takeover_allowed():
        log.warning("%s; replacing it (%s)", found.problem, TAKEOVER_ENV)
        kill(host, port, force=True)
        start(host, port, binary=found.binary)
        return check(host, port)
    return found


# ---------------------------------------------------------------------------------------------- health's view

SERVER_PROBE_BOUND = 0.8
"""Seconds a health check waits for host:version. A live server answers in about a millisecond when the machine is
quiet, but a Python one (the simulator's) on a loaded 2-core machine (load 15) took over 0.3 s and was called dead
(tests/engine/test_cli_mode.py, issue 49); 0.8 s still leaves health inside its 2 s promise."""


def server_down(host: str | None = None, port: int | None = None, *, bound: float = 1.0,
                on_start=None) -> str | None:
    """None when an ADB server answers at the address (after starting one, as any adb client does, when nothing
    listens: `on_start(sentence)` is told); else one sentence saying which it is: no server (and why none could be
    started), a dead one (it accepts but does not answer, or the one the engine started is gone), or a port held
    by something else. Everything within `bound` seconds, so ``health`` answers fast whatever the server does.
    """
    import time

    end = time.monotonic() + bound
    host, port = adb_server_address(host, port)
    address = f"{host}:{port}"
    kind, _ = probe_server(host, port, timeout=min(SERVER_PROBE_BOUND, bound))
    if kind == "adb":
        return None
    if kind == "silent":
        return (f"dead ADB server at {address}: it accepts connections but does not answer host:version within "
                f"{min(SERVER_PROBE_BOUND, bound):.1f} s (adb -P {port} kill-server, then start it again)")
    if kind == "other":
        return f"port {port} ({address}) is held by something that is not an ADB server"
    was = owned().get(str(port))
    gone = (f"the ADB server the engine started at {address} (pid {was.get('pid')}) is gone; "
            if isinstance(was, dict) else f"no ADB server at {address}; ")
    if not host.startswith("127."):
        return gone + "the engine starts servers on this machine only"
    left = end - time.monotonic()
    if left <= 0.05:
        return gone + "no time was left to start one"
    try:
        version = start(host, port, bound=left)
    except AdbServerDown as exc:
        return gone + f"it cannot be started: {exc}"
    if on_start is not None:
        on_start(gone + f"started one (1.0.{version}); it stays up for your other adb tools")
    return None
