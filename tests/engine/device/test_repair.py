"""The repair ladder against the fake ADB server answering each failure reply adb gives."""

from __future__ import annotations

import shutil
import socket
import time

import pytest

from engine.device import AdbDevice
from engine.device import adbserver
from engine.device.repair import Ladder, classify_connect, classify_failure
from engine.sim import FakeAdbServer, Scenario, SimGame
from tests.speed import within

SERIAL = "127.0.0.1:16384"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGINE_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ENGINE_ADB_TAKEOVER", raising=False)


@pytest.fixture
def serve(tiny_graph, home):
    servers = []

    def start(serial: str = SERIAL, **scenario):
        server = FakeAdbServer({serial: SimGame(tiny_graph, scenario=Scenario(**scenario), seed=1)}).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def _ladder(server, policies, serial=SERIAL, **kw):
    device = AdbDevice(serial, host="127.0.0.1", port=server.port, policies=policies, sleep=lambda s: None,
                       connect=True)
    records = []
    ladder = Ladder(device, record=lambda kind, entry: records.append((kind, entry)), sleep=lambda s: None,
                    emulator_up_bound=2.0, **kw)
    return ladder, records


@pytest.mark.parametrize("reply, kind", [
    ("connected to 127.0.0.1:16384", "connected"),
    ("already connected to 127.0.0.1:16384", "already connected"),
    ("failed to connect to '127.0.0.1:16384': Connection refused", "refused"),
    ("cannot connect to 127.0.0.1:55555: No connection could be made because the target machine actively refused "
     "it. (10061)", "refused"),
    ("bad port number '598265' in '127.0.0.1:598265'", "bad port"),
    ("failed to connect to '1.2.3.4:4567': Operation timed out", "failed"),
])
def test_connect_replies_are_classified(reply, kind):
    assert classify_connect(reply) == kind


@pytest.mark.parametrize("text, kind", [
    ("device 'emulator-5556' not found", "device not found"),
    ("device offline", "device offline"),
    ("device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set", "unauthorized"),
    ("connection closed mid-answer", "closed"),
    ("unknown host service 'host:tport:serial:x'", "unknown host service"),
    ("[Errno 111] Connection refused", "server down"),
    ("device_offline: health: ADB error: unknown host service 'host:tport:serial:x'", "unknown host service"),
])
def test_request_failures_are_classified(text, kind):
    assert classify_failure(text) == kind


def test_a_device_that_answers_again_needs_only_a_reconnect(serve, fast_policies):
    server = serve()
    ladder, records = _ladder(server, fast_policies)
    result = ladder.repair()
    assert result.ok and [s.name for s in result.steps] == ["reconnect"]
    assert records[0][0] == "repair" and records[0][1]["outcome"] == "ok"


def test_an_offline_row_is_disconnected_then_the_emulator_is_restarted(serve, fast_policies):
    server = serve(adb_state="offline")
    ran = []

    def emulator(argv, **kw):  # the emulator's own tool: the one thing faked, it brings the instance back
        ran.append(argv)
        server.devices[SERIAL].state = "device"
        return type("Done", (), {"returncode": 0})()

    ladder, records = _ladder(server, fast_policies, restart=['"C:/MuMu/shell/MuMuManager.exe" api -v 0 '
                                                               'shutdown_player', "MuMuManager.exe api -v 0 "
                                                               "launch_player"], run=emulator)
    result = ladder.repair()
    assert [(s.name, s.outcome) for s in result.steps] == [
        ("reconnect", "failed"), ("restart_adb_server", "skipped"), ("restart_emulator", "ok")]
    assert f"host:disconnect:{SERIAL}" in server.requests
    assert "not the engine's" in result.steps[1].detail
    assert ran[0][0] == "C:/MuMu/shell/MuMuManager.exe" and len(ran) == 2
    assert len(records) == 3


@pytest.mark.parametrize("scenario, words", [
    ({"adb_state": "unauthorized"}, "accept the USB debugging prompt"),
    ({"adb_state": "offline", "connect_reply": "bad port"}, "the serial is wrong"),
])
def test_answers_no_later_step_can_help_stop_the_ladder(serve, fast_policies, scenario, words):
    ladder, _ = _ladder(serve(**scenario), fast_policies, restart=["never-run"], run=None)
    result = ladder.repair()
    assert not result.ok and len(result.steps) == 1 and words in result.advice


@pytest.mark.parametrize("scenario, reply", [({"connect_reply": "refused", "adb_state": "offline"}, "refused"),
                                             ({"connect_reply": "failed", "adb_state": "offline"}, "failed")])
def test_refused_and_failed_connects_go_down_the_ladder_and_say_what_to_do(serve, fast_policies, scenario, reply):
    ladder, _ = _ladder(serve(**scenario), fast_policies)
    start = time.monotonic()
    result = ladder.repair()
    bound = 3 * (fast_policies.get("health").timeout * 2)
    within(time.monotonic() - start, bound, "refused or failed connect, repair ladder, wall (s)")
    assert not result.ok and f"({reply})" in result.steps[0].detail
    assert [s.outcome for s in result.steps[1:]] == ["skipped", "skipped"]
    assert "devices file" in result.advice


