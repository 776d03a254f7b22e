"""The bounded tool surface: every tool's answer shape, argument checks, bounds, cancellation and device ownership.

Two beds: a scripted fake phone (only the phone is faked) where a test must hold a device call open at will, and
the embedded simulator behind a real session for everything that navigates.
"""

from __future__ import annotations

import threading
import time

import cv2
import numpy as np
import pytest

from engine.config.policies import load_policies
from engine.config.schema import Graph, Page
from engine.core.errors import DeviceOffline
from engine.core.results import SUGGESTED_ACTIONS, ToolResult
from engine.device.health import Health
from engine.runtime.tools import SPECS, TOOL_NAMES, Tools
from tests.speed import within

DATA_KEYS = {"tool", "target", "tool_success", "state_verification", "expected", "observed", "attempts",
             "elapsed_ms", "evidence", "screenshot_analysis", "observation"}
ANALYSIS_KEYS = {"blocking_element", "ocr_detected", "suggested_action"}


def assert_shape(result, tool):
    assert isinstance(result.ok, bool) and result.status and result.text
    assert DATA_KEYS <= set(result.data), DATA_KEYS - set(result.data)
    assert ANALYSIS_KEYS <= set(result.data["screenshot_analysis"])
    assert result.data["tool"] == tool
    suggested = result.data["screenshot_analysis"]["suggested_action"]
    assert suggested is None or suggested in SUGGESTED_ACTIONS
    if not result.ok:
        assert suggested in SUGGESTED_ACTIONS


# --------------------------------------------------------------------------------------------- a fake phone


class FakePhone:
    """The phone, scripted: `hold` makes its next calls block until `release`; every tap is recorded."""

    serial = "fake-1"
    resolution = (1280, 720)

    def __init__(self) -> None:
        self.taps: list[tuple[int, int]] = []
        self.swipes: list[tuple[int, ...]] = []
        self.open = threading.Event()
        self.open.set()
        self.blocked = threading.Event()
        self.raise_on_tap: Exception | None = None
        rng = np.random.default_rng(1)
        self.frame = rng.integers(0, 255, (720, 1280, 3), dtype=np.uint8)

    def hold(self) -> None:
        self.open.clear()

    def release(self) -> None:
        self.open.set()

    def _gate(self) -> None:
        self.blocked.set()
        assert self.open.wait(10)

    def screenshot(self, *, allow_black: bool = False) -> np.ndarray:
        self._gate()
        return self.frame.copy()

    def tap(self, x: int, y: int) -> None:
        self._gate()
        if self.raise_on_tap is not None:
            raise self.raise_on_tap
        self.taps.append((x, y))

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> None:
        self._gate()
        self.swipes.append((x1, y1, x2, y2, duration_ms))

    def health(self) -> Health:
        return Health(status="healthy", serial=self.serial, adb_connected=True, emulator_running=True,
                      screenshot_ok=True)


@pytest.fixture(scope="module")
def policies():
    return load_policies()


@pytest.fixture(scope="module")
def small_graph() -> Graph:
    return Graph(game="t", resolution=(1280, 720), servers=["en"], fallback_server="en",
                 pages=[Page(name="page_main"), Page(name="page_commission")])


@pytest.fixture
def phone():
    phone = FakePhone()
    yield phone
    phone.release()


@pytest.fixture
def fake_tools(phone, small_graph, policies):
    tools = Tools(phone, small_graph, None, policies)
    yield tools
    phone.release()
    tools.close()


def test_the_eight_tools_and_their_bounds_come_from_the_policies(fake_tools, policies):
    assert TOOL_NAMES == ("adb_health", "adb_screenshot", "adb_tap", "adb_swipe", "alas_state", "alas_goto",
                          "alas_tools", "alas_run")
    assert fake_tools.bound("adb_tap") == policies.get("tap").timeout
    assert fake_tools.bound("alas_goto") == policies.get("goto").timeout
    limits = {"adb_health": 2, "adb_screenshot": 3, "adb_tap": 1, "adb_swipe": 1, "alas_state": 3,
              "alas_goto": 30, "alas_tools": 1, "alas_run": 60}
    for name, limit in limits.items():
        assert 0 < fake_tools.bound(name) <= limit, name


@pytest.mark.parametrize("x, y", [(-1, 10), (1280, 10), (10, 720), (5000, -3)])
def test_an_off_screen_tap_is_refused_with_a_clear_error_before_the_device(fake_tools, phone, x, y):
    result = fake_tools.adb_tap(x, y)
    assert_shape(result, "adb_tap")
    assert (result.ok, result.status) == (False, "bad_argument")
    assert "off the 1280x720 screen" in result.text and "0..1279" in result.text
    assert phone.taps == []


