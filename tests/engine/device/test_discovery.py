"""Discovery: each emulator's instance files, the ADB server's list, the port probe, one row per device, auto."""

from __future__ import annotations

import argparse
import socket
import struct
import threading
import time

import pytest

from engine.core.errors import ConfigError
from engine.device import discovery
from engine.device.emulators import read_install
from engine.faces.pick import resolve_serial
from engine.sim.adb_server import FakeAdbServer
from engine.sim.game import SimGame
from tests.engine.device import emulator_installs as installs
from tests.speed import within
from tests.ports import free_ports

A_CNXN = 0x4E584E43


class AdbdStub:
    """Answers adb's CNXN with a CNXN, as adbd does (AOSP protocol.txt: CONNECT(version, maxdata, "device::"));
    enough for the probe, which only asks whether adbd is there. `speak=False` answers HTTP instead."""

    def __init__(self, port: int = 0, speak: bool = True) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(8)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.speak = speak
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1.0)
                try:
                    conn.recv(64)
                    if self.speak:
                        data = b"device::ro.product.model=stub;\x00"
                        conn.sendall(struct.pack("<6I", A_CNXN, 0x01000001, 4096, len(data), sum(data),
                                                 A_CNXN ^ 0xFFFFFFFF) + data)
                    else:
                        conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")
                except OSError:
                    pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def no_env(monkeypatch, dead_port):
    """No ENGINE_SERIAL, no emulator paths, no probes unless a test asks, and no ADB server."""
    for name in ("ENGINE_SERIAL", "ENGINE_EMULATOR_PATHS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ENGINE_DISCOVERY_PORTS", "")
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(dead_port))
    return dead_port


# ------------------------------------------------------------------------------------------- instance files


def test_every_emulator_instance_is_found_with_its_name(tmp_path):
    mumu = installs.mumu12(tmp_path / "MuMuPlayer-12.0", {"MuMuPlayer-12.0-0": 16384, "MuMuPlayer-12.0-2": None})
    ld = installs.ldplayer(tmp_path / "LDPlayer9", 2)
    bst = installs.bluestacks5(tmp_path / "BlueStacks_nxt", {"Pie64": 5555, "Pie64_1": 5565})
    nox = installs.nox(tmp_path / "Nox" / "bin", {"nox": 62001, "Nox_1": 62025})
    memu = installs.memu(tmp_path / "MEmu", {"MEmu": 21503, "MEmu_1": 21513})
    got = {}
    for folder in (mumu, ld, bst, nox, memu):
        found = read_install(folder)
        assert found.problems == []
        got.update({(i.emulator, i.name): i.port for i in found.instances})
    assert got == {
        ("MuMu 12", "MuMuPlayer-12.0-0"): 16384, ("MuMu 12", "MuMuPlayer-12.0-2"): 16384 + 64,
        ("LDPlayer", "leidian0"): 5555, ("LDPlayer", "leidian1"): 5557,
        ("BlueStacks 5", "Pie64"): 5555, ("BlueStacks 5", "Pie64_1"): 5565,
        ("Nox", "nox"): 62001, ("Nox", "Nox_1"): 62025,
        ("MEmu", "MEmu"): 21503, ("MEmu", "MEmu_1"): 21513,
    }
    restart = read_install(ld).instances[1].restart
    assert restart[0].endswith("quit --index 1") and restart[1].endswith("launch --index 1")


def test_a_folder_with_no_instance_files_is_reported(tmp_path):
    found = read_install(tmp_path)
    assert not found.instances and "no emulator instance files" in found.problems[0]
    assert "not a folder" in read_install(tmp_path / "missing").problems[0]


def test_ldconsole_list2_names_instances():
    from engine.device.emulators import parse_ldconsole_list2

    # The output MaaFramework quotes in AdbDeviceWin32Finder.cpp find_ld_devices (CRLF as Windows prints it).
    text = "0,雷电模拟器,2032678,1704928,1,7456,3500\r\n1,雷电模拟器-1,852422,590830,1,3772,3180\r\n"
    assert parse_ldconsole_list2(text) == {0: "雷电模拟器", 1: "雷电模拟器-1"}


