"""AdbDevice against the simulator's fake ADB server, through adbutils: the path a phone takes."""

from __future__ import annotations

import numpy as np
import pytest

from engine.core.errors import (
    AdbServerDown,
    BadFrame,
    BlackFrame,
    ConnectionLost,
    DeviceNotFound,
    DeviceOffline,
    DeviceTimeout,
)
from engine.device import AdbDevice, Device, open_device
from engine.device import adb as adb_module
from engine.runtime.devices import open_simulated
from engine.sim import FakeAdbServer, Scenario, SimGame


@pytest.fixture
def serve(tiny_graph):
    """serve(scenario=None, serial="sim-0") -> (server, game); every server is stopped after the test."""
    servers: list[FakeAdbServer] = []

    def start(scenario: Scenario | None = None, serial: str = "sim-0", graph=tiny_graph):
        game = SimGame(graph, scenario=scenario, seed=3)
        server = FakeAdbServer({serial: game}).start()
        servers.append(server)
        return server, game

    yield start
    for server in servers:
        server.stop()


def _device(server, policies, serial: str | None = None, **kw) -> AdbDevice:
    return AdbDevice(serial or server.serial, host="127.0.0.1", port=server.port, policies=policies,
                     sleep=lambda s: None, **kw)


def test_screenshot_tap_key_swipe_drive_the_game(serve, fast_policies):
    server, game = serve()
    device = _device(server, fast_policies)
    assert isinstance(device, Device)
    frame = device.screenshot()
    assert frame.shape == (720, 1280, 3) and frame.dtype == np.uint8
    assert np.array_equal(frame, game.frame())
    assert device.screenshot_method == "raw"
    device.tap(640, 360)
    assert game.truth()["page"] == "page_b"
    device.key("back")
    assert game.truth()["page"] == "page_main"
    device.swipe(100, 100, 600, 100, duration_ms=200)
    assert game.truth()["swipes"] == 1
    assert any(r.startswith("shell:input swipe 100 100 600 100 200") for r in server.requests)


def test_png_fallback_is_chosen_once_and_remembered(serve, fast_policies, monkeypatch):
    server, game = serve()
    device = _device(server, fast_policies)
    real_exec = device._exec

    def no_raw(command: str) -> bytes:
        # A device whose raw screencap prints something raw decoding cannot read (an old or odd ROM).
        return b"screencap: unsupported" if command == "screencap" else real_exec(command)

    monkeypatch.setattr(device, "_exec", no_raw)
    first = device.screenshot()
    assert device.screenshot_method == "png"
    assert np.array_equal(first, game.frame())
    device.screenshot()
    assert server.requests.count("shell:screencap -p") == 2


def test_large_device_frames_are_scaled_and_taps_scaled_back(serve, fast_policies, tiny_graph):
    big = tiny_graph.model_copy(update={"resolution": (1920, 1080)})
    server, game = serve(graph=big)
    device = _device(server, fast_policies, resolution=(1280, 720))
    assert device.screenshot().shape == (720, 1280, 3)
    assert device.frame_size == (1920, 1080)
    device.tap(640, 360)
    assert any(r == "shell:input tap 960 540" for r in server.requests)


def test_portrait_device_is_a_bad_frame(serve, fast_policies, tiny_graph):
    portrait = tiny_graph.model_copy(update={"resolution": (720, 1280)})
    server, _ = serve(graph=portrait)
    with pytest.raises(BadFrame, match="portrait"):
        _device(server, fast_policies).screenshot()


def test_black_frames_raise_unless_allowed(serve, fast_policies):
    server, _ = serve(Scenario(black_frame_p=1.0))
    device = _device(server, fast_policies)
    with pytest.raises(BlackFrame):
        device.screenshot()
    assert device.screenshot(allow_black=True).max() == 0


def test_black_frame_is_retried_and_recovers(serve, fast_policies):
    server, game = serve(Scenario(black_frame_p=0.5))
    device = _device(server, fast_policies)
    for _ in range(5):
        # At p=0.5 with 3 attempts some calls need a retry; all of them end with a real frame.
        try:
            assert device.screenshot().max() > 0
        except BlackFrame:
            pass
    assert game.truth()["black_frames"] > 0


@pytest.mark.parametrize("kind, error", [("offline", DeviceOffline), ("closed", ConnectionLost)])
def test_persistent_transient_faults_map_to_their_class(serve, fast_policies, kind, error):
    server, _ = serve(Scenario(adb_error_p=1.0, adb_error=kind))
    device = _device(server, fast_policies)
    with pytest.raises(error):
        device.screenshot()
    assert server.requests.count("host:tport:serial:sim-0") == 3  # every attempt of the policy was made


