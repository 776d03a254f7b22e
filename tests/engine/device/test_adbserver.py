"""One ADB server, no fights: what holds the port, version against the engine's adb, and only owned servers die."""

from __future__ import annotations

import argparse
import shutil
import socket
import time

import pytest

import engine.sim.adb_protocol as adb_protocol
from engine.core.errors import ConfigError
from engine.device import adbserver
from engine.faces.pick import resolve_serial
from engine.sim.adb_server import FakeAdbServer
from engine.sim.game import SimGame

REAL_ADB = shutil.which("adb")


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGINE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ENGINE_ADB_TAKEOVER", raising=False)
    return tmp_path / "home"


def test_what_holds_the_port(tiny_graph, dead_port, closing_server):
    with FakeAdbServer(SimGame(tiny_graph, seed=0)) as server:
        assert adbserver.probe_server("127.0.0.1", server.port) == ("adb", adb_protocol.ADB_VERSION)
    assert adbserver.probe_server("127.0.0.1", dead_port) == ("none", None)
    assert adbserver.probe_server("127.0.0.1", closing_server.port) == ("other", None)


@pytest.mark.skipif(REAL_ADB is None, reason="Debian's adb is not installed")
def test_a_version_mismatch_names_both_versions_and_the_fix(tiny_graph, monkeypatch, home):
    monkeypatch.setenv("ENGINE_ADB", REAL_ADB)
    mine = adbserver.binary_version(REAL_ADB)
    assert mine  # 41 for Debian's 1.0.41
    # The fake server stands for an emulator's older bundled adb server.
    monkeypatch.setattr(adb_protocol, "ADB_VERSION", mine - 1)
    with FakeAdbServer(SimGame(tiny_graph, seed=0)) as server:
        found = adbserver.check(port=server.port)
        assert found.server_version == mine - 1 and found.binary_version == mine
        assert f"1.0.{mine - 1}" in found.problem and f"1.0.{mine}" in found.problem
        assert "ENGINE_ADB" in found.fix and "ENGINE_ADB_TAKEOVER" in found.fix
        assert not adbserver.kill(port=server.port)  # not the engine's: never stopped
        assert adbserver.probe_server("127.0.0.1", server.port)[0] == "adb"


def test_a_port_held_by_something_else_is_a_clear_error(closing_server, monkeypatch, home):
    found = adbserver.check(port=closing_server.port)
    assert found.listening == "other" and f"port {closing_server.port}" in found.problem
    args = argparse.Namespace(serial="phone-1", adb_host=None, adb_port=closing_server.port, scenario=None, seed=None)
    with pytest.raises(ConfigError, match=f"port {closing_server.port} .* not an ADB server"):
        resolve_serial(args)


@pytest.mark.skipif(REAL_ADB is None, reason="Debian's adb is not installed")
def test_the_engine_stops_only_the_server_it_started(home, dead_port, monkeypatch):
    monkeypatch.setenv("ENGINE_ADB", REAL_ADB)
    port = dead_port
    try:
        version = adbserver.start(port=port)
        assert version == adbserver.binary_version(REAL_ADB)
        assert adbserver.is_owned(port) and adbserver.check(port=port).owned
        assert adbserver.kill(port=port)
        end = time.monotonic() + 10
        while adbserver.probe_server("127.0.0.1", port)[0] != "none" and time.monotonic() < end:
            time.sleep(0.1)
        assert adbserver.probe_server("127.0.0.1", port)[0] == "none"
        assert not adbserver.is_owned(port)
    finally:
        adbserver.kill(port=port, force=True)


def test_takeover_is_the_users_choice(tiny_graph, home, monkeypatch):
    with FakeAdbServer(SimGame(tiny_graph, seed=0)) as server:
        assert not adbserver.kill(port=server.port)
        monkeypatch.setenv("ENGINE_ADB_TAKEOVER", "1")
        assert adbserver.kill(port=server.port)
        assert any(r == "host:kill" for r in server.requests)


def test_no_server_is_started_for_a_port_someone_else_holds(closing_server, home):
    from engine.core.errors import AdbServerDown

    with pytest.raises(AdbServerDown, match=f"port {closing_server.port}"):
        adbserver.start(port=closing_server.port, binary="/bin/false")
    with socket.socket() as s:
        s.settimeout(1)
        s.connect(("127.0.0.1", closing_server.port))


@pytest.mark.skipif(REAL_ADB is None, reason="Debian's adb is not installed")
def test_a_device_named_with_no_server_running_gets_the_engines_own(home, dead_port, monkeypatch, capsys):
    monkeypatch.setenv("ENGINE_ADB", REAL_ADB)
    args = argparse.Namespace(serial="127.0.0.1:5999", adb_host=None, adb_port=dead_port, scenario=None, seed=None)
    try:
        resolve_serial(args)
        assert "started an ADB server" in capsys.readouterr().err
        assert adbserver.probe_server("127.0.0.1", dead_port)[0] == "adb" and adbserver.is_owned(dead_port)
    finally:
        adbserver.kill(port=dead_port, force=True)
    end = time.monotonic() + 10
    while adbserver.probe_server("127.0.0.1", dead_port)[0] != "none" and time.monotonic() < end:
        time.sleep(0.1)
    assert adbserver.probe_server("127.0.0.1", dead_port)[0] == "none"


def test_no_adb_binary_is_a_message_not_a_crash(home, dead_port, monkeypatch, capsys):
    monkeypatch.setenv("ENGINE_ADB", "/bin/false")
    args = argparse.Namespace(serial="phone-9", adb_host=None, adb_port=dead_port, scenario=None, seed=None)
    resolve_serial(args)
    assert args.serial == "phone-9" and "none could be started" in capsys.readouterr().err
