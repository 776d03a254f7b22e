"""The simulator as an emulator (engine.sim.adbd): the device side of ADB, spoken to by a tiny client written here
from AOSP's adb/protocol.txt, then by Debian's real adb server, through which the engine drives the game."""

from __future__ import annotations

import os
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from engine.sim import SimGame
from engine.sim import adbd as adbd_module
from engine.sim.adbd import AdbdServer, notify_adb_server
from engine.sim.scenario import Scenario
from tests.speed import within
from tests.adbserver import ADB, AdbServer, listening
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[3]

# ---------------------------------------------------------------------------------- a client from protocol.txt

# protocol.txt: "struct message { command; arg0; arg1; data_length; data_crc32; magic = command ^ 0xffffffff }",
# six little-endian 32-bit words; the command constants are the ASCII names read as little-endian words
# (A_CNXN 0x4e584e43 is b"CNXN").
HEADER = struct.Struct("<6I")
CMD = {name: struct.unpack("<I", name.encode())[0] for name in ("CNXN", "OPEN", "OKAY", "WRTE", "CLSE", "AUTH")}
NAME = {value: name for name, value in CMD.items()}
V1, V2 = 0x01000000, 0x01000001  # A_VERSION_MIN; A_VERSION_SKIP_CHECKSUM (adb.h)


def message(name: str | int, arg0: int, arg1: int, data: bytes = b"", *, check: int | None = None,
            magic: int | None = None, length: int | None = None) -> bytes:
    command = CMD[name] if isinstance(name, str) else name
    return HEADER.pack(command, arg0, arg1, len(data) if length is None else length,
                       sum(data) if check is None else check,
                       command ^ 0xFFFFFFFF if magic is None else magic) + data


class Client:
    """An adb server's side of one transport, as little of it as a test needs."""

    def __init__(self, port: int, timeout: float = 5.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.version = V1

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self) -> tuple[str, int, int, bytes]:
        head = self._exact(HEADER.size)
        command, arg0, arg1, length, check, magic = HEADER.unpack(head)
        assert magic == command ^ 0xFFFFFFFF
        data = self._exact(length)
        if self.version < V2:
            assert check == sum(data) & 0xFFFFFFFF  # before A_VERSION_SKIP_CHECKSUM the checksum must be right
        return NAME.get(command, hex(command)), arg0, arg1, data

    def _exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        return data

    def connect(self, version: int = V2, maxdata: int = 1024 * 1024) -> str:
        self.send(message("CNXN", version, maxdata, b"host::features=shell_v2\0"))
        name, their_version, _, banner = self.recv()
        for _ in range(8):  # a stream of the session before may still close (CLSE) before the answer to a new CNXN
            if name == "CNXN":
                break
            name, their_version, _, banner = self.recv()
        assert name == "CNXN" and their_version == V2
        self.version = min(version, their_version)
        return banner.decode()

    def closed(self) -> bool:
        """The device closed the connection (EOF or reset) within the socket's timeout."""
        try:
            while self.sock.recv(65536):
                pass
        except ConnectionResetError:
            pass
        return True

    def run(self, destination: str, local_id: int = 7) -> tuple[bytes, int]:
        """OPEN a stream, READY each WRTE, until the device CLSEs it: (everything written, the device's id)."""
        self.send(message("OPEN", local_id, 0, destination.encode() + b"\0"))
        name, device_id, remote, _ = self.recv()
        assert (name, remote) == ("OKAY", local_id) and device_id != 0
        out = b""
        while True:
            name, arg0, arg1, data = self.recv()
            assert (arg0, arg1) == (device_id, local_id)  # ids are relative to the sender
            if name == "CLSE":
                return out, device_id
            assert name == "WRTE"
            out += data
            self.send(message("OKAY", local_id, device_id))

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def emulator(game: SimGame):
    with AdbdServer(game) as server:
        yield server


# ------------------------------------------------------------------------------------------- the protocol


@pytest.mark.parametrize("version", [V1, V2])
def test_handshake_answers_cnxn_with_banner_and_either_checksum_rule(emulator, version):
    client = Client(emulator.port)
    try:
        banner = client.connect(version)
        kind, _, props = banner.split(":", 2)
        assert kind == "device"
        fields = dict(field.split("=", 1) for field in props.split(";"))
        assert fields["ro.product.model"] == f"SimGame_{emulator.port}"
        assert "shell_v2" in fields["features"].split(",")
        out, _ = client.run("shell:getprop ro.serialno")
        assert out == f"sim-{emulator.port}\n".encode()
    finally:
        client.close()


