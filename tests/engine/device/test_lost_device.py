"""A device lost in the middle of a goto never makes it report success."""

from __future__ import annotations

import pytest

from engine.runtime.session import open_session
from engine.sim import Scenario


@pytest.mark.parametrize("state", ["offline", "unauthorized"])
def test_a_device_lost_mid_route_fails_the_goto(far_page, state):
    session = open_session(None, seed=1)
    try:
        served = session.sim.server.devices[session.sim.serial]
        hops = []

        def on_event(kind, entry):
            if kind == "action" and "hop" in entry:
                hops.append(entry)
                if len(hops) == 2:
                    served.state = state  # the emulator drops (adb lists it offline or unauthorized)

        session.tools.on_event = on_event
        target = far_page(session.graph, session.graph.start_page)
        result = session.tools.call("alas_goto", {"page": target})
        assert len(hops) >= 2 and not result.ok
        assert result.status in ("device_offline", "device_not_found", "device_error", "unhealthy"), result.status
        assert result.data["screenshot_analysis"]["suggested_action"] in ("reconnect", "human")
    finally:
        session.close()


def test_a_device_offline_from_the_start_fails_the_goto():
    session = open_session(None, scenario=Scenario(adb_error_p=1.0, adb_error="offline"), seed=1)
    try:
        result = session.tools.call("alas_goto", {"page": "page_commission"})
        assert not result.ok and result.status == "device_offline"
    finally:
        session.close()


def test_a_game_that_stopped_drawing_is_restarted_and_the_goto_arrives():
    """The app was force-stopped and not launched again (a restart whose launch failed, or a crash to the launcher):
    every frame is black. The goto's health probe says black_screen, and the game is restarted (`revive`) instead
    of every later goto failing black_screen."""
    session = open_session(None, seed=1)
    try:
        assert session.tools.call("alas_goto", {"page": "page_main"}).ok
        served = session.sim.server.devices[session.sim.serial]
        served.stopped = True  # black launcher frames until am start / monkey
        result = session.tools.call("alas_goto", {"page": "page_commission"})
        assert result.ok, (result.status, result.text)
        kinds = [s["kind"] for s in session.tools.last_run.steps]
        assert "revive" in kinds and "restart" in kinds
        assert not served.stopped
    finally:
        session.close()
