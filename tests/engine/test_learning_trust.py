"""Trust in what the graph learned (engine.learning.learner, engine.config.policies.Learning), end to end through open_session.

The simulator draws the full Azur Lane graph; the session runs on a user's copy of it from which HIDDEN was cut
(its YAML entry removed), with a user's asset pack and a policy file. The vision model is the REAL google-genai
client against tests/gemini_fake.py's FakeGemini, reached through the environment as a user would configure it.
"""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from engine.config.assetpacks import new_index, save_index, write_template
from engine.config.loader import load_graph
from engine.runtime.session import open_session
from engine.sim import SyntheticAssets, start_embedded
from tests.conftest import dismiss_point
from tests.engine.sim.conftest import FakeClock

HIDDEN = "GET_SHIP"
ROOT = Path(__file__).resolve().parents[2]


def _user_graph(folder: Path, cut: str) -> Path:
    shutil.copytree(ROOT / "pages" / "azurlane", folder)
    popups = folder / "popups.yaml"
    data = yaml.safe_load(popups.read_text())
    data["popups"] = [p for p in data["popups"] if p["name"] != cut]
    popups.write_text(yaml.safe_dump(data, sort_keys=False))
    return folder


def _user_pack(folder: Path, assets: SyntheticAssets) -> Path:
    index = new_index(None)
    for name in assets.names():
        write_template(folder, assets.get(name), index)
    save_index(folder, index)
    return folder


@pytest.fixture(scope="module")
def drawn():
    full = load_graph(server="en")
    return full, SyntheticAssets(full)


@contextmanager
def sessions_over(full, assets, graph_dir: Path, pack_dir: Path, folder: Path, gemini, monkeypatch):
    """(open(policy_text) -> a session on `graph_dir` and `pack_dir` over the full simulator, its game): the vision
    model reached through the environment as a user would configure it, waits on a fake clock."""
    monkeypatch.setenv("GEMINI_API_KEY", "trust-test-key")
    monkeypatch.setenv("ENGINE_VISION_BASE_URL", gemini.url)
    monkeypatch.setenv("ENGINE_VISION_TIMEOUT", "5")
    sessions, clock = [], FakeClock()  # waits move the clock: settles and loading cost no wall time
    with start_embedded(full, assets=assets, clock=clock) as sim:

        def open_(policy: str):
            policy_file = folder / f"policies_{len(sessions)}.yaml"
            policy_file.write_text(policy)
            session = open_session(sim.serial, adb_host=sim.host, adb_port=sim.port, graph_dir=graph_dir,
                                   assets=pack_dir, transcript_dir=folder / "run", policies_file=policy_file,
                                   clock=clock, sleep=clock.sleep)
            sessions.append(session)
            return session

        try:
            yield open_, sim.game
        finally:
            for session in sessions:
                session.close()


@pytest.fixture
def user(drawn, fake_gemini, tmp_path, monkeypatch):
    """open(policy_text) -> a session on the user's graph and pack over the full simulator."""
    full, assets = drawn
    graph_dir, pack_dir = _user_graph(tmp_path / "my_graph", HIDDEN), _user_pack(tmp_path / "my_pack", assets)
    fake_gemini.answer = {"page": None, "popup": None, "blocking_element": "New ship", "ocr_text": "",
                          "suggested_action": "dismiss_popup_then_retry", "confidence": 0.9,
                          "tap": dismiss_point(full, HIDDEN)}
    with sessions_over(full, assets, graph_dir, pack_dir, tmp_path, fake_gemini, monkeypatch) as (open_, game):
        yield open_, game, graph_dir, tmp_path / "run" / "proposals"


def _show_and_goto(session, game, calls_before, gemini):
    assert session.tools.alas_goto("page_main").ok
    game.show_popup(HIDDEN)
    result = session.tools.alas_goto("page_reward")
    assert result.ok and game.truth()["page"] == "page_reward", result.text
    if result.data["vision_calls"] == 0:  # (the vision client answers a frame it has seen from its cache)
        assert len(gemini.calls) == calls_before
    return result, result.data["vision_calls"]


def test_auto_accepts_after_the_sightings_the_policy_asks_and_the_live_session_uses_it(user, fake_gemini):
    open_, game, graph_dir, proposals = user
    session = open_("learning: {mode: auto, min_sightings: 2}\n")
    first, calls = _show_and_goto(session, game, 0, fake_gemini)
    assert calls == 1 and [s["kind"] for s in first.data["learning"]] == ["proposal"]
    assert not list(graph_dir.glob("learned_*.yaml"))  # one sighting: proposed, not trusted yet

    second, calls = _show_and_goto(session, game, len(fake_gemini.calls), fake_gemini)
    assert calls == 1 and [s["kind"] for s in second.data["learning"]] == ["proposal", "proposal_accepted"]
    learned = list(graph_dir.glob("learned_*.yaml"))
    assert len(learned) == 1 and (graph_dir / "learned_assets").is_dir()
    name = yaml.safe_load(learned[0].read_text())["popups"][0]["name"]
    assert (proposals / "accepted" / f"{name}.yaml").is_file()

    third, calls = _show_and_goto(session, game, len(fake_gemini.calls), fake_gemini)  # the same session
    assert calls == 0 and third.data["vision_calls"] == 0
    assert [s["popup"] for s in session.tools.last_run.steps if s["kind"] == "dismiss"] == [name]

    fresh = open_("policies: {}\n")  # a new session on the grown graph: the learned pack is layered by itself
    fourth, calls = _show_and_goto(fresh, game, len(fake_gemini.calls), fake_gemini)
    assert calls == 0 and name in [s["popup"] for s in fresh.tools.last_run.steps if s["kind"] == "dismiss"]