def test_one_write_in_flight_and_a_screencap_in_maxdata_pieces(emulator, game):
    client = Client(emulator.port)
    try:
        client.connect(maxdata=4096)
        client.send(message("OPEN", 3, 0, b"exec:screencap -p\0"))
        name, device_id, _, _ = client.recv()
        assert name == "OKAY"
        name, _, _, first = client.recv()
        assert name == "WRTE" and len(first) <= 4096
        client.sock.settimeout(0.5)
        with pytest.raises(socket.timeout):  # no second WRTE before our READY (protocol.txt)
            client.recv()
        client.sock.settimeout(5)
        client.send(message("OKAY", 3, device_id))
        png = first
        while True:
            name, _, _, data = client.recv()
            if name == "CLSE":
                break
            assert len(data) <= 4096
            png += data
            client.send(message("OKAY", 3, device_id))
        frame = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
        assert np.array_equal(frame, game.frame())
    finally:
        client.close()


def test_shell_v2_carries_the_exit_code_and_input_taps(emulator, game):
    client = Client(emulator.port)
    try:
        client.connect()
        out, _ = client.run("shell,v2,raw:false")
        assert out[-6:] == b"\x03" + struct.pack("<I", 1) + b"\x01"  # shell_protocol.h: kIdExit, length 1, code
        client.run("shell,v2,raw:input tap 320 275", local_id=8)
        assert game.truth()["page"] == "page_main"
    finally:
        client.close()


def test_a_touch_agent_stream_stays_open_while_silent_and_talks_both_ways(emulator, game, monkeypatch):
    """maatouch runs in a shell whose stream is its protocol (engine.sim.touch): idle between taps, longer than
    any read bound, and answering `s TOKEN` once the taps before it are done."""
    monkeypatch.setattr(adbd_module, "RECV_TIMEOUT", 0.3)
    emulator.device.files["/data/local/tmp/maatouch"] = b"pushed"
    client = Client(emulator.port)
    try:
        client.connect()
        client.send(message("OPEN", 4, 0, b"shell:CLASSPATH=/data/local/tmp/maatouch app_process / "
                                          b"com.shxyke.MaaTouch.App\0"))
        name, device_id, _, _ = client.recv()
        assert name == "OKAY"
        name, _, _, header = client.recv()
        assert name == "WRTE" and header.startswith(b"^ 2 %d %d" % game.graph.resolution)
        client.send(message("OKAY", 4, device_id))
        client.sock.settimeout(1.0)
        with pytest.raises(socket.timeout):  # silent, and still open after three times the read bound
            client.recv()
        client.sock.settimeout(5)
        client.send(message("WRTE", 4, device_id, b"d 0 320 275 50\nc\nu 0\nc\ns 7\n"))
        # The ack of our write and the agent's answer travel on two paths (adbd's stream and the agent's output),
        # so either may come first, as with a real adbd.
        answers = sorted([client.recv(), client.recv()], key=lambda m: m[0])
        assert answers[0][:3] == ("OKAY", device_id, 4)
        assert answers[1] == ("WRTE", device_id, 4, b"7\n")
        assert game.truth()["page"] == "page_main"
        client.send(message("CLSE", 4, device_id))
        assert client.run("shell:echo after", local_id=5)[0] == b"after\n"
    finally:
        client.close()


def test_a_second_cnxn_starts_the_transport_over(emulator):
    client = Client(emulator.port)
    try:
        client.connect()
        client.send(message("OPEN", 4, 0, b"shell,v2,raw:echo left open\0"))
        assert client.recv()[0] == "OKAY"
        assert client.recv()[0] == "WRTE"  # not acknowledged: the stream waits for our READY
        assert client.connect().startswith("device::")  # adb.cpp: offline, then online again
        assert client.run("shell:echo new session", local_id=5)[0] == b"new session\n"
    finally:
        client.close()


