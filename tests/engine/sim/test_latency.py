"""Device latency profiles and page transitions in the simulator (issue 13, part 1)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from engine.sim import Scenario, SimGame
from engine.sim.compose import transition_frame
from engine.sim.scenario import PROFILES


class VirtualClock:
    """A clock with its own sleep, as SharedClock: the game spends device costs on it."""

    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


LOGIN_TO_MAIN = (320, 275)


def test_shipped_profiles_and_their_numbers():
    assert {"emulator_adb", "usb_phone", "fast_capture_emulator"} <= set(PROFILES)
    emulator = Scenario(profile="emulator_adb")
    assert (emulator.screencap_raw_ms, emulator.tap_ms) == (130, 250)
    assert Scenario(profile="fast_capture_emulator").screencap_raw_ms == 15
    assert Scenario(profile="emulator_adb", tap_ms=20).tap_ms == 20  # the scenario's own field wins
    with pytest.raises(ValidationError, match="unknown latency profile"):
        Scenario(profile="no_such_phone")


def test_a_scenario_file_names_a_profile(tmp_path):
    path = tmp_path / "slow.yaml"
    path.write_text("profile: usb_phone\ntransition_s: 0.3\ntransition: slide\n")
    scenario = Scenario.from_file(path)
    assert scenario.tap_ms == Scenario(profile="usb_phone").tap_ms > 0
    assert (scenario.transition_s, scenario.transition) == (0.3, "slide")


def test_device_costs_pass_on_the_games_clock(tiny_graph):
    clock = VirtualClock()
    game = SimGame(tiny_graph, scenario=Scenario(profile="emulator_adb"), clock=clock.now)
    game.frame()
    assert clock.t == pytest.approx(1000.130)
    game.tap(*LOGIN_TO_MAIN)
    assert clock.t == pytest.approx(1000.380)
    game.png_cost()  # a PNG screencap pays its compression beyond the raw capture
    assert clock.t == pytest.approx(1000.550)
    game.key("back")
    game.swipe(10, 10, 200, 10, 100)
    assert clock.t == pytest.approx(1000.550 + 0.250 + 0.350)
    game.tap(1, 1, cost_ms=5)  # a faster input path brings its own cost
    assert clock.t == pytest.approx(1001.155)


def test_a_page_change_shows_intermediate_frames_and_ignores_taps(tiny_graph):
    clock = VirtualClock()
    game = SimGame(tiny_graph, scenario=Scenario(transition_s=0.4), clock=clock.now)
    before = game.frame()
    game.tap(*LOGIN_TO_MAIN)
    truth = game.truth()
    assert truth["page"] == "page_main" and truth["transition"]
    clock.sleep(0.2)
    middle = game.frame()
    game.tap(*LOGIN_TO_MAIN)  # lost while the screens change
    assert game.truth()["hops"] == 1
    clock.sleep(0.25)
    after = game.frame()
    assert not game.truth()["transition"]
    assert not np.array_equal(middle, before) and not np.array_equal(middle, after)
    expected = transition_frame(before, after, 0.5)
    assert np.abs(middle.astype(int) - expected.astype(int)).max() <= 1


def test_slide_draws_the_new_screen_partly():
    old = np.zeros((4, 10, 3), np.uint8)
    new = np.full((4, 10, 3), 200, np.uint8)
    frame = transition_frame(old, new, 0.3, "slide")
    assert (frame[:, :7] == 0).all() and (frame[:, 7:] == 200).all()
    assert (transition_frame(old, new, 1.0, "slide") == 200).all()


def test_after_a_loading_screen_the_page_fades_in_from_it(tiny_graph):
    clock = VirtualClock()
    game = SimGame(tiny_graph, scenario=Scenario(transition_s=0.4, loading_min=1.0, loading_max=1.0), clock=clock.now)
    game.tap(*LOGIN_TO_MAIN)
    loading = game.frame()
    assert game.truth()["loading"]
    clock.sleep(1.0)
    start = game.frame()  # the change begins at the loading screen
    assert np.abs(start.astype(int) - loading.astype(int)).max() <= 1
    clock.sleep(0.5)
    assert not game.truth()["transition"] and game.truth()["page"] == "page_main"
