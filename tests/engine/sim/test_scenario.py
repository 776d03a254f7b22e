"""Fault scenarios: each fault class shows up in the game, and a seed makes a whole run reproducible."""

from __future__ import annotations

import hashlib

import pytest

from engine.core.errors import ConfigError
from engine.sim import Scenario, SimGame
from engine.sim.scenario import Faults

BACK = (50, 325)
SHOP = (530, 225)


def run(graph, clock, scenario: Scenario, seed: int, steps: int = 40) -> list:
    """Drive a fixed sequence of inputs; record every truth and a hash of every frame."""
    game = SimGame(graph, scenario=scenario, seed=seed, clock=clock)
    record = []
    for i in range(steps):
        truth = game.truth()
        if truth["unknown"]:
            game.key("back")
        elif truth["popups"]:
            top = game.graph.popup(truth["popups"][-1])
            button = game.graph.button(top.dismiss[0].button)
            x1, y1, x2, y2 = button.click_area
            game.tap((x1 + x2) // 2, (y1 + y2) // 2)
        elif truth["page"] == "page_login":
            game.tap(320, 275)
        elif truth["page"] == "page_main":
            game.tap(*SHOP) if i % 2 else game.swipe(500, 180, 100, 180)
        else:
            game.tap(*BACK)
            game.key("back")
        clock.advance(0.7)
        record.append((game.truth(), hashlib.sha1(game.frame().tobytes()).hexdigest()))
    return record


def test_same_seed_same_run_and_different_seed_differs(tiny_graph, clock, scenarios_dir):
    scenario = Scenario.from_file(scenarios_dir / "chaos.yaml")
    start = clock.now
    first = run(tiny_graph, clock, scenario, seed=3)
    clock.now = start
    second = run(tiny_graph, clock, scenario, seed=3)
    clock.now = start
    other = run(tiny_graph, clock, scenario, seed=4)
    assert first == second
    assert first != other


def test_scenario_files_load(scenarios_dir):
    for path in sorted(scenarios_dir.glob("*.yaml")):
        assert isinstance(Scenario.from_file(path), Scenario)
    assert Scenario.from_file(scenarios_dir / "flaky_device.yaml").seed == 7


def test_unknown_keys_and_bad_values_are_config_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("popup_probability: 0.5\n")
    with pytest.raises(ConfigError):
        Scenario.from_file(bad)
    bad.write_text("popup_p: 1.5\n")
    with pytest.raises(ConfigError):
        Scenario.from_file(bad)
    bad.write_text("loading_min: 3\nloading_max: 1\n")
    with pytest.raises(ConfigError):
        Scenario.from_file(bad)


def test_popup_after_hop_only_from_those_allowed_on_the_page(tiny_graph, clock):
    game = SimGame(tiny_graph, scenario=Scenario(popup_p=1.0), clock=clock)
    game.goto("page_main")
    game.tap(*SHOP)
    popups = game.truth()["popups"]
    assert len(popups) == 1 and popups[0] in ("popup_news", "popup_confirm")
    game.goto("page_login")
    game.tap(320, 275)  # on page_main only popup_news is allowed
    assert game.truth()["popups"] == ["popup_news"]


def test_popup_list_restricts_the_choice(tiny_graph, clock):
    game = SimGame(tiny_graph, scenario=Scenario(popup_p=1.0, popups=["popup_confirm"]), clock=clock)
    game.goto("page_main")
    game.tap(*SHOP)
    assert game.truth()["popups"] == ["popup_confirm"]
    game.goto("page_login")
    game.tap(320, 275)
    assert game.truth()["popups"] == []


def test_popup_chain(tiny_graph, clock):
    game = SimGame(tiny_graph, scenario=Scenario(popup_p=1.0, popup_chain_p=1.0, popups=["popup_news",
                                                                                           "popup_confirm"]))
    game.goto("page_main")
    game.tap(*SHOP)
    first = game.truth()["popups"]
    top = game.graph.popup(first[0])
    x1, y1, x2, y2 = game.graph.button(top.dismiss[0].button).click_area
    game.tap((x1 + x2) // 2, (y1 + y2) // 2)
    second = game.truth()["popups"]
    assert len(second) == 1 and second != first


def test_loading_range(tiny_graph, clock):
    game = SimGame(tiny_graph, scenario=Scenario(loading_min=1.0, loading_max=1.0), clock=clock)
    game.goto("page_main")
    game.tap(*SHOP)
    assert game.truth()["loading"]
    clock.advance(0.999)
    assert game.truth()["loading"]
    clock.advance(0.002)
    assert game.truth()["page"] == "page_shop"


def test_black_frames(tiny_graph):
    game = SimGame(tiny_graph, scenario=Scenario(black_frame_p=1.0))
    assert not game.frame().any()
    assert game.truth()["black_frames"] == 1


def test_dropped_taps(tiny_graph):
    game = SimGame(tiny_graph, scenario=Scenario(drop_tap_p=1.0))
    game.tap(320, 275)
    truth = game.truth()
    assert truth["page"] == "page_login" and truth["dropped_taps"] == 1


def test_unknown_screen_only_the_back_key_leaves(tiny_graph):
    game = SimGame(tiny_graph, scenario=Scenario(unknown_p=1.0))
    game.tap(320, 275)
    assert game.truth()["unknown"]
    unknown = game.frame()
    game.tap(*SHOP)
    assert game.truth()["unknown"] and game.truth()["hops"] == 1
    game.key("back")
    truth = game.truth()
    assert not truth["unknown"] and truth["page"] == "page_main"
    assert (game.frame() != unknown).any()


def test_crash_back_to_login(tiny_graph):
    game = SimGame(tiny_graph, scenario=Scenario(crash_p=1.0))
    game.goto("page_main")
    game.tap(*SHOP)
    truth = game.truth()
    assert truth["page"] == "page_login" and truth["crashed"] and truth["crashes"] == 1


def test_device_faults_are_seeded_and_count_requests():
    scenario = Scenario(adb_error_p=0.5, hang_seconds=2, hang_on_request=3)
    fa, fb, fc = Faults(scenario, 11), Faults(scenario, 11), Faults(scenario, 12)
    seq_a = [fa.device_fault() for _ in range(30)]
    seq_b = [fb.device_fault() for _ in range(30)]
    seq_c = [fc.device_fault() for _ in range(30)]
    assert seq_a == seq_b and seq_a != seq_c
    assert seq_a[2] == "hang"
    assert {"closed", "offline"} <= set(seq_a)


def test_game_faults_do_not_depend_on_device_requests(tiny_graph):
    """adbutils makes extra protocol requests; they must not shift what the game does."""
    scenario = Scenario(popup_p=0.5, adb_error_p=0.5)
    games = [SimGame(tiny_graph, scenario=scenario, seed=5) for _ in range(2)]
    for _ in range(7):
        games[1].faults.device_fault()
    for game in games:
        for _ in range(6):
            game.goto("page_main")
            game.tap(*SHOP)
    assert games[0].truth() == games[1].truth()