def test_old_version_checks_the_checksum_new_version_does_not(emulator):
    old = Client(emulator.port)
    try:
        old.connect(V1)
        old.send(message("OPEN", 1, 0, b"shell:echo x\0", check=12345))
        assert old.closed()
    finally:
        old.close()
    new = Client(emulator.port)
    try:
        new.connect(V2)
        new.send(message("OPEN", 1, 0, b"shell:echo x\0", check=0))  # adb >= 1.0.41 sends no checksum
        assert new.recv()[0] == "OKAY"
    finally:
        new.close()


@pytest.mark.parametrize("bad", [
    message("CNXN", V2, 4096, b"host::\0", magic=0),
    message(0x4B4E4E55, 0, 0),  # "UNNK": no such command
    message("CNXN", V2, 4096, length=64 * 1024 * 1024),  # a 64 MiB CNXN: refused before reading its payload
], ids=["bad-magic", "unknown-command", "oversized"])
def test_malformed_message_closes_the_connection_and_the_emulator_keeps_serving(emulator, bad):
    client = Client(emulator.port)
    try:
        client.send(bad)
        assert client.closed()
    finally:
        client.close()
    again = Client(emulator.port)
    try:
        again.connect()
        assert again.run("shell:echo still here")[0] == b"still here\n"
    finally:
        again.close()


def test_oversized_write_after_cnxn_closes_the_connection(emulator):
    client = Client(emulator.port)
    try:
        client.connect()
        client.send(message("WRTE", 1, 1, length=adbd_module.MAX_PAYLOAD + 1))
        assert client.closed()
    finally:
        client.close()


def test_messages_before_cnxn_are_ignored_and_silence_is_bounded(emulator, monkeypatch):
    client = Client(emulator.port)
    try:
        client.send(message("OPEN", 1, 0, b"shell:echo x\0"))  # "received before a CONNECT ... MUST be ignored"
        client.connect()
        assert client.run("shell:echo x")[0] == b"x\n"
    finally:
        client.close()
    monkeypatch.setattr(adbd_module, "HANDSHAKE_TIMEOUT", 0.5)
    silent = Client(emulator.port, timeout=10)
    try:
        started = time.monotonic()
        assert silent.closed()
        # closed by the handshake bound, not by our socket's timeout
        within(time.monotonic() - started, 10, "silent client closed by the handshake bound, wall (s)")
    finally:
        silent.close()


def test_unknown_service_is_refused_with_clse(emulator):
    client = Client(emulator.port)
    try:
        client.connect()
        client.send(message("OPEN", 9, 0, b"frobnicate:now\0"))
        assert client.recv()[:3] == ("CLSE", 0, 9)  # protocol.txt: CLOSE(0, remote-id) is a failed OPEN
        assert client.run("shell:echo ok", local_id=10)[0] == b"ok\n"
    finally:
        client.close()


