"""Any graph works: a second, made-up game ("tower", tests/data/graphs/tower) unlike Azur Lane in every way.

Portrait 720x1280, servers global and kr, colour and OCR signatures only (no templates, no asset pack), a ring
of four floors walked forward by taps and backward by the back key, popups dismissed by a tap, by waiting, and
one that does not block. It is validated, observed, navigated through the CLI and over MCP, and soaked under a
chaos scenario with every claim checked against the simulator's truth.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config.loader import load_graph
from engine.observe.observer import Observer
from engine.runtime.session import open_session
from engine.sim import Scenario, SimGame, SyntheticAssets

ROOT = Path(__file__).resolve().parents[2]
TOWER = ROOT / "tests" / "data" / "graphs" / "tower"
RING = ["page_lobby", "page_armory", "page_map", "page_guild"]
SOAK_GOTOS = int(os.environ.get("SOAK_GOTOS", "20"))


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def engine_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def tower():
    return load_graph(TOWER)


def observer_for(graph) -> Observer:
    return Observer(graph, SyntheticAssets(graph))


# ---------------------------------------------------------------------------------------------- the graph


def test_validate_passes_without_warnings():
    proc = engine_cli("validate", str(TOWER))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 warnings" in proc.stdout and "6 pages" in proc.stdout


def test_it_is_portrait_with_its_own_servers_and_no_templates(tower):
    assert tower.resolution == (720, 1280) and tower.servers == ["global", "kr"]
    signatures = [s for p in [*tower.pages, *tower.popups] for s in p.signatures]
    assert {s.type for s in signatures} == {"color", "ocr"}


@pytest.mark.parametrize("server", ["global", "kr"])
def test_every_page_and_popup_is_seen_as_itself_on_each_server(tower, server):
    graph = tower.resolve(server)
    game, observer = SimGame(graph), observer_for(graph)
    assert game.frame().shape == (1280, 720, 3)
    for page in RING + ["page_title"]:
        game.goto(page)
        obs = observer.observe(game.frame())
        assert obs.page == page and obs.confidence > 0.8, (page, obs.evidence)
    for popup in ["popup_notice", "popup_daily"]:
        game.goto("page_armory")
        game.show_popup(popup)
        assert observer.observe(game.frame()).popups == (popup,)
    assert game.renderer.conflicts == {}  # the overlapping header colour and title text both hold


def test_per_server_values_apply(tower):
    glob, kr = tower.resolve("global"), tower.resolve("kr")
    assert glob.button("NAV_NEXT").area != kr.button("NAV_NEXT").area
    # A kr lobby is not a global lobby: the header colour differs by server.
    kr_game = SimGame(kr)
    kr_game.goto("page_lobby")
    assert observer_for(glob).observe(kr_game.frame()).page is None


def test_taps_walk_the_ring_forward_and_the_back_key_walks_it_backward(tower):
    graph = tower.resolve()
    game = SimGame(graph)
    next_button = graph.button("NAV_NEXT").area
    x, y = (next_button[0] + next_button[2]) // 2, (next_button[1] + next_button[3]) // 2
    game.goto("page_lobby")
    seen = []
    for _ in range(4):
        game.tap(x, y)
        seen.append(game.truth()["page"])
    assert seen == ["page_armory", "page_map", "page_guild", "page_lobby"]
    for _ in range(4):
        game.key("back")
        seen.append(game.truth()["page"])
    assert seen[4:] == ["page_guild", "page_map", "page_armory", "page_lobby"]


# ---------------------------------------------------------------------------------------------- popups


def test_a_popup_dismissed_by_waiting_goes_after_its_wait(tower):
    clock = Clock()
    game = SimGame(tower.resolve(), clock=clock)
    game.goto("page_map")
    game.show_popup("popup_daily")
    clock.now = 1.4
    assert game.truth()["popups"] == ["popup_daily"]
    clock.now = 1.5
    assert game.truth()["popups"] == []


def test_a_non_blocking_popup_belongs_to_the_page_it_showed_on(tower):
    graph = tower.resolve()
    game, observer = SimGame(graph), observer_for(graph)
    game.goto("page_lobby")
    game.show_popup("popup_toast")
    obs = observer.observe(game.frame())
    assert obs.page == "page_lobby" and obs.popups == ("popup_toast",)  # the lobby still shows under a toast
    game.key("back")  # not blocking: the back key leaves the lobby
    assert game.truth()["page"] == "page_guild" and game.truth()["popups"] == []
    assert observer.observe(game.frame()).popups == ()
    game.key("back")
    game.key("back")
    game.key("back")
    assert game.truth()["page"] == "page_lobby" and game.truth()["popups"] == ["popup_toast"]


def test_an_unknown_frame_shows_its_closest_misses(tower):
    graph = tower.resolve()
    game, observer = SimGame(graph), observer_for(graph)
    game.goto("page_map")
    frame = game.frame()
    frame[30:110, 160:560] = (60, 130, 40)  # the map's title rubbed out (BGR): its colour header still matches
    obs = observer.observe(frame)
    assert obs.page is None
    misses = [e for e in obs.evidence if "/" in e.signature]
    assert 1 <= len(misses) <= 3 and all(not e.hit for e in misses)
    assert misses[0].signature == "page_map/map_title"  # passed its colour, missed its title: the closest


# ---------------------------------------------------------------------------------------------- faces


def test_cli_goto_verifies_the_target():
    proc = engine_cli("goto", "page_guild", "--graph", str(TOWER), "--json", "--seed", "2")
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["ok"] and result["status"] == "verified"
    assert result["data"]["target"] == "page_guild" and result["data"]["observed"] == "page_guild"


def test_mcp_goto_verifies_the_target():
    pytest.importorskip("mcp")
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from test_mcp_server import body, open_client, server_params
    finally:
        sys.path.remove(str(Path(__file__).parent))
    client, close = open_client(server_params("--graph", str(TOWER), "--server", "kr", "--seed", "4"))
    try:
        goto = body(client.call("alas_goto", {"page": "page_map"}))
        assert goto["ok"] and goto["status"] == "verified", goto["text"]
        assert goto["data"]["observed"] == "page_map"
        state = body(client.call("alas_state"))
        assert state["data"]["observation"]["page"] == "page_map"
        # What the client is told comes from the loaded graph: its game and its pages, nothing of Azur Lane.
        told = (client.client.instructions or "") + json.dumps(
            [tool.model_dump(mode="json") for tool in client.list_tools().tools])
        assert "tower" in told and "page_map" in told
        assert "azur" not in told.lower() and "page_commission" not in told
    finally:
        close()


# ---------------------------------------------------------------------------------------------- soak


def chaos(graph) -> Scenario:
    """benchmarks/test_soak.py's chaos mix, with shorter loading screens: every fault kind at once."""
    return Scenario(description="tower soak", popup_p=0.2, popups=[p.name for p in graph.popups],
                    loading_min=0.2, loading_max=0.8, loading_p=0.2, adb_error_p=0.05, black_frame_p=0.01,
                    drop_tap_p=0.01, unknown_p=0.02)


@pytest.mark.soak
def test_soak_under_chaos_has_no_false_successes(tower):
    rng = random.Random(7)
    session = open_session(graph_dir=TOWER, scenario=chaos(tower), seed=11)
    outcomes = {"ok": 0, "failed": 0}
    try:
        game = session.sim.game
        for _ in range(SOAK_GOTOS):
            target = rng.choice(RING)
            result = session.tools.alas_goto(target)
            truth = game.truth()
            if result.ok:
                outcomes["ok"] += 1
                assert truth["page"] == target, ("false success", target, result.text, truth)
                assert not truth["loading"] and not truth["unknown"], truth
            else:
                outcomes["failed"] += 1
                assert result.status and result.text and result.data["tool"] == "alas_goto", result.to_dict()
                assert result.data["observed"] in (None, truth["page"]), (result.to_dict(), truth)
    finally:
        session.close()
    assert outcomes["ok"] >= SOAK_GOTOS * 0.9, outcomes
