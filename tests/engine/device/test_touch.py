"""Fast touch end to end: AdbDevice pushes and starts maatouch / minitouch on the fake ADB server, whose emulated
agents turn the protocol into simulator taps; auto, health and the fall back to ``input tap``."""

from __future__ import annotations

import argparse
import socket
import time

import pytest

from engine.config.policies import Policies, Policy
from engine.device import AdbDevice
from engine.device import touch as touch_module
from engine.faces.cli import add_session_arguments
from engine.runtime.devices import open_simulated
from engine.sim import FakeAdbServer, SimGame

pytest.importorskip("MaaAgentBinary")


@pytest.fixture
def served(tiny_graph):
    game = SimGame(tiny_graph, seed=3)
    with FakeAdbServer({"sim-0": game}) as server:
        yield server, game


def _device(server, policies, **kw) -> AdbDevice:
    return AdbDevice(server.serial, host="127.0.0.1", port=server.port, policies=policies, sleep=lambda s: None,
                     **kw)


def _wait_for(predicate, seconds: float = 2.0) -> bool:
    """minitouch acknowledges nothing: its taps land a moment after the write."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


@pytest.mark.parametrize("control", ["maatouch", "minitouch"])
def test_agent_taps_and_swipes_reach_the_game(served, fast_policies, control):
    server, game = served
    with _device(server, fast_policies, control=control) as device:
        device.tap(640, 360)
        assert _wait_for(lambda: game.truth()["page"] == "page_b")
        device.swipe(100, 100, 600, 100, duration_ms=200)
        assert _wait_for(lambda: game.truth()["swipes"] == 1)
        assert device.control == control
        assert not any(r.startswith("shell:input") for r in server.requests), "no tap went through input"
        health = device.health()
        assert health.ok and health.control == control and control in health.control_note
    pushed = server.devices["sim-0"].files[f"/data/local/tmp/{control}"]
    abi = "x86_64" if control == "minitouch" else ""  # the simulated phone's ro.product.cpu.abi
    assert pushed == touch_module.agent_binary(control, abi).read_bytes()
    if control == "minitouch":
        assert "forward:tcp:" in " ".join(server.requests) and "localabstract:minitouch" in " ".join(server.requests)
    else:
        assert any("CLASSPATH=/data/local/tmp/maatouch app_process" in r for r in server.requests)


def test_taps_land_at_the_right_pixel(served, fast_policies):
    server, game = served
    seen = []
    game.tap = lambda x, y, **cost: seen.append((x, y))
    with _device(server, fast_policies, control="minitouch") as device:
        for point in [(0, 0), (1279, 719), (640, 360), (17, 703)]:
            device.tap(*point)
        assert _wait_for(lambda: len(seen) == 4)
    assert seen == [(0, 0), (1279, 719), (640, 360), (17, 703)]


def test_auto_takes_the_fastest_that_starts_and_health_says_so(served, fast_policies):
    server, game = served
    with _device(server, fast_policies, control="auto") as device:
        assert device.health().control_note == "auto: chosen at the first touch"  # a probe never starts agents
        device.choose_control()  # what open_device does as it opens the device
        health = device.health()
        assert health.control == "maatouch"
        assert health.to_dict()["control_note"].startswith("auto: maatouch started in")
        device.tap(640, 360)
        assert game.truth()["page"] == "page_b"


def test_auto_without_the_agents_falls_back_to_input(served, fast_policies, monkeypatch):
    server, game = served

    def missing(kind, abi=""):
        raise touch_module.AgentUnavailable("the MaaAgentBinary package is not installed")

    monkeypatch.setattr(touch_module, "agent_binary", missing)
    with _device(server, fast_policies, control="auto") as device:
        device.tap(640, 360)
        assert game.truth()["page"] == "page_b"
        assert device.control == "adb"
        note = device.health().control_note
        assert "maatouch failed" in note and "minitouch failed" in note and "falling back to adb" in note


def test_maatouch_that_was_never_pushed_says_aborted(served):
    server, _ = served
    stream = touch_module.open_service("127.0.0.1", server.port, "sim-0",
                                       "shell:CLASSPATH=/nowhere app_process / com.shxyke.MaaTouch.App", 2)
    with pytest.raises(touch_module.AgentUnavailable, match="Aborted"):
        touch_module.TouchAgent("maatouch", stream, (1280, 720))
    stream.close()


def test_a_broken_agent_is_dropped_and_input_takes_over(served, fast_policies):
    server, game = served
    with _device(server, fast_policies, control="maatouch") as device:
        device.tap(640, 360)
        assert game.truth()["page"] == "page_b"
        device._agent._sock.shutdown(socket.SHUT_RDWR)  # the agent dies (the shell was killed)
        device.key("back")
        device.tap(640, 360)
        assert game.truth()["page"] == "page_b"
        assert device.control == "adb" and "broke" in device.control_note
        assert any(r.startswith("shell:input tap 640 360") for r in server.requests)


def test_control_comes_from_the_tap_policy_and_the_cli(fast_policies, served):
    server, _ = served
    tap = fast_policies.get("tap").model_copy(update={"control": "minitouch"})
    policies = fast_policies.merged(Policies({"tap": tap}))
    with _device(server, policies) as device:
        assert device.control_wanted == "minitouch"
    with _device(server, policies, control="adb") as device:
        assert device.control_wanted == "adb" and device.choose_control() == "adb"
    with pytest.raises(ValueError, match="unknown control"):
        _device(server, fast_policies, control="telepathy")
    assert Policy(name="tap", attempts=1, timeout=1, control="auto").control == "auto"
    parser = argparse.ArgumentParser()
    add_session_arguments(parser)
    assert parser.parse_args(["--control", "auto"]).control == "auto"
    with pytest.raises(SystemExit):
        parser.parse_args(["--control", "telepathy"])


def test_open_device_starts_the_agent_as_it_opens(tiny_graph):
    with open_simulated(tiny_graph, control="maatouch") as device:
        assert device.control == "maatouch" and device.health().control == "maatouch"
        device.tap(640, 360)
        assert device.sim.game.truth()["page"] == "page_b"
        assert device.control == "maatouch"
