"""Fake emulator install folders holding each emulator's instance files in their real formats.

Each builder names the peer code that reads the same files on users' machines: ALAS
module/device/platform/emulator_windows.py (Emulator.iter_instances, vbox_file_to_serial) and emulator_base.py.
The machine-file line is the one ALAS quotes in vbox_file_to_serial:
    <Forwarding name="port2" proto="1" hostip="127.0.0.1" hostport="62026" guestport="5555"/>
"""

from __future__ import annotations

from pathlib import Path

# A VirtualBox machine file as Nox, MEmu and MuMu write it, cut to the NAT forwarding rules (the adb rule forwards
# a host port to adbd's guest port 5555; the other rule is one more forwarding the reader must skip).
_MACHINE = """<?xml version="1.0"?>
<VirtualBox xmlns="http://www.virtualbox.org/" version="1.12-windows">
  <Machine uuid="{{0b1a2c3d-0000-4000-8000-000000000000}}" name="{name}" OSType="Linux26_64">
    <Hardware>
      <Network>
        <Adapter slot="0" enabled="true" type="82540EM">
          <NAT>
            <Forwarding name="port1" proto="1" hostip="127.0.0.1" hostport="{other}" guestport="5037"/>
            {adb}
          </NAT>
        </Adapter>
      </Network>
    </Hardware>
  </Machine>
</VirtualBox>
"""


def machine_file(path: Path, name: str, port: int | None) -> None:
    adb = f'<Forwarding name="port2" proto="1" hostip="127.0.0.1" hostport="{port}" guestport="5555"/>' if port else ""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_MACHINE.format(name=name, other=(port or 60000) + 1000, adb=adb), encoding="utf-8")


def mumu12(root: Path, ports: dict[str, int | None]) -> Path:
    """MuMuPlayer-12.0/vms/<name>/<name>.nemu, right in the instance's folder (ALAS iter_instances, MuMuPlayer12
    branch, lists that folder's .nemu files, not its sub-folders), beside the configs/ folder MuMu keeps there; a
    None port writes a file without the adb rule, as MuMu 12 v4.0.4's default instance has (ALAS then uses
    16384 + 32 n)."""
    for name, port in ports.items():
        machine_file(root / "vms" / name / f"{name}.nemu", name, port)
        (root / "vms" / name / "configs").mkdir(exist_ok=True)
    (root / "shell").mkdir(parents=True, exist_ok=True)
    return root


def ldplayer(root: Path, count: int) -> Path:
    """LDPlayer9/vms/leidianN folders (ALAS iter_instances, LDPlayerFamily: no forwarding in its files); plus the
    vms/config folder LDPlayer keeps beside them, which is no instance."""
    for n in range(count):
        (root / "vms" / f"leidian{n}").mkdir(parents=True, exist_ok=True)
    (root / "vms" / "config").mkdir(parents=True, exist_ok=True)
    return root


def bluestacks5(root: Path, ports: dict[str, int]) -> Path:
    """BlueStacks_nxt/bluestacks.conf with bst.instance.<Name>.status.adb_port (ALAS iter_instances, BlueStacks5)."""
    lines = ['bst.feature.rooting="0"', 'bst.installed_images="Pie64"']
    for name, port in ports.items():
        lines += [f'bst.instance.{name}.adb_port="{port}"', f'bst.instance.{name}.display_name="BlueStacks {name}"',
                  f'bst.instance.{name}.status.adb_port="{port}"']
    root.mkdir(parents=True, exist_ok=True)
    (root / "bluestacks.conf").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def nox(root: Path, ports: dict[str, int]) -> Path:
    """Nox/bin/BignoxVMS/<name>/<name>.vbox (ALAS iter_instances, NoxPlayerFamily)."""
    for name, port in ports.items():
        machine_file(root / "BignoxVMS" / name / f"{name}.vbox", name, port)
    return root


def memu(root: Path, ports: dict[str, int]) -> Path:
    """Microvirt/MEmu/MemuHyperv VMs/<name>/<name>.memu (ALAS iter_instances, MEmuPlayer)."""
    for name, port in ports.items():
        machine_file(root / "MemuHyperv VMs" / name / f"{name}.memu", name, port)
    return root