def test_swipes_are_checked_for_points_and_for_a_duration_that_fits_the_bound(fake_tools, phone):
    assert fake_tools.adb_swipe(10, 10, 10, 900).status == "bad_argument"
    too_long = fake_tools.adb_swipe(10, 10, 500, 10, duration_ms=5000)
    assert too_long.status == "bad_argument" and "duration_ms" in too_long.text
    assert phone.swipes == []
    done = fake_tools.adb_swipe(10, 10, 500, 10, duration_ms=200)
    assert done.ok and phone.swipes == [(10, 10, 500, 10, 200)]


def test_a_tap_reaches_the_device_and_reports_success(fake_tools, phone):
    result = fake_tools.adb_tap(100, 200)
    assert_shape(result, "adb_tap")
    assert result.ok and result.data["tool_success"] and result.data["target"] == {"x": 100, "y": 200}
    assert phone.taps == [(100, 200)]


def test_a_hung_tap_times_out_inside_its_bound_and_a_queued_tap_never_fires(fake_tools, phone):
    bound = fake_tools.bound("adb_tap")
    phone.hold()
    start = time.monotonic()
    first = fake_tools.adb_tap(1, 1)
    elapsed = time.monotonic() - start
    assert_shape(first, "adb_tap")
    assert first.status == "timeout" and not first.ok
    within(elapsed, bound + 0.5, "hung tap timed out, wall (s)")
    assert first.data["screenshot_analysis"]["suggested_action"] == "reconnect"
    # The orphan still holds the device: the next action waits for it, then gives up without acting.
    second = fake_tools.adb_tap(2, 2)
    assert second.status == "timeout" and "waiting for the device" in second.text
    assert second.data["screenshot_analysis"]["suggested_action"] == "retry"
    phone.release()
    fake_tools.close()
    assert phone.taps == [(1, 1)]  # the hung request completed; nothing queued behind it ran


def test_a_call_that_waited_to_be_read_counts_that_wait_inside_its_bound(fake_tools, phone):
    """`started` is when the request arrived (the MCP server stamps it off the wire): a tap queued for 0.5 s before
    it reached the tools has only the rest of its bound to wait for the device, and its answer is built inside it."""
    bound = fake_tools.bound("adb_tap")
    assert fake_tools.device_lock.acquire(timeout=1)  # another call holds the device throughout
    try:
        arrived = fake_tools.clock() - 0.5
        start = time.monotonic()
        result = fake_tools.call("adb_tap", {"x": 3, "y": 3}, started=arrived)
        waited = time.monotonic() - start
    finally:
        fake_tools.device_lock.release()
    assert result.status == "timeout" and "waiting for the device" in result.text
    # counted from its arrival, answered before the bound
    within(result.data["elapsed_ms"], bound * 1000, "queued tap, reported from its arrival (ms)")
    # it did not get a fresh bound of its own on top of the queueing
    within(waited, bound - 0.3, "queued tap, wall after it reached the tools (s)")
    assert phone.taps == []


def test_health_does_not_wait_for_the_device_lock(fake_tools, phone):
    phone.hold()
    blocked = threading.Thread(target=fake_tools.adb_tap, args=(5, 5))
    blocked.start()
    assert phone.blocked.wait(5)
    assert fake_tools.device_lock.locked()
    health = fake_tools.adb_health()
    assert_shape(health, "adb_health")
    assert health.ok and health.status == "healthy" and health.data["health"]["adb_connected"]
    phone.release()
    blocked.join(5)


def test_a_cancelled_call_answers_at_once_and_its_action_is_never_sent(fake_tools, phone):
    phone.hold()
    holder = threading.Thread(target=fake_tools.adb_tap, args=(1, 1))
    holder.start()
    assert phone.blocked.wait(5)
    cancel = threading.Event()
    answers = []
    waiter = threading.Thread(target=lambda: answers.append(fake_tools.adb_tap(9, 9, cancel=cancel)))
    waiter.start()
    cancel.set()
    waiter.join(0.5)
    assert not waiter.is_alive()
    assert answers[0].status == "cancelled"
    phone.release()
    holder.join(5)
    fake_tools.close()
    assert (9, 9) not in phone.taps


def test_device_errors_and_bugs_come_back_as_results(fake_tools, phone):
    phone.raise_on_tap = DeviceOffline("device offline", serial="fake-1")
    offline = fake_tools.adb_tap(3, 3)
    assert_shape(offline, "adb_tap")
    assert offline.status == "device_offline"
    assert offline.data["screenshot_analysis"]["suggested_action"] == "reconnect"
    phone.raise_on_tap = RuntimeError("a bug")
    bug = fake_tools.adb_tap(3, 3)
    assert bug.status == "error" and "RuntimeError" in bug.text