# ------------------------------------------------------------------------------------------- the scan


def test_scan_merges_server_files_and_probes_one_row_per_device(tmp_path, no_env, tiny_graph):
    stub, stranger = AdbdStub(), AdbdStub(speak=False)
    game = SimGame(tiny_graph, seed=0)
    # adb lists a local emulator both as emulator-5554 and, once connected, as 127.0.0.1:5555: one device.
    with FakeAdbServer({"emulator-5554": game, "127.0.0.1:5555": game, "phone-1": game}) as server:
        ld = installs.ldplayer(tmp_path / "LDPlayer9", 1)
        nox = installs.nox(tmp_path / "Nox" / "bin", {"Nox_1": stub.port})
        try:
            found = discovery.scan(adb_port=server.port, emulator_paths=[ld, nox],
                                   ports=[stub.port, stranger.port], package="com.example.game")
        finally:
            stub.stop()
            stranger.stop()
    rows = {row.serial: row for row in found.rows}
    assert set(rows) == {"127.0.0.1:5555", "phone-1", f"127.0.0.1:{stub.port}", f"127.0.0.1:{stranger.port}"}
    pair = rows["127.0.0.1:5555"]  # both names work: host:port is kept (adb connect can bring it back)
    assert (pair.emulator, pair.instance, pair.aliases, pair.state) == ("LDPlayer", "leidian0", ["emulator-5554"],
                                                                       "device")
    assert pair.resolution == "1280x720" and pair.package is None
    nox_row = rows[f"127.0.0.1:{stub.port}"]
    assert (nox_row.emulator, nox_row.instance, nox_row.state) == ("Nox", "Nox_1", "not connected")
    assert "port probe" in nox_row.found_by and nox_row.restart
    assert rows[f"127.0.0.1:{stranger.port}"].state == "not adb"
    assert {r.serial for r in found.usable} == {"127.0.0.1:5555", "phone-1", f"127.0.0.1:{stub.port}"}
    assert found.server["running"] and found.problems == []


def test_linux_containers_are_told_apart_by_getprop_and_the_games_package_is_shown(no_env, tiny_graph):
    from engine.sim.shell import app_names

    package, _ = app_names(tiny_graph)
    games = {serial: SimGame(tiny_graph, seed=0) for serial in ("127.0.0.1:5600", "192.168.240.112:5555",
                                                                 "127.0.0.1:6555", "phone-1")}
    with FakeAdbServer(games) as server:
        # ro.product.model as each reports it: redroid's image names, waydroid's, Genymotion's VirtualBox build
        models = {"127.0.0.1:5600": "redroid13_x86_64", "192.168.240.112:5555": "WayDroid x86_64 Device",
                  "127.0.0.1:6555": "Genymotion vbox86p", "phone-1": "Pixel 7"}
        for serial, model in models.items():
            server.devices[serial].props["ro.product.model"] = model
        found = discovery.scan(adb_port=server.port, ports=[], package=package)
        missing = discovery.scan(adb_port=server.port, ports=[], package="com.example.absent")
    kinds = {row.serial: row.emulator for row in found.rows}
    assert kinds == {"127.0.0.1:5600": "redroid", "192.168.240.112:5555": "waydroid",
                     "127.0.0.1:6555": "Genymotion", "phone-1": None}
    assert {row.package for row in found.rows} == {package}
    assert {row.package for row in missing.rows} == {None}