def mumu12_v5(root: Path, ports: dict[str, int | None]) -> Path:
    """MuMu 12 5.x and MuMu 6 (the same layout): MuMuManager.exe and adb.exe in nx_main, the player in
    nx_device/12.0/shell/MuMuNxDevice.exe, the instances in vms/ as before. Follows MaaFramework
    source/MaaToolkit/AdbDevice/AdbDeviceWin32Finder.cpp ("MuMuPlayer v5+": keyword MuMuNxDevice.exe, adb at
    ..\\..\\..\\nx_main\\adb.exe, MuMuManager.exe beside it) and ALAS emulator_windows.py ("MuMuPlayer12 5.0":
    MuMuNxMain.exe and MuMuManager.exe in one folder, vms one level up)."""
    mumu12(root, ports)
    for exe in ("nx_main/MuMuManager.exe", "nx_main/MuMuNxMain.exe", "nx_main/adb.exe",
                "nx_device/12.0/shell/MuMuNxDevice.exe"):
        (root / exe).parent.mkdir(parents=True, exist_ok=True)
        (root / exe).write_bytes(b"MZ")
    return root


# `MuMuManager info --vmindex all` and `MuMuManager adb --vmindex all` as MaaFramework's find_mumu_devices reads them
# (AdbDeviceWin32Finder.cpp, structs MumuInfo {index, name, adb_host_ip, adb_port} and MumuAdbInfo {adb_host,
# adb_port}): MuMu 12 4.x/5.x put the address in `info`; MuMu 6 leaves it out and answers `adb` (MaaFramework #1395).
MUMU_INFO_V5 = ('{"0": {"index": "0", "name": "MuMu", "adb_host_ip": "127.0.0.1", "adb_port": 16384}, '
                '"1": {"index": "1", "name": "Farm", "adb_host_ip": "127.0.0.1", "adb_port": 16416}}')
MUMU_INFO_V6 = '{"0": {"index": "0", "name": "MuMu"}, "1": {"index": "1", "name": "Farm"}}'
MUMU_ADB_V6 = ('{"0": {"adb_host": "127.0.0.1", "adb_port": 16384}, '
               '"1": {"adb_host": "127.0.0.1", "adb_port": 16418}}')
MUMU_INFO_V6_ONE = '{"index": "0", "name": "MuMu"}'
MUMU_ADB_V6_ONE = '{"adb_host": "127.0.0.1", "adb_port": 16384}'


def bluestacks5_hyperv(root: Path, ports: dict[str, int]) -> Path:
    """BlueStacks 5 Hyper-V's bluestacks.conf: instances named Nougat64, Pie64 or Rvc64, clones with _N, each
    port rewritten at launch. Follows ALAS module/device/connection_attr.py find_bluestacks5_hyperv (the names it
    matches for bluestacks5-hyperv and bluestacks5-hyperv-N) and emulator_windows.py iter_instances (BlueStacks5)."""
    return bluestacks5(root, ports)


class FakeWinreg:
    """The part of Python's ``winreg`` the readers use (OpenKey as a context manager, QueryValueEx, the two hives),
    over a dict {(hive, key): {value name: value}}; a key not in it raises FileNotFoundError as winreg does. The keys
    are the ones ALAS reads: SOFTWARE\\leidian\\ldplayer[9|14] InstallDir, user hive first (emulator_windows.py
    EmulatorManager.get_install_dir_from_reg), and SOFTWARE\\BlueStacks_nxt[_cn] UserDefinedDir in the machine hive
    (connection_attr.py find_bluestacks5_hyperv, emulator_windows.py iter_instances)."""

    HKEY_CURRENT_USER, HKEY_LOCAL_MACHINE = "HKCU", "HKLM"

    def __init__(self, keys: dict[tuple[str, str], dict[str, str]]) -> None:
        self.keys = keys

    def OpenKey(self, hive: str, key: str):  # noqa: N802 - winreg's own name
        import contextlib

        if (hive, key) not in self.keys:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        return contextlib.nullcontext(self.keys[(hive, key)])

    def QueryValueEx(self, reg: dict[str, str], name: str) -> tuple[str, int]:  # noqa: N802
        if name not in reg:
            raise FileNotFoundError(2, "The system cannot find the file specified")
        return reg[name], 1  # REG_SZ
