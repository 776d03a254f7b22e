"""Emulators as the newest ALAS and MaaFramework read them (issue 47 point 5): MuMu 12 5.x and MuMu 6 (nx_main's
MuMuManager, its `info`/`adb` JSON), LDPlayer 9, BlueStacks 5 with Hyper-V instances. Each fixture names the peer
file it follows (tests/engine/device/emulator_installs.py)."""

from __future__ import annotations

import argparse

from engine.device import discovery, emulators
from engine.faces.pick import resolve_serial
from tests.engine.device import emulator_installs as installs


def test_mumu12_v5_and_mumu6_layout_restarts_through_nx_main(tmp_path):
    root = installs.mumu12_v5(tmp_path / "MuMuPlayer-12.0", {"MuMuPlayer-12.0-0": None, "MuMuPlayer-12.0-1": 16416})
    found = emulators.read_mumu12(root)
    assert [(i.name, i.port) for i in found.instances] == [("MuMuPlayer-12.0-0", 16384), ("MuMuPlayer-12.0-1", 16416)]
    assert emulators.mumu_manager(root) == root / "nx_main" / "MuMuManager.exe"
    assert all("nx_main" in c and "MuMuManager.exe" in c for i in found.instances for c in i.restart)
    old = installs.mumu12(tmp_path / "old", {"MuMuPlayer-12.0-0": 16384})
    assert emulators.mumu_manager(old) == old / "shell" / "MuMuManager.exe"


def test_mumu_manager_json_of_v5_and_of_mumu6():
    want = {0: ("MuMu", "127.0.0.1", 16384), 1: ("Farm", "127.0.0.1", 16416)}
    assert emulators.parse_mumu_manager(installs.MUMU_INFO_V5) == want
    assert emulators.parse_mumu_manager(installs.MUMU_INFO_V6) == {}  # MuMu 6: info has no address ...
    assert emulators.parse_mumu_manager(installs.MUMU_INFO_V6, installs.MUMU_ADB_V6)[1] == ("Farm", "127.0.0.1",
                                                                                             16418)  # ... adb has
    assert emulators.parse_mumu_manager(installs.MUMU_INFO_V6_ONE, installs.MUMU_ADB_V6_ONE) == {
        0: ("MuMu", "127.0.0.1", 16384)}
    assert emulators.parse_mumu_manager("MuMuManager: not running", "") == {}


def test_ldplayer9_instances(tmp_path):
    found = emulators.read_ldplayer(installs.ldplayer(tmp_path / "LDPlayer9", 3))
    assert [i.port for i in found.instances] == [5555, 5557, 5559]


def test_bluestacks5_hyperv_instances_and_alas_names(tmp_path, monkeypatch):
    root = installs.bluestacks5_hyperv(tmp_path / "BlueStacks_nxt", {"Rvc64": 5555, "Rvc64_1": 5575, "Pie64_2": 5585})
    found = emulators.read_bluestacks5(root)
    assert {i.name: i.port for i in found.instances} == {"Rvc64": 5555, "Rvc64_1": 5575, "Pie64_2": 5585}
    conf = (root / "bluestacks.conf").read_text()
    assert emulators.bluestacks_hyperv_port("bluestacks5-hyperv", conf) == 5555
    assert emulators.bluestacks_hyperv_port("bluestacks5-hyperv-1", conf) == 5575
    assert emulators.bluestacks_hyperv_port("bluestacks5-hyperv-9", conf) is None
    assert emulators.bluestacks_hyperv_port("127.0.0.1:5555", conf) is None
    assert discovery.follow_bluestacks("bluestacks5-hyperv-2", [root]) == "127.0.0.1:5585"
    monkeypatch.setattr(discovery, "follow_mumu", lambda serial: serial)
    monkeypatch.setattr("engine.faces.pick._check_server", lambda args: None)
    args = argparse.Namespace(serial="bluestacks5-hyperv-1", emulator_path=[str(root)], adb_host=None, adb_port=None,
                              scenario=None, seed=None)
    resolve_serial(args)
    assert args.serial == "127.0.0.1:5575"


def test_ldplayer_and_bluestacks5_folders_elsewhere_are_found_through_their_registry_keys(tmp_path, monkeypatch):
    """An LDPlayer 9 on another drive and an LDPlayer 14 (ALAS added both keys' InstallDir, 960db91be), and a
    BlueStacks 5 data folder moved by its UserDefinedDir, are read as the standard folders are; the user's hive
    wins over the machine's for LDPlayer, as in ALAS get_install_dir_from_reg."""
    import sys

    ld9 = installs.ldplayer(tmp_path / "D" / "leidian" / "LDPlayer9", 2)
    ld14 = installs.ldplayer(tmp_path / "E" / "LDPlayer14", 1)
    bs = installs.bluestacks5_hyperv(tmp_path / "F" / "BlueStacks_nxt", {"Rvc64": 5555, "Rvc64_1": 5575})
    fake = installs.FakeWinreg({
        ("HKCU", r"SOFTWARE\leidian\ldplayer9"): {"InstallDir": str(ld9)},
        ("HKLM", r"SOFTWARE\leidian\ldplayer9"): {"InstallDir": str(tmp_path / "gone")},
        ("HKLM", r"SOFTWARE\leidian\ldplayer14"): {"InstallDir": str(ld14)},
        ("HKLM", r"SOFTWARE\BlueStacks_nxt"): {"UserDefinedDir": str(bs)},
    })
    monkeypatch.setitem(sys.modules, "winreg", fake)
    monkeypatch.setattr(emulators.sys, "platform", "win32")
    monkeypatch.setattr(emulators, "_ldconsole_titles", lambda console, found: {})  # no ldconsole.exe to run here
    assert emulators.ldplayer_install_folders() == [ld9, ld14]
    assert emulators.bluestacks_data_folders() == [bs]
    pairs = {(e.name, str(p)) for e, p in emulators.standard_folders()}
    assert {("LDPlayer", str(ld9)), ("LDPlayer", str(ld14)), ("BlueStacks 5", str(bs))} <= pairs
    ports = sorted((i.emulator, i.port) for i in discovery.installed().instances)
    assert ports == [("BlueStacks 5", 5555), ("BlueStacks 5", 5575), ("LDPlayer", 5555), ("LDPlayer", 5555),
                     ("LDPlayer", 5557)]
