"""The emulators the engine knows: where each keeps its instances, how an instance's ADB port is read from its own
files, which ports it listens on by default, and the command that restarts one instance.

Every reader follows a peer that reads the same files on users' machines (named in its comment): ALAS
(module/device/platform/emulator_windows.py, emulator_base.py, platform_windows.py) and MaaFramework
(source/MaaToolkit/AdbDevice/AdbDeviceWin32Finder.cpp). A reader takes an install folder and returns what it found
and what it could not read; it never raises and never runs the emulator's tools.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

MAX_FILE_BYTES = 4 << 20
"""An instance file larger than this is not read (a .vbox is a few kB; bluestacks.conf some tens)."""
MAX_INSTANCES = 256
"""Folders looked at per install (MuMu and LDPlayer allow a few dozen instances)."""

# <Forwarding name="port2" proto="1" hostip="127.0.0.1" hostport="62026" guestport="5555"/>
# (ALAS emulator_windows.py Emulator.vbox_file_to_serial: the host port forwarded to adbd's guest port 5555)
_FORWARDING = re.compile(r'hostport="(\d+)"[^>]*?guestport="5555"')
# bst.instance.Nougat64.status.adb_port="5555" (ALAS emulator_windows.py, BlueStacks5 branch of iter_instances)
_BLUESTACKS_PORT = re.compile(r'bst\.instance\.(\w+)\.status\.adb_port="(\d+)"')
# MuMuPlayer-12.0-3, MuMuPlayerGlobal-12.0-0, MuMuPlayer-15.0-0, YXArkNights-12.0-1 (ALAS emulator_base.py
# EmulatorInstanceBase.MuMuPlayer12_id)
_MUMU_ID = re.compile(r"(?:MuMuPlayer(?:Global)?-1[25]\.0|YXArkNights-12\.0)-(\d+)$")


@dataclass(frozen=True)
class Instance:
    """One emulator instance as its own files describe it."""

    emulator: str
    name: str
    port: int
    """The host port forwarded to the instance's adbd (127.0.0.1:port is its serial)."""
    source: str
    """The file (or folder) the port was read from."""
    restart: tuple[str, ...] = ()
    """Commands that stop and start this instance (for the devices file's ``restart:``), when the tool is known."""

    @property
    def serial(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class Found:
    instances: list[Instance] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _read(path: Path, found: Found) -> str | None:
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            found.problems.append(f"{path}: larger than {MAX_FILE_BYTES >> 20} MB, not read")
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        found.problems.append(f"{path}: {exc.strerror or exc}")
        return None


def _folders(parent: Path, found: Found) -> list[Path]:
    """The sub-folders of `parent`; none when it is missing (not this emulator), a problem when it is unreadable."""
    if not parent.is_dir():
        return []
    try:
        return sorted(p for p in parent.iterdir() if p.is_dir())[:MAX_INSTANCES]
    except OSError as exc:
        found.problems.append(f"{parent}: {exc.strerror or exc}")
        return []


def forwarded_port(text: str) -> int | None:
    """The host port forwarded to guest port 5555 in a VirtualBox-style machine file (.vbox, .nemu, .memu)."""
    match = _FORWARDING.search(text)
    return int(match.group(1)) if match else None


def _quoted(path: Path) -> str:
    return f'"{path}"'


def mumu_manager(root: Path) -> Path:
    """MuMuManager.exe of a MuMu 12 install: ``nx_main`` from 5.x on (MuMu 6 too), ``shell`` before. Sources: ALAS
    emulator_windows.py (``MuMuNxMain.exe`` -> ``MuMuManager.exe`` beside it, "MuMuPlayer12 5.0"); MaaFramework
    AdbDeviceWin32Finder.cpp ("MuMuPlayer v5+": nx_device/12.0/shell/MuMuNxDevice.exe, adb and MuMuManager in
    ../../../nx_main; "MuMuPlayer v4": shell/MuMuPlayer.exe)."""
    newer = root / "nx_main" / "MuMuManager.exe"
    return newer if newer.is_file() or (root / "nx_main").is_dir() else root / "shell" / "MuMuManager.exe"


def parse_mumu_manager(info: str, adb: str = "") -> dict[int, tuple[str, str, int]]:
    """Instance index -> (name, adb host, adb port) from ``MuMuManager info --vmindex all`` and, where info gives no
    address (MuMu 6: MaaFramework #1395), ``MuMuManager adb --vmindex all`` ({"adb_host", "adb_port"}, one object or
    one per index). Source: MaaFramework AdbDeviceWin32Finder.cpp find_mumu_devices (the same fields and fallbacks);
    text that is no JSON gives nothing."""
    import json

    def load(text: str) -> dict:
        try:
            data = json.loads(text) if text.strip() else {}
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    infos, adbs = load(info), load(adb)
    if "index" in infos:  # one instance: the object itself
        infos = {str(infos["index"]): infos}
    found: dict[int, tuple[str, str, int]] = {}
    for key, entry in infos.items():
        if not isinstance(entry, dict) or not str(entry.get("index", key)).isdigit():
            continue
        index = int(entry.get("index", key))
        host, port = entry.get("adb_host_ip"), entry.get("adb_port")
        if not host or not port:
            other = adbs if "adb_port" in adbs else adbs.get(str(index), {})
            host, port = (other.get("adb_host"), other.get("adb_port")) if isinstance(other, dict) else (None, None)
        if host and str(port).isdigit() and int(port) > 0:
            found[index] = (str(entry.get("name") or index), str(host), int(port))
    return found


def _mumu_manager_ports(manager: Path, found: Found) -> dict[int, tuple[str, str, int]]:
    """What MuMuManager says of every instance (Windows only, each call bounded)."""
    if sys.platform != "win32" or not manager.is_file():
        return {}
    import subprocess

    def run(*args: str) -> str:
        try:
            done = subprocess.run([str(manager), *args], capture_output=True, timeout=3.0)
        except (OSError, subprocess.SubprocessError) as exc:
            found.problems.append(f"{manager} {' '.join(args)}: {exc}")
            return ""
        return done.stdout.decode("utf-8", errors="replace")

    info = run("info", "--vmindex", "all")
    known = parse_mumu_manager(info)
    if info and len(known) < info.count('"index"'):
        known = parse_mumu_manager(info, run("adb", "--vmindex", "all"))
    return known


def read_mumu12(root: Path) -> Found:
    """MuMu 12 (4.x, 5.x, MuMu 6) and MuMu X: ``vms/<name>/*.nemu`` (the files right in the instance's folder, as
    ALAS lists them) forwards a host port to 5555; an instance whose file has no forwarding record (MuMu 12 v4.0.4's
    default one) is on 16384 + 32 n; on Windows, MuMuManager's own answer (the live port) wins. Source: ALAS
    emulator_windows.py iter_instances (MuMuPlayer12 branch: iter_folder(folder, ext='.nemu'), then the v4.0.4 fix)
    and emulator_base.py MuMuPlayer12_id; MaaFramework AdbDeviceWin32Finder.cpp find_mumu_devices."""
    found = Found()
    manager = mumu_manager(root)
    live = _mumu_manager_ports(manager, found)
    for folder in _folders(root / "vms", found):
        port = None
        for nemu in sorted(folder.glob("*.nemu")):
            text = _read(nemu, found)
            port = forwarded_port(text) if text else None
            if port:
                source = nemu
                break
        match = _MUMU_ID.search(folder.name)
        if port is None and match:
            port, source = 16384 + 32 * int(match.group(1)), folder
        if match and int(match.group(1)) in live and live[int(match.group(1))][1].startswith("127."):
            port, source = live[int(match.group(1))][2], manager
        if port is None:
            continue
        # platform_windows.py _emulator_start/_emulator_stop: MuMuManager.exe api -v N shutdown_player/launch_player
        restart = (f"{_quoted(manager)} api -v {match.group(1)} shutdown_player",
                   f"{_quoted(manager)} api -v {match.group(1)} launch_player") if match else ()
        found.instances.append(Instance("MuMu 12", folder.name, port, str(source), restart))
    return found


def read_ldplayer(root: Path) -> Found:
    """LDPlayer: ``vms/leidianN`` is instance N on 127.0.0.1:5555 + 2N (the same device as emulator-5554 + 2N); the
    machine files hold no forwarding record. Source: ALAS emulator_windows.py iter_instances (LDPlayerFamily)."""
    found = Found()
    console = root / "ldconsole.exe"
    titles = _ldconsole_titles(console, found)
    for folder in _folders(root / "vms", found):
        match = re.fullmatch(r"leidian(\d+)", folder.name)
        if match:
            n = int(match.group(1))
            # platform_windows.py: ldconsole.exe quit --index N / launch --index N
            restart = (f"{_quoted(console)} quit --index {n}", f"{_quoted(console)} launch --index {n}")
            found.instances.append(Instance("LDPlayer", titles.get(n, folder.name), 5555 + 2 * n, str(folder),
                                            restart))
    return found


def _ldconsole_titles(console: Path, found: Found) -> dict[int, str]:
    """The instances' titles from ``ldconsole list2`` (Windows only, bounded; GBK as MaaFramework decodes it)."""
    if sys.platform != "win32" or not console.is_file():
        return {}
    import subprocess

    try:
        out = subprocess.run([str(console), "list2"], capture_output=True, timeout=3.0).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        found.problems.append(f"{console} list2: {exc}")
        return {}
    return parse_ldconsole_list2(out.decode("gbk", errors="replace"))


def parse_ldconsole_list2(text: str) -> dict[int, str]:
    """Instance index -> title from ``ldconsole list2`` (index,title,top window,bound window,in android,pid,vbox pid).
    Source: MaaFramework AdbDeviceWin32Finder.cpp find_ld_devices (which reads the same seven fields)."""
    names: dict[int, str] = {}
    for line in text.replace("\r", "").splitlines():
        fields = line.strip().split(",")
        if len(fields) >= 7 and fields[0].isdigit():
            names[int(fields[0])] = fields[1]
    return names


def read_bluestacks5(root: Path) -> Found:
    """BlueStacks 5 (also Hyper-V builds): ``bluestacks.conf`` in its data folder (UserDefinedDir) holds
    ``bst.instance.<Name>.status.adb_port``, rewritten at every launch; a Hyper-V instance (Nougat64, Pie64, Rvc64,
    clones with _N) is also reachable as ALAS's ``bluestacks5-hyperv[-N]`` (bluestacks_hyperv_port). Source: ALAS
    emulator_windows.py iter_instances (BlueStacks5), connection_attr.py find_bluestacks5_hyperv."""
    found = Found()
    conf = root / "bluestacks.conf"
    if not conf.is_file():
        return found
    text = _read(conf, found)
    for name, port in _BLUESTACKS_PORT.findall(text or ""):
        # platform_windows.py _emulator_start: HD-Player.exe --instance NAME (BlueStacks has no stop command)
        found.instances.append(Instance("BlueStacks 5", name, int(port), str(conf),
                                        (f'"HD-Player.exe" --instance {name}',)))
    return found


BLUESTACKS_HYPERV = re.compile(r"bluestacks5-hyperv(?:-(\d+))?$")
"""ALAS's names for BlueStacks 5 Hyper-V instances, whose port changes at every launch (connection_attr.py)."""


def bluestacks_hyperv_port(serial: str, conf: str) -> int | None:
    """The port of an ALAS-style Hyper-V serial (``bluestacks5-hyperv``, ``bluestacks5-hyperv-1``) in
    bluestacks.conf's text: ``bst.instance.(Nougat64|Pie64|Rvc64)[_N].status.adb_port``. Source: ALAS
    module/device/connection_attr.py find_bluestacks5_hyperv."""
    match = BLUESTACKS_HYPERV.match(serial)
    if match is None:
        return None
    suffix = f"_{match.group(1)}" if match.group(1) else ""
    found = re.search(rf'bst\.instance\.(?:Nougat64|Pie64|Rvc64){suffix}\.status\.adb_port="(\d+)"', conf)
    return int(found.group(1)) if found else None


def bluestacks_data_folders() -> list[Path]:
    """BlueStacks 5's data folders as its registry names them (UserDefinedDir of HKLM/SOFTWARE/BlueStacks_nxt and
    _nxt_cn; Windows only). Source: ALAS emulator_windows.py iter_instances (BlueStacks5) and connection_attr.py."""
    if sys.platform != "win32":
        return []
    import winreg  # noqa: PLC0415 - Windows only

    folders = []
    for key in (r"SOFTWARE\BlueStacks_nxt", r"SOFTWARE\BlueStacks_nxt_cn"):
        try:
            with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, key) as reg:
                folders.append(Path(winreg.QueryValueEx(reg, "UserDefinedDir")[0]))
        except OSError:
            continue
    return folders


