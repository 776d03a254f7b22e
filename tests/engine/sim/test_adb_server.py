"""The fake ADB server speaks the host protocol well enough for adbutils and Debian's adb client, unchanged."""

from __future__ import annotations

import gc
import os
import shutil
import socket
import struct
import subprocess
import threading
import warnings

import adbutils
import cv2
import numpy as np
import pytest
from adbutils.errors import AdbError, AdbTimeout

from engine.sim import FakeAdbServer, Scenario, SimGame, start_embedded

# adbutils leaves its socket to the garbage collector when a reply is FAIL (check_okay raises before close), which
# filterwarnings=error would turn into a failure of whichever test happens to collect it.
pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


@pytest.fixture(autouse=True)
def _collect_adbutils_sockets():
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def client(server: FakeAdbServer) -> adbutils.AdbClient:
    return adbutils.AdbClient(host=server.host, port=server.port, socket_timeout=5)


def raw_request(port: int, *requests: str, timeout: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        for text in requests:
            sock.sendall(b"%04x" % len(text) + text.encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        return data


# ------------------------------------------------------------------------------------------------ host requests


def test_version_and_device_lists(served):
    c = client(served)
    assert c.server_version() == 41
    assert [(d.serial, d.state) for d in c.list()] == [("sim-0", "device")]
    (info,) = c.list(extended=True)
    assert info.tags["transport_id"] == "1" and info.tags["model"] == "SimGame"
    assert [d.serial for d in c.device_list()] == ["sim-0"]


def test_several_devices(tiny_graph):
    games = {"sim-a": SimGame(tiny_graph), "sim-b": SimGame(tiny_graph)}
    with FakeAdbServer(games) as server:
        assert server.serials == ["sim-a", "sim-b"]
        c = client(server)
        c.device("sim-b").click(320, 275)
        assert games["sim-b"].truth()["page"] == "page_main"
        assert games["sim-a"].truth()["page"] == "page_login"


def test_host_serial_queries(served):
    d = client(served).device("sim-0")
    assert d.get_state() == "device"
    assert d.get_serialno() == "sim-0"
    assert "shell_v2" in d.get_features().split(",")


def test_unknown_serial_fails(served):
    with pytest.raises(AdbError, match="not found"):
        client(served).device("nope").shell("echo hi")


def test_connect_answers(served):
    c = client(served)
    assert c.connect("sim-0") == "connected to sim-0"
    assert c.connect("sim-0") == "already connected to sim-0"
    assert "failed to connect" in c.connect("10.0.0.1:5555")


def test_tport_replies_okay_and_an_8_byte_transport_id(served):
    data = raw_request(served.port, "host:tport:serial:sim-0", "shell:echo hi")
    assert data[:4] == b"OKAY" and struct.unpack("<Q", data[4:12]) == (1,)
    assert data[12:] == b"OKAYhi\n"


def test_unknown_host_service_fails(served):
    data = raw_request(served.port, "host:frobnicate")
    assert data.startswith(b"FAIL") and b"unknown host service" in data


# ------------------------------------------------------------------------------------------------ shell


def test_shell_commands(served):
    d = client(served).device("sim-0")
    assert d.shell("echo hi there") == "hi there"
    assert d.shell(["getprop", "ro.product.model"]) == "SimGame"
    assert d.window_size() == (640, 360)
    assert d.rotation() == 0


def test_exit_codes_through_v1_and_v2(served):
    d = client(served).device("sim-0")
    missing = d.shell2("frobnicate now")
    assert missing.returncode == 127 and "frobnicate: not found" in missing.output
    v2 = d.shell2("frobnicate", v2=True)
    assert v2.returncode == 127 and "not found" in v2.stderr and v2.stdout == ""
    ok = d.shell2("echo yo", v2=True)
    assert ok.returncode == 0 and ok.stdout == "yo\n"


def test_screenshot_is_the_games_frame(served, game):
    image = client(served).device("sim-0").screenshot()
    assert np.array_equal(np.asarray(image)[:, :, ::-1], game.frame())


def test_raw_screencap_has_a_16_byte_header(served, game):
    data = client(served).device("sim-0").shell("screencap", encoding=None)
    width, height, fmt, _ = struct.unpack("<4I", data[:16])
    assert (width, height, fmt) == (640, 360, 1) and len(data) == 16 + 640 * 360 * 4
    rgba = np.frombuffer(data[16:], np.uint8).reshape(360, 640, 4)
    assert np.array_equal(cv2.cvtColor(rgba, cv2.COLOR_RGBA2BGR), game.frame())


def test_framebuffer_service(served, game):
    image = client(served).device("sim-0").framebuffer()
    assert np.array_equal(np.asarray(image.convert("RGB"))[:, :, ::-1], game.frame())


def test_input_drives_the_game(served, game):
    d = client(served).device("sim-0")
    d.click(320, 275)
    assert game.truth()["page"] == "page_main"
    d.swipe(500, 180, 100, 180, 0.2)
    assert game.truth()["page"] == "page_event"
    d.click(50, 325)
    d.click(530, 225)
    assert game.truth()["page"] == "page_shop"
    d.keyevent("KEYCODE_BACK")
    assert game.truth()["page"] == "page_main"


def test_concurrent_clients(served, game):
    d = client(served).device("sim-0")
    errors, shapes = [], []

    def grab():
        try:
            shapes.append(np.asarray(d.screenshot()).shape)
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=grab) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert not errors and shapes == [(360, 640, 3)] * 6


# ------------------------------------------------------------------------------------------------ faults


def faulty(tiny_graph, **fields) -> FakeAdbServer:
    return FakeAdbServer({"sim-0": SimGame(tiny_graph, scenario=Scenario(**fields))})


def test_offline_fault_is_a_fail_reply(tiny_graph):
    with faulty(tiny_graph, adb_error_p=1.0, adb_error="offline") as server:
        with pytest.raises(AdbError, match="device offline"):
            client(server).device("sim-0").shell("echo hi")


def test_closed_fault_cuts_the_answer(tiny_graph, game):
    full = len(cv2.imencode(".png", game.frame(), [cv2.IMWRITE_PNG_COMPRESSION, 1])[1])
    with faulty(tiny_graph, adb_error_p=1.0, adb_error="closed") as server:
        d = client(server).device("sim-0")
        try:
            data = d.shell("screencap -p", encoding=None)
        except (OSError, AdbError):
            return
        assert len(data) < full


def test_black_frame_fault(tiny_graph):
    with faulty(tiny_graph, black_frame_p=1.0) as server:
        assert not np.asarray(client(server).device("sim-0").screenshot()).any()


def test_hang_on_the_kth_request_times_out_the_client_and_only_that_one(tiny_graph):
    with faulty(tiny_graph, hang_on_request=2, hang_seconds=60) as server:
        d = client(server).device("sim-0")
        assert d.shell("echo one") == "one"
        with pytest.raises((AdbTimeout, socket.timeout, TimeoutError)):
            d.shell("echo two", timeout=0.3)
        assert d.shell("echo three") == "three"


def test_stop_releases_a_hung_request(tiny_graph):
    server = faulty(tiny_graph, hang_p=1.0, hang_seconds=60).start()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"0017host:tport:serial:sim-0" + b"000cshell:echo hi")
        got = sock.recv(12)  # the transport is granted...
        assert got[:4] == b"OKAY"
        stopper = threading.Thread(target=server.stop)
        stopper.start()
        data = b""
        try:
            while chunk := sock.recv(4096):  # ...the service starts but never answers; stop() closes it
                data += chunk
        except ConnectionResetError:
            pass
        stopper.join(timeout=10)
    assert data in (b"", b"OKAY") and not stopper.is_alive()