def test_propose_mode_never_writes_the_graph(user, fake_gemini):
    open_, game, graph_dir, proposals = user
    session = open_("learning: propose\n")
    for _ in range(3):
        _show_and_goto(session, game, 0, fake_gemini)
    assert not list(graph_dir.glob("learned_*.yaml"))
    assert yaml.safe_load(next(proposals.glob("*.yaml")).read_text())["sightings"] == 3


def test_a_learned_popup_whose_dismissal_does_not_work_is_demoted_and_reported(user, fake_gemini):
    open_, game, graph_dir, proposals = user
    session = open_("learning: {mode: auto, min_sightings: 1}\n")
    _show_and_goto(session, game, 0, fake_gemini)
    learned = next(graph_dir.glob("learned_*.yaml"))
    data = yaml.safe_load(learned.read_text())
    name = data["popups"][0]["name"]
    data["popups"][0]["dismiss"] = [{"type": "tap", "point": [5, 5]}]  # a corner that closes nothing
    learned.write_text(yaml.safe_dump(data, sort_keys=False))
    session = open_("learning: {mode: auto, min_sightings: 1}\n")

    assert session.tools.alas_goto("page_main").ok
    game.show_popup(HIDDEN)
    result = session.tools.alas_goto("page_reward")
    demoted = [s for s in result.data.get("learning", []) if s["kind"] == "learned_demoted"]
    assert demoted and demoted[0]["popup"] == name and "did not work" in demoted[0]["reason"], result.data
    assert not learned.exists() and (proposals / "demoted" / learned.name).is_file()
    report = yaml.safe_load((proposals / "demoted" / f"{name}.yaml").read_text())
    assert report["removed_from_graph"] and (proposals / "demoted" / f"{name}.misfire.png").is_file()
    assert name not in [t.name for t in session.observer.popups]  # the live session no longer sees it
    relearned = [yaml.safe_load(p.read_text()) for p in proposals.glob("*.yaml")]  # the model closed it again:
    assert [p["name"] for p in relearned] == [f"{name}_2"]  # proposed anew, but a demoted screen waits for review
    assert [p.name for p in graph_dir.glob("learned_*.yaml")] == []
    truth = game.truth()
    assert not result.ok or (truth["page"] == "page_reward" and not truth["popups"])  # never a false success


def test_a_learned_popup_that_fires_on_a_known_page_is_demoted(user, fake_gemini, tmp_path):
    from engine.learning.proposals import accept

    open_, game, graph_dir, proposals = user
    session = open_("learning: {mode: auto, min_sightings: 1}\n")
    assert session.tools.alas_goto("page_reward").ok
    frame = session.device.screenshot()
    graph = session.graph
    link = next(l for l in graph.page("page_reward").links if getattr(l.action, "button", None))
    x1, y1, x2, y2 = graph.button(link.action.button).click_area  # a button of the page that leads away
    tap = [(x1 + x2) // 2, (y1 + y2) // 2]
    # A bad lesson a careless reviewer could accept: cut from page_reward itself, its "dismissal" a link away.
    folder = tmp_path / "bad"
    folder.mkdir()
    import cv2

    cv2.imwrite(str(folder / "LEARNED_BAD.frame.png"), frame)
    (folder / "LEARNED_BAD.yaml").write_text(yaml.safe_dump(
        {"name": "LEARNED_BAD", "label": "bad", "tap": tap, "area": [x1 - 10, y1 - 10, x2 + 10, y2 + 10],
         "shown_on": "page_reward", "sightings": 1}))
    accept(folder, "LEARNED_BAD", graph_dir, graph_dir / "learned_assets", pages_pack=session.assets)
    session = open_("learning: {mode: auto, min_sightings: 1}\n")
    assert "LEARNED_BAD" in [t.name for t in session.observer.popups]

    result = session.tools.alas_goto("page_reward")
    demoted = [s for s in result.data.get("learning", []) if s["kind"] == "learned_demoted"]
    assert demoted and "fired on page_reward" in demoted[0]["reason"], result.data
    assert not (graph_dir / "learned_learned_bad.yaml").exists()
    assert result.ok and game.truth()["page"] == "page_reward"


def test_off_learns_nothing_and_auto_never_writes_the_shipped_graph(tmp_path, caplog):
    off, auto = tmp_path / "off.yaml", tmp_path / "auto.yaml"
    off.write_text("learning: off\n")
    auto.write_text("learning: auto\n")
    with open_session(transcript_dir=tmp_path / "a", policies_file=off) as session:
        assert session.navigator.learner is None
    with caplog.at_level("WARNING", logger="engine.learning.learner"):
        with open_session(transcript_dir=tmp_path / "b", policies_file=auto) as session:  # the shipped graph
            learner = session.navigator.learner
            assert learner is not None and learner.graph_dir is None and learner.adopt is None
    assert "learning: auto needs a graph folder of yours" in caplog.text