LDPLAYER_KEYS = (r"SOFTWARE\leidian\ldplayer", r"SOFTWARE\leidian\ldplayer9", r"SOFTWARE\leidian\ldplayer14")
"""The registry keys whose ``InstallDir`` names an LDPlayer install (3/4, 9, 14), as ALAS reads them."""


def ldplayer_install_folders() -> list[Path]:
    """LDPlayer's install folders as its registry names them (``InstallDir`` of each of LDPLAYER_KEYS, the user's
    hive first, then the machine's; Windows only), for an install outside the standard folders (another drive).
    Source: ALAS emulator_windows.py EmulatorManager.all_emulators ("LDPlayer install path") and
    get_install_dir_from_reg."""
    if sys.platform != "win32":
        return []
    import winreg  # noqa: PLC0415 - Windows only

    folders = []
    for key in LDPLAYER_KEYS:
        for hive in (winreg.HKEY_CURRENT_USER, winreg.HKEY_LOCAL_MACHINE):
            try:
                with winreg.OpenKey(hive, key) as reg:
                    folders.append(Path(winreg.QueryValueEx(reg, "InstallDir")[0]))
                    break
            except OSError:
                continue
    return folders


def _vbox_family(emulator: str, vms: Path, ext: str, restart: Callable[[str], tuple[str, ...]]) -> Found:
    found = Found()
    for folder in _folders(vms, found):
        for machine in sorted(folder.glob(f"*{ext}")):
            text = _read(machine, found)
            port = forwarded_port(text) if text else None
            if port:
                found.instances.append(Instance(emulator, folder.name, port, str(machine), restart(folder.name)))
                break
    return found