def test_a_missing_device_and_a_dead_server_are_failures_not_crashes(serve, fast_policies, dead_port):
    ladder, _ = _ladder(serve(), fast_policies, serial="127.0.0.1:5999")  # not on the server: connect is refused
    assert "refused" in ladder.repair().steps[0].detail
    device = AdbDevice(SERIAL, host="127.0.0.1", port=dead_port, policies=fast_policies, sleep=lambda s: None)
    result = Ladder(device, sleep=lambda s: None).repair()
    assert "server down" in result.steps[0].detail and not result.ok


@pytest.mark.skipif(shutil.which("adb") is None, reason="Debian's adb is not installed")
def test_the_engines_own_server_is_restarted(home, fast_policies, dead_port, monkeypatch):
    monkeypatch.setenv("ENGINE_ADB", shutil.which("adb"))
    try:
        adbserver.start(port=dead_port)
        device = AdbDevice("127.0.0.1:1", host="127.0.0.1", port=dead_port, policies=fast_policies,
                           sleep=lambda s: None)
        with socket.create_connection(("127.0.0.1", dead_port), timeout=2) as sock:  # the server dies on its own
            sock.sendall(b"0009host:kill")
            sock.recv(4)
        end = time.monotonic() + 10
        while adbserver.probe_server("127.0.0.1", dead_port)[0] != "none" and time.monotonic() < end:
            time.sleep(0.1)
        result = Ladder(device, sleep=lambda s: None).repair()
        step = result.steps[1]
        assert step.name == "restart_adb_server" and "server restarted" in step.detail
        assert adbserver.probe_server("127.0.0.1", dead_port)[0] == "adb"
    finally:
        adbserver.kill(port=dead_port, force=True)
    end = time.monotonic() + 10  # the restarted server is ours: nothing of it is left running
    while adbserver.probe_server("127.0.0.1", dead_port)[0] != "none" and time.monotonic() < end:
        time.sleep(0.1)
    assert adbserver.probe_server("127.0.0.1", dead_port)[0] == "none"


def _unknown_transport(monkeypatch):
    """A server that lists devices but knows no transport request (what an adb server of another make or age answers
    to a request it lacks: adb's own words, AOSP adb/adb.cpp handle_host_request)."""
    from engine.sim import adb_protocol

    real = adb_protocol.Conversation.host_request

    def host_request(self, request):
        if request.startswith(("host:transport", "host:tport:")):
            self.fail(f"unknown host service '{request}'")
            return False
        return real(self, request)

    monkeypatch.setattr(adb_protocol.Conversation, "host_request", host_request)


# Every failure reply of point 4: how the fake server is told to give it, the step that brings the device back (or
# the step that stops the ladder), and the words of the message when nothing can help.
FAILURES = {
    "connected": ({}, "reconnect", None),
    "already connected": ({"connected_once": True}, "reconnect", None),
    "refused": ({"connect_reply": "refused", "adb_state": "offline"}, "restart_emulator", None),
    "failed": ({"connect_reply": "failed", "adb_state": "offline"}, "restart_emulator", None),
    "bad port": ({"connect_reply": "bad port", "adb_state": "offline"}, None, "the serial is wrong"),
    "offline row": ({"adb_state": "offline"}, "restart_emulator", None),
    "unauthorized row": ({"adb_state": "unauthorized"}, None, "accept the USB debugging prompt"),
    "device offline": ({"adb_error": "offline", "adb_error_p": 1.0}, "restart_emulator", None),
    "closed": ({"adb_error": "closed", "adb_error_p": 1.0}, "restart_emulator", None),
    "device not found": ({"gone": True}, "restart_emulator", None),
    "unknown host service": ({"unknown_service": True}, None, "ENGINE_ADB"),
}


@pytest.mark.parametrize("reply", list(FAILURES))
def test_every_failure_reply_leads_to_its_step_or_a_clear_message_inside_its_bound(serve, fast_policies, reply,
                                                                                    monkeypatch):
    from engine.sim.scenario import Faults

    setup, fixed_by, words = FAILURES[reply]
    setup = dict(setup)
    gone, once = setup.pop("gone", False), setup.pop("connected_once", False)
    if setup.pop("unknown_service", False):
        _unknown_transport(monkeypatch)
    server = serve(**{k: v for k, v in setup.items()})
    device = server.devices[SERIAL]
    device.connected_once = once
    if gone:
        del server.devices[SERIAL]

    def emulator(argv, **kw):  # the emulator's own tool brings the instance back as it was meant to be
        device.state, device.connect_reply, device.faults = "device", None, Faults()
        server.devices[SERIAL] = device
        return type("Done", (), {"returncode": 0})()

    ladder, records = _ladder(server, fast_policies, restart=["emulator-tool restart 0"], run=emulator)
    start = time.monotonic()
    result = ladder.repair()
    elapsed = time.monotonic() - start
    # a reconnect is bounded by two health timeouts (the list and connect, then the probe); the emulator's restart by
    # its up bound (2 s here) and one more reconnect; 3x headroom
    bound = fast_policies.get("health").timeout
    within(elapsed, 3 * (4 * bound + 2.0), "repair ladder for a failure reply, wall (s)")
    assert len(records) == len(result.steps)  # every step written to the transcript
    if fixed_by is not None:
        assert result.ok and result.steps[-1].name == fixed_by, result.describe()
    else:
        assert not result.ok and words in result.advice and len(result.steps) == 1, result.describe()