@pytest.mark.parametrize("fault", ["offline", "closed", "hang"])
def test_scenario_device_faults(tiny_graph, clock, fault):
    scenario = Scenario(adb_error_p=1.0 if fault != "hang" else 0.0, adb_error="closed" if fault == "hang" else fault,
                        hang_p=1.0 if fault == "hang" else 0.0, hang_seconds=0.5)
    game = SimGame(tiny_graph, clock=clock, scenario=scenario)
    with AdbdServer(game) as server:
        client = Client(server.port)
        try:
            client.connect()
            if fault == "offline":  # the transport drops, as when an emulator's adbd restarts
                client.send(message("OPEN", 1, 0, b"exec:screencap\0"))
                assert client.closed()
                return
            out, _ = client.run("exec:screencap")
            full = 16 + 4 * game.graph.resolution[0] * game.graph.resolution[1]
            assert len(out) == (full // 2 if fault == "closed" else 0)
        finally:
            client.close()


def test_stop_drops_every_transport_and_leaves_no_thread(game):
    server = AdbdServer(game).start()
    server.device.files["/data/local/tmp/maatouch"] = b"pushed"
    client = Client(server.port)
    try:
        client.connect()
        client.send(message("OPEN", 4, 0, b"shell:CLASSPATH=/data/local/tmp/maatouch app_process / "
                                          b"com.shxyke.MaaTouch.App\0"))
        assert client.recv()[0] == "OKAY"  # a stream that would stay open for as long as the host wants
        server.stop()
        assert client.closed()
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", server.port), timeout=2).close()
        deadline = time.monotonic() + 5
        while any(t.name.startswith("adbd") for t in threading.enumerate()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [t.name for t in threading.enumerate() if t.name.startswith("adbd")] == []
    finally:
        client.close()
        server.stop()


# ------------------------------------------------------------------------------------- Debian's real adb server

needs_adb = pytest.mark.skipif(ADB is None and not os.environ.get("CI"), reason="the adb client is not installed")


@pytest.fixture
def adb_server():
    server = AdbServer()
    try:
        yield server
    finally:
        server.stop()


def launch_emulator(port: int, *extra: str) -> subprocess.Popen:
    """`python -m engine sim serve --adbd PORT` in a process of its own (several start side by side)."""
    return subprocess.Popen([sys.executable, "-m", "engine", "sim", "serve", "--adbd", str(port), "--for", "120",
                             *extra], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def wait_emulator(proc: subprocess.Popen) -> tuple[subprocess.Popen, int, str]:
    """Where a launched emulator listens, from its first line: (process, port, serial)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        match = re.search(r"emulator (\S+) \(adbd\) on 127\.0\.0\.1:(\d+)", line)
        if match:
            return proc, int(match.group(2)), match.group(1)
    proc.kill()
    proc.wait(10)
    raise AssertionError("the simulated emulator did not say where it listens")


def stop_emulator(proc: subprocess.Popen, port: int | None) -> None:
    proc.terminate()
    proc.wait(15)
    proc.stderr.close()
    assert port is None or not listening(port), f"port {port} still listens after the emulator stopped"


def write_synthetic_pack(folder: Path) -> None:
    """The synthetic templates the simulator draws for the shipped graph, as an asset pack on disk: what a user
    of a real game passes with --assets."""
    from engine.config.assetpacks import new_index, save_index, write_template
    from engine.config.loader import load_graph
    from engine.sim import SyntheticAssets

    graph = load_graph().resolve()
    pack = SyntheticAssets(graph)
    index = new_index(graph.server)
    for name in pack.names():
        write_template(folder, pack.get(name), index)
    save_index(folder, index)


@needs_adb
def test_real_adb_server_lists_two_emulators_and_the_engine_drives_one(adb_server, tmp_path):
    adb_server.start()
    launched = [launch_emulator(free_port()), launch_emulator(0, "--model", "SecondSim",
                                                                "--notify-adb-server", str(adb_server.port))]
    emulators = []
    try:
        pack = tmp_path / "pack"
        write_synthetic_pack(pack)  # while the emulators start
        emulators = [wait_emulator(proc) for proc in launched]
        for _, port, _ in emulators:
            connected = adb_server("connect", f"127.0.0.1:{port}")
            assert connected.returncode == 0 and f"connected to 127.0.0.1:{port}" in connected.stdout
            assert adb_server("-s", f"127.0.0.1:{port}", "wait-for-device").returncode == 0
        rows = {line.split()[0]: line for line in adb_server("devices", "-l").stdout.splitlines()[1:] if line}
        (_, first, first_serial), (_, second, second_serial) = emulators
        assert " device " in rows[f"127.0.0.1:{first}"] and f"model:SimGame_{first}" in rows[f"127.0.0.1:{first}"]
        assert "model:SecondSim" in rows[f"127.0.0.1:{second}"]
        assert "model:SecondSim" in rows[f"emulator-{second - 1}"]  # it told the server, as an emulator does
        serials = {adb_server("-s", f"127.0.0.1:{port}", "shell", "getprop", "ro.serialno").stdout.strip()
                   for _, port, _ in emulators}
        assert serials == {first_serial, second_serial} and len(serials) == 2

        target = f"127.0.0.1:{first}"
        png = subprocess.run([ADB, "-P", str(adb_server.port), "-s", target, "exec-out", "screencap", "-p"],
                             capture_output=True, timeout=20, env=adb_server.env)
        frame = cv2.imdecode(np.frombuffer(png.stdout, np.uint8), cv2.IMREAD_COLOR)
        assert png.returncode == 0 and frame is not None and frame.shape == (720, 1280, 3)
        assert adb_server("-s", target, "shell", "wm", "size").stdout == "Physical size: 1280x720\n"

        goto = subprocess.run([sys.executable, "-m", "engine", "goto", "page_commission", "--serial", target,
                               "--assets", str(pack), "--adb-port", str(adb_server.port), "--json"],
                              cwd=ROOT, env={**adb_server.env, "PYTHONPATH": str(ROOT)}, capture_output=True,
                              text=True, timeout=120)
        assert goto.returncode == 0, goto.stdout + goto.stderr[-2000:]
        assert '"status": "verified"' in goto.stdout
    finally:
        for proc in launched:
            port = next((port for p, port, _ in emulators if p is proc), None)
            stop_emulator(proc, port)


@needs_adb
def test_real_adb_server_taps_pushes_and_pulls(adb_server, game, tmp_path):
    adb_server.start()
    with AdbdServer(game) as emulator:
        target = f"127.0.0.1:{emulator.port}"
        assert adb_server("connect", target).returncode == 0
        tap = adb_server("-s", target, "shell", "input", "tap", "320", "275")
        assert tap.returncode == 0 and game.truth()["page"] == "page_main"
        assert adb_server("-s", target, "shell", "frobnicate").returncode == 127  # shell v2 carries the exit code
        raw = subprocess.run([ADB, "-P", str(adb_server.port), "-s", target, "exec-out", "screencap"],
                             capture_output=True, timeout=20, env=adb_server.env)
        width, height = struct.unpack("<2I", raw.stdout[:8])
        assert (width, height) == game.graph.resolution and len(raw.stdout) == 16 + 4 * width * height
        local = tmp_path / "agent.bin"
        local.write_bytes(os.urandom(300_000))  # several WRTE messages each way
        assert adb_server("-s", target, "push", str(local), "/data/local/tmp/agent.bin").returncode == 0
        assert emulator.device.files["/data/local/tmp/agent.bin"] == local.read_bytes()
        back = tmp_path / "back.bin"
        assert adb_server("-s", target, "pull", "/data/local/tmp/agent.bin", str(back)).returncode == 0
        assert back.read_bytes() == local.read_bytes()
        assert "sync:" in emulator.requests


@needs_adb
def test_adb_server_finds_emulators_on_their_ports_by_probe_and_by_notice(adb_server, game, tiny_graph, clock):
    """adb's server probes 5555, 5557 ... 5585 when it starts (transport_local.cpp) and names what answers
    emulator-<port - 1>; one that comes up later tells a running server (host:emulator:PORT), as the Android
    emulator does. Other tests may hold those ports: take free ones, or skip."""
    free = [p for p in range(5585, 5554, -2) if not listening(p) and not listening(p - 1)]
    if len(free) < 2:
        pytest.skip("fewer than two emulator ports in 5555..5585 are free on this machine")
    started: list[AdbdServer] = []
    try:
        try:
            started.append(AdbdServer(game, port=free[0]).start())
            adb_server.start()
            started.append(AdbdServer(SimGame(tiny_graph, clock=clock), port=free[1]).start())
        except OSError:
            pytest.skip("an emulator port was taken meanwhile")
        assert notify_adb_server(free[1], adb_server.port)
        for emulator in started:
            name = f"emulator-{emulator.port - 1}"
            assert adb_server("-s", name, "wait-for-device").returncode == 0  # the handshake ends after start
            rows = [line for line in adb_server("devices", "-l").stdout.splitlines() if line.startswith(name + " ")]
            assert rows and f"model:SimGame_{emulator.port}" in rows[0] and " device " in rows[0]
            assert adb_server("-s", name, "shell", "getprop", "ro.serialno").stdout.strip() == emulator.serial
    finally:
        for emulator in started:
            emulator.stop()
    assert not notify_adb_server(free[1], free_port())  # no adb server there: no error, no wait


@needs_adb
def test_an_offline_fault_drops_the_transport_and_the_adb_server_reconnects(adb_server, game):
    adb_server.start()
    with AdbdServer(game) as emulator:
        target = f"127.0.0.1:{emulator.port}"
        assert adb_server("connect", target).returncode == 0
        assert adb_server("-s", target, "wait-for-device").returncode == 0
        fates = iter(["offline"])
        emulator.device.next_fault = lambda: next(fates, "none")  # the scenario's draw, made certain once
        assert adb_server("-s", target, "shell", "echo", "lost").returncode != 0
        assert adb_server("-s", target, "wait-for-device").returncode == 0  # adb reconnects by itself
        assert adb_server("-s", target, "shell", "echo", "back").stdout == "back\n"