def read_nox(root: Path) -> Found:
    """Nox: ``BignoxVMS/<name>/<name>.vbox`` forwards a host port (62001 first, 62025 + n after) to 5555.
    Source: ALAS emulator_windows.py iter_instances (NoxPlayerFamily) and vbox_file_to_serial."""
    vms = root / "BignoxVMS" if (root / "BignoxVMS").is_dir() else root / "bin" / "BignoxVMS"
    nox = vms.parent / "Nox.exe"
    # platform_windows.py: Nox.exe -clone:NAME -quit, then Nox.exe -clone:NAME
    return _vbox_family("Nox", vms, ".vbox",
                        lambda name: (f"{_quoted(nox)} -clone:{name} -quit", f"{_quoted(nox)} -clone:{name}"))


def read_memu(root: Path) -> Found:
    """MEmu: ``MemuHyperv VMs/<name>/<name>.memu`` forwards a host port (21503 first, + 10 each) to 5555.
    Source: ALAS emulator_windows.py iter_instances (MEmuPlayer)."""
    memuc = root / "memuc.exe"
    # platform_windows.py: memuc.exe stop -n NAME, memuc.exe start -n NAME
    return _vbox_family("MEmu", root / "MemuHyperv VMs", ".memu",
                        lambda name: (f"{_quoted(memuc)} stop -n {name}", f"{_quoted(memuc)} start -n {name}"))