# ------------------------------------------------------------------------------------------------ embedded


def test_start_embedded(tiny_graph):
    sim = start_embedded(tiny_graph, seed=1)
    try:
        d = adbutils.AdbClient(host=sim.host, port=sim.port, socket_timeout=5).device(sim.serial)
        d.click(320, 275)
        assert sim.game.truth()["page"] == "page_main"
    finally:
        sim.stop()


# ------------------------------------------------------------------------------------------------ adb binary


ADB = shutil.which("adb")
needs_adb = pytest.mark.skipif(ADB is None and not os.environ.get("CI"), reason="the adb client is not installed")


def adb(server: FakeAdbServer, *args: str) -> subprocess.CompletedProcess:
    assert ADB is not None, "CI needs the adb client on PATH"
    return subprocess.run([ADB, "-P", str(server.port), *args], capture_output=True, timeout=20)


@needs_adb
def test_adb_binary_devices_shell_and_exec_out(served, game):
    listing = adb(served, "devices")
    assert listing.returncode == 0 and b"sim-0\tdevice" in listing.stdout
    echo = adb(served, "-s", "sim-0", "shell", "echo", "hi")
    assert echo.returncode == 0 and echo.stdout == b"hi\n"
    png = adb(served, "-s", "sim-0", "exec-out", "screencap", "-p")
    assert png.returncode == 0
    frame = cv2.imdecode(np.frombuffer(png.stdout, np.uint8), cv2.IMREAD_COLOR)
    assert np.array_equal(frame, game.frame())
    missing = adb(served, "-s", "sim-0", "shell", "frobnicate")
    assert missing.returncode == 127
    tap = adb(served, "-s", "sim-0", "shell", "input", "tap", "320", "275")
    assert tap.returncode == 0 and game.truth()["page"] == "page_main"