def test_a_mumu_port_that_moved_by_two_is_followed(tmp_path, no_env):
    low, _, high = sorted(free_ports(3))
    stub = AdbdStub(port=high)
    try:
        mumu = installs.mumu12(tmp_path / "MuMuPlayer-12.0", {"MuMuPlayer-12.0-0": high - 2})
        found = discovery.scan(emulator_paths=[mumu], ports=[])
        assert discovery.follow_mumu(f"127.0.0.1:{high - 2}", discovery.speaks_adb) == f"127.0.0.1:{high - 2}"
    finally:
        stub.stop()
    (row,) = found.rows
    assert row.serial == f"127.0.0.1:{high}" and row.instance == "MuMuPlayer-12.0-0"
    assert row.note == f"port moved from {high - 2} to {high}"
    # follow_mumu applies to MuMu's own port range only: the probe is faked for 16384 -> 16386
    assert discovery.follow_mumu("127.0.0.1:16384", lambda p: p == 16386) == "127.0.0.1:16386"
    assert discovery.follow_mumu("127.0.0.1:16384", lambda p: p in (16385, 16386)) == "127.0.0.1:16384"


def test_the_scan_starts_no_adb_server_and_says_what_it_could_not_read(tmp_path, no_env):
    found = discovery.scan(emulator_paths=[tmp_path / "nowhere"], ports=[])
    assert found.rows == []
    assert any("no ADB server" in p for p in found.problems)
    assert any("not a folder" in p for p in found.problems)
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", no_env), timeout=0.5).close()


def test_a_hung_adb_server_keeps_the_scan_inside_its_bound(no_env, hung_server):
    start = time.monotonic()
    found = discovery.scan(adb_port=hung_server.port, ports=[], bound=1.0)
    elapsed = time.monotonic() - start
    print(f"scan against a hung server: {elapsed * 1000:.0f} ms")
    within(elapsed, 3.0, "scan against a hung adb server, wall (s)")  # bound 1 s, 3x headroom
    assert any("did not answer" in p for p in found.problems)
    assert "did not answer" in found.server["down"] and found.server["running"] is None
    found = discovery.scan(adb_port=hung_server.port, ports=[])  # its own bound: the server waited for as health does
    assert found.server["down"].startswith(f"dead ADB server at 127.0.0.1:{hung_server.port}: it accepts")  # which


# ------------------------------------------------------------------------------------------- --serial auto


def _args(**kw) -> argparse.Namespace:
    return argparse.Namespace(**{"serial": "auto", "adb_host": None, "adb_port": None, "scenario": None,
                                 "seed": None, "emulator_path": None, **kw})


def test_auto_takes_the_only_device_refuses_several_and_falls_back_to_the_simulator(no_env, tiny_graph, capsys):
    args = _args()
    resolve_serial(args)
    assert args.serial is None and "built-in simulator" in capsys.readouterr().err
    game = SimGame(tiny_graph, seed=0)
    with FakeAdbServer({"emulator-5554": game, "127.0.0.1:5555": game}) as server:
        args = _args(adb_port=server.port)
        resolve_serial(args)
        assert args.serial == "127.0.0.1:5555" and "only device" in capsys.readouterr().err
        resolve_serial(args)  # idempotent
        assert args.serial == "127.0.0.1:5555"
    with FakeAdbServer({"emulator-5554": game, "emulator-5556": game}) as server:
        with pytest.raises(ConfigError, match=r"2 devices found: emulator-5554 .*emulator-5556.*--serial"):
            resolve_serial(_args(adb_port=server.port))
    args = _args(serial="sim")
    resolve_serial(args)
    assert args.serial is None
    args = _args(seed=3)  # simulator options ask for the simulator: no scan
    resolve_serial(args)
    assert args.serial is None


def test_the_devices_command_lists_instances_and_what_to_do(tmp_path, no_env, capsys):
    from engine.__main__ import build_parser

    memu = installs.memu(tmp_path / "MEmu", {"MEmu_1": 21513})
    args = build_parser().parse_args(["devices", "--emulator-path", str(memu), "--graph", str(tmp_path / "none")])
    assert args.handler(args) == 1  # nothing usable: the instance is not running
    out = capsys.readouterr().out
    assert "127.0.0.1:21513  not running  (MEmu 'MEmu_1')" in out
    assert "what to do: the instance is installed but its port does not answer" in out
    assert 'restart: "' in out and "memuc.exe\" start -n MEmu_1" in out
    assert "could not read: no ADB server" in out and "adb: no ADB server" in out