@dataclass(frozen=True)
class Emulator:
    name: str
    read: Callable[[Path], Found]
    folders: tuple[str, ...]
    """Standard install (or data) folders on Windows; environment variables are expanded."""
    ports: tuple[int, ...]
    """Default ADB ports of its first instances, probed on 127.0.0.1."""
    looks_for: str
    """What the reader reads, for the README and for `devices` when nothing was found."""


EMULATORS: tuple[Emulator, ...] = (
    Emulator("MuMu 12", read_mumu12,
             (r"%ProgramFiles%\Netease\MuMuPlayer-12.0", r"%ProgramFiles%\Netease\MuMuPlayerGlobal-12.0",
              r"%ProgramFiles%\Netease\MuMu Player 12", r"%ProgramFiles%\Netease\MuMuPlayer"),
             tuple(16384 + 32 * n for n in range(8)) + (7555,), r"vms\<name>\*.nemu (hostport of guest 5555)"),
    Emulator("LDPlayer", read_ldplayer,
             (r"C:\LDPlayer\LDPlayer9", r"C:\leidian\LDPlayer9", r"%ProgramFiles%\leidian\LDPlayer9",
              r"C:\LDPlayer\LDPlayer4.0"),
             tuple(5555 + 2 * n for n in range(8)), r"vms\leidianN (127.0.0.1:5555+2N)"),
    Emulator("BlueStacks 5", read_bluestacks5,
             (r"%ProgramData%\BlueStacks_nxt", r"%ProgramData%\BlueStacks_nxt_cn"),
             (5555, 5565, 5575, 5585), r"bluestacks.conf (bst.instance.<Name>.status.adb_port)"),
    Emulator("Nox", read_nox, (r"%ProgramFiles(x86)%\Nox\bin", r"%ProgramFiles%\Nox\bin"),
             (62001, 62025, 62026, 59865), r"BignoxVMS\<name>\<name>.vbox (hostport of guest 5555)"),
    Emulator("MEmu", read_memu, (r"%ProgramFiles%\Microvirt\MEmu", r"D:\Program Files\Microvirt\MEmu"),
             tuple(21503 + 10 * n for n in range(8)), r"MemuHyperv VMs\<name>\<name>.memu (hostport of guest 5555)"),
)
"""Every emulator whose instance files the engine reads, in the order rows are listed."""