def test_screenshot_is_a_png_of_the_frame_with_a_black_flag(fake_tools, phone):
    result = fake_tools.adb_screenshot()
    assert_shape(result, "adb_screenshot")
    assert isinstance(result, ToolResult) and result.png and result.ok and result.data["black_frame"] is False
    decoded = cv2.imdecode(np.frombuffer(result.png, np.uint8), cv2.IMREAD_COLOR)
    assert np.array_equal(decoded, phone.frame)
    assert "png" not in result.to_dict()["data"]
    phone.frame = np.zeros((720, 1280, 3), np.uint8)
    black = fake_tools.adb_screenshot()
    assert black.data["black_frame"] is True and black.status == "black_frame"
    assert black.data["screenshot_analysis"]["suggested_action"] == "restart_app"


def test_without_a_navigator_navigation_tools_say_not_implemented(fake_tools):
    for name, args in [("alas_goto", {"page": "page_main"}), ("alas_run", {"name": "login"}), ("alas_tools", {})]:
        result = fake_tools.call(name, args)
        assert_shape(result, name)
        assert result.status == "not_implemented"


def test_unknown_tools_pages_and_arguments_are_bad_arguments_with_suggestions(fake_tools):
    tool = fake_tools.call("adb_tapp", {"x": 1, "y": 1})
    assert tool.status == "bad_argument" and "adb_tap" in tool.data["suggestions"]
    page = fake_tools.call("alas_goto", {"page": "page_comission"})
    assert page.status == "unknown_page" and page.data["suggestions"][0] == "page_commission"
    assert "did you mean page_commission" in page.text
    missing = fake_tools.call("adb_tap", {"x": 1})
    assert missing.status == "bad_argument"


# --------------------------------------------------------------------------------------------- the simulator


@pytest.fixture(scope="module")
def session():
    from engine.runtime.session import open_session
    from engine.sim.scenario import Scenario

    # A loading screen after every hop keeps a goto busy long enough to look at it from beside.
    session = open_session(scenario=Scenario(loading_min=0.4, loading_max=0.4), seed=3)
    yield session
    session.close()


@pytest.fixture(scope="module")
def sim_tools(session):
    tools = Tools.from_session(session)
    yield tools
    tools.close()



def test_every_tool_answers_against_the_simulator(sim_tools, session):
    page = session.graph.page_names[0]
    width, height = session.graph.resolution
    calls = {
        "adb_health": {},
        "adb_screenshot": {},
        "adb_tap": {"x": width - 1, "y": height - 1},
        "adb_swipe": {"x1": 10, "y1": 10, "x2": 20, "y2": 20, "duration_ms": 50},
        "alas_state": {},
        "alas_goto": {"page": page},
        "alas_tools": {},
        "alas_run": {"name": "no_such_task"},
    }
    assert set(calls) == set(SPECS)
    for name, args in calls.items():
        result = sim_tools.call(name, args)
        assert_shape(result, name)
        bound = sim_tools.bound(name) * 1000 + 500
        within(result.data["elapsed_ms"], bound, f"{name} against the simulator, reported (ms)")
    assert sim_tools.adb_health().ok
    tapped = sim_tools.adb_tap(width - 1, height - 1)
    assert tapped.ok and tapped.data["observation"] is not None  # an action carries what came after it
    assert sim_tools.alas_run("no_such_task").status == "unknown_task"


def test_health_and_state_answer_while_a_goto_runs_and_a_cancel_stops_its_taps(sim_tools, session, far_page):
    game = session.sim.game
    target = far_page(session.graph, session.sim.game.truth()["page"])
    cancel = threading.Event()
    outcome: list = []
    before = game.counters["hops"]
    goto = threading.Thread(target=lambda: outcome.append(sim_tools.alas_goto(target, cancel=cancel)))
    goto.start()
    deadline = time.monotonic() + 10
    while game.counters["hops"] == before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert sim_tools.device_lock.locked() and goto.is_alive()

    health = sim_tools.adb_health()
    assert health.ok and health.status == "healthy"
    state = sim_tools.alas_state()
    assert_shape(state, "alas_state")
    assert state.data["busy"] is True and "belief" in state.data
    assert goto.is_alive()  # both answered beside the goto, not after it

    cancel.set()
    goto.join(2)
    assert not goto.is_alive()
    assert outcome[0].status == "cancelled" and not outcome[0].ok
    sim_tools.close()  # the worker reaches its checkpoint and lets go of the device
    assert not sim_tools.device_lock.locked()
    acted = game.counters["taps"] + game.counters["keys"]
    time.sleep(1.0)
    assert game.counters["taps"] + game.counters["keys"] == acted  # nobody keeps tapping