def test_offline_tap_is_device_offline(serve, fast_policies):
    # (A tap whose connection drops after OKAY cannot be told from one that worked: `input` prints nothing.)
    server, _ = serve(Scenario(adb_error_p=1.0, adb_error="offline"))
    with pytest.raises(DeviceOffline):
        _device(server, fast_policies).tap(1, 1)


def test_transient_faults_are_retried_with_a_reconnect(serve, fast_policies, monkeypatch):
    server, game = serve(Scenario(adb_error_p=0.3), serial="127.0.0.1:21503")
    device = _device(server, fast_policies)
    reconnects: list[str] = []
    real = device.reconnect
    monkeypatch.setattr(device, "reconnect", lambda: (reconnects.append("r"), real()))
    ok = 0
    for _ in range(20):
        try:
            device.screenshot()
            ok += 1
        except (DeviceOffline, ConnectionLost):
            pass
    assert ok >= 15
    assert reconnects, "no retry happened at p=0.3 over 20 screenshots"
    assert "host:connect:127.0.0.1:21503" in server.requests


def test_hung_request_is_a_device_timeout(serve, fast_policies):
    server, _ = serve(Scenario(hang_on_request=1, hang_seconds=5))
    device = _device(server, fast_policies)
    with pytest.raises(DeviceTimeout):
        device.tap(1, 1)
    device.tap(640, 360)  # the next request is answered again


def test_unknown_serial_is_device_not_found(serve, fast_policies):
    server, _ = serve()
    with pytest.raises(DeviceNotFound):
        _device(server, fast_policies, serial="emulator-5554").screenshot()


def test_unlisted_network_serial_is_adb_connected_first(serve, fast_policies):
    server, _ = serve()
    health = _device(server, fast_policies, serial="127.0.0.1:5555").health()
    assert health.status == "device_missing"
    assert "failed to connect" in health.error or "not among" in health.error
    assert "host:connect:127.0.0.1:5555" in server.requests


# --------------------------------------------------------------------------------------------------- health


def test_health_healthy(serve, fast_policies):
    server, _ = serve()
    health = _device(server, fast_policies).health()
    assert health.status == "healthy" and health.ok
    assert health.adb_connected and health.emulator_running and health.screenshot_ok
    assert not health.black_frame
    assert health.frame_size == (1280, 720)
    assert health.to_dict()["status"] == "healthy"


def test_health_black_screen(serve, fast_policies):
    server, _ = serve(Scenario(black_frame_p=1.0))
    health = _device(server, fast_policies).health()
    assert health.status == "black_screen"
    assert health.black_frame and health.emulator_running and not health.screenshot_ok


def test_health_device_missing(serve, fast_policies):
    server, _ = serve()
    health = _device(server, fast_policies, serial="emulator-5554").health()
    assert health.status == "device_missing"
    assert health.adb_connected and not health.emulator_running


def test_health_device_offline(serve, fast_policies):
    server, _ = serve(Scenario(adb_error_p=1.0, adb_error="offline"))
    health = _device(server, fast_policies).health()
    assert health.status == "device_offline"


def test_health_hung_device(serve, fast_policies):
    server, _ = serve(Scenario(hang_p=1.0, hang_seconds=5))
    health = _device(server, fast_policies).health()
    assert health.status == "timeout"
    assert health.adb_connected


def test_health_after_the_server_stops(serve, fast_policies):
    server, _ = serve()
    device = _device(server, fast_policies)
    server.stop()
    assert device.health().status == "adb_server_down"
    with pytest.raises(AdbServerDown):
        device.tap(1, 1)


# --------------------------------------------------------------------------------------------------- open_device


def test_open_device_without_serial_runs_the_embedded_simulator(tiny_graph, fast_policies):
    with open_simulated(tiny_graph, policies=fast_policies) as device:
        assert device.sim is not None and device.serial == device.sim.serial
        assert device.health().ok
        device.tap(640, 360)
        assert device.sim.game.truth()["page"] == "page_b"
        port = device.port
    with pytest.raises(AdbServerDown):
        AdbDevice(device.serial, port=port, policies=fast_policies).tap(1, 1)


def test_open_device_with_serial_is_an_adb_device(fast_policies):
    device = open_device("127.0.0.1:21503", adb_host="127.0.0.1", adb_port=5999, policies=fast_policies)
    assert isinstance(device, adb_module.AdbDevice)
    assert (device.serial, device.port, device.resolution) == ("127.0.0.1:21503", 5999, (1280, 720))