EMULATOR_PATHS_ENV = "ENGINE_EMULATOR_PATHS"
"""Extra install folders (os.pathsep-separated), read by every reader, as --emulator-path does."""


def standard_folders() -> list[tuple[Emulator, Path]]:
    """(emulator, folder) for each standard install folder of this system that exists (none off Windows)."""
    if sys.platform != "win32":
        return []
    pairs = []
    for emulator in EMULATORS:
        for folder in emulator.folders:
            path = Path(os.path.expandvars(folder))
            if "%" not in str(path) and path.is_dir():
                pairs.append((emulator, path))
        moved = {read_bluestacks5: bluestacks_data_folders, read_ldplayer: ldplayer_install_folders}.get(emulator.read)
        if moved is not None:  # a folder elsewhere (another drive), as the emulator's registry keys say
            pairs += [(emulator, p) for p in moved() if p.is_dir() and (emulator, p) not in pairs]
    return pairs


def read_install(folder: Path, emulator: Emulator | None = None) -> Found:
    """The instances in one install folder; with no `emulator`, every reader tries it (a path the user gave)."""
    found = Found()
    if not folder.is_dir():
        found.problems.append(f"{folder}: not a folder")
        return found
    for each in (emulator,) if emulator else EMULATORS:
        part = each.read(folder)
        found.instances += part.instances
        found.problems += part.problems
    if emulator is None and not found.instances and not found.problems:
        found.problems.append(f"{folder}: no emulator instance files here (looked for "
                              + "; ".join(e.looks_for for e in EMULATORS) + ")")
    return found


def emulator_of_port(port: int) -> str | None:
    """The emulator whose default ports include `port` (a probe hit with no instance file names its maker)."""
    if 16384 <= port <= 17408 or port == 7555:
        return "MuMu 12"
    for emulator in EMULATORS:
        if port in emulator.ports:
            return emulator.name
    return None
