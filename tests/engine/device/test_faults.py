"""Error classification, and bounded time against tiny servers that hang, hang up, or are not there."""

from __future__ import annotations

import socket
import threading

import pytest
from adbutils.errors import AdbConnectionError, AdbError, AdbTimeout

from engine.core.errors import (
    AdbServerDown,
    ConnectionLost,
    DeviceError,
    DeviceNotFound,
    DeviceOffline,
    DeviceTimeout,
)
from engine.device import AdbDevice, classify


@pytest.mark.parametrize(
    "exc, cls, transient",
    [
        (AdbTimeout("adb read timeout"), DeviceTimeout, True),
        (socket.timeout("timed out"), DeviceTimeout, True),
        (ConnectionResetError(104, "Connection reset by peer"), ConnectionLost, True),
        (BrokenPipeError(32, "Broken pipe"), ConnectionLost, True),
        (EOFError("Expected 4 bytes, got 0"), ConnectionLost, True),
        (AdbError("connection closed"), ConnectionLost, True),
        (AdbError("device offline"), DeviceOffline, True),
        (AdbError("device 'emulator-5554' not found"), DeviceNotFound, False),
        (AdbError("no devices/emulators found"), DeviceNotFound, False),
        (AdbError("device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set"), DeviceNotFound, False),
        (ConnectionRefusedError(111, "Connection refused"), AdbServerDown, False),
        (AdbConnectionError("connect to adb server failed: [Errno 111] Connection refused"), AdbServerDown, False),
    ],
)
def test_classify(exc, cls, transient):
    err = classify(exc, "emu-1", doing="screenshot")
    assert type(err) is cls
    assert err.transient is transient
    assert err.serial == "emu-1"
    assert err.message.startswith("screenshot: ")


def test_classify_keeps_device_errors_and_wraps_the_unknown():
    original = DeviceOffline("x")
    assert classify(original) is original
    assert type(classify(AdbError("something new"))) is DeviceError
    assert type(classify(RuntimeError("boom"))) is DeviceError


def _in_thread(fn, join: float = 10.0):
    """Run `fn` in a thread; the join bound only proves the call finished (not how fast)."""
    outcome: dict = {}

    def target():
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(join)
    assert not thread.is_alive(), "the device call did not finish"
    return outcome


def test_hung_server_gives_device_timeout_inside_the_bound(hung_server, fast_policies):
    device = AdbDevice("emu-1", host="127.0.0.1", port=hung_server.port, policies=fast_policies,
                       sleep=lambda s: None)
    for call in (device.screenshot, lambda: device.tap(1, 1), lambda: device.key("back")):
        outcome = _in_thread(call)
        assert isinstance(outcome.get("error"), DeviceTimeout), outcome


def test_hanging_up_server_gives_connection_lost(closing_server, fast_policies):
    device = AdbDevice("emu-1", host="127.0.0.1", port=closing_server.port, policies=fast_policies,
                       sleep=lambda s: None)
    outcome = _in_thread(lambda: device.tap(5, 5))
    assert isinstance(outcome.get("error"), ConnectionLost), outcome


def test_refused_server_is_adb_server_down_and_not_retried(dead_port, fast_policies):
    slept: list[float] = []
    device = AdbDevice("emu-1", host="127.0.0.1", port=dead_port, policies=fast_policies, sleep=slept.append)
    with pytest.raises(AdbServerDown):
        device.screenshot()
    assert slept == []


def test_health_of_a_dead_server(dead_port, fast_policies):
    health = AdbDevice("emu-1", host="127.0.0.1", port=dead_port, policies=fast_policies).health()
    assert health.status == "adb_server_down"
    assert not health.adb_connected and not health.ok
    assert "refused" in health.error


def test_health_of_a_hung_server_times_out(hung_server, fast_policies):
    device = AdbDevice("emu-1", host="127.0.0.1", port=hung_server.port, policies=fast_policies)
    outcome = _in_thread(device.health)
    assert outcome["value"].status == "timeout"
    assert outcome["value"].to_dict()["ok"] is False


def test_server_address_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("ANDROID_ADB_SERVER_HOST", "10.0.0.9")
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", "5999")
    device = AdbDevice("emu-1")
    assert (device.host, device.port) == ("10.0.0.9", 5999)
    assert (AdbDevice("emu-1", host="127.0.0.2", port=1).host, AdbDevice("emu-1", port=7).port) == ("127.0.0.2", 7)
