"""Dialogs over a dimmed page (issue 36), end to end through open_session on the simulator: two different dialogs
in one run are two learned popups, each dismissed by its own button; a dialog whose panel shifts is one; a learned
popup never fires on a clean frame of any page. The vision model is the REAL google-genai client against
tests/gemini_fake.py's FakeGemini (tests/engine/new_dialog.py's `model`: where the close button on screen is).
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
import yaml

from engine.observe.observer import Observer
from engine.sim import SimGame
from tests.engine import new_dialog
from tests.engine import test_learning_trust as trust

ROOT = Path(__file__).resolve().parents[2]
drawn = trust.drawn  # the module's fixture: the full graph and its drawn pack
TRIPS = (("page_reward", "page_mail"), ("page_mail", "page_commission"), ("page_commission", "page_reward"))


@pytest.fixture
def user(drawn, fake_gemini, tmp_path, monkeypatch):
    full, assets = drawn
    graph_dir, pack_dir = tmp_path / "my_graph", trust._user_pack(tmp_path / "my_pack", assets)
    shutil.copytree(ROOT / "pages" / "azurlane", graph_dir)
    with trust.sessions_over(full, assets, graph_dir, pack_dir, tmp_path, fake_gemini, monkeypatch) as (open_, game):
        fake_gemini.answer = new_dialog.model(game)
        yield open_, game, graph_dir, tmp_path / "run" / "proposals"


def _trip(session, game, i: int, dialog):
    """Stand on the trip's first page, the dialog over it, goto the second: verified, and truly there."""
    here, there = TRIPS[i % len(TRIPS)]
    assert session.tools.alas_goto(here).ok
    game.show_overlay(dialog)
    result = session.tools.alas_goto(there)
    truth = game.truth()
    assert result.ok and truth["page"] == there and not truth["overlays"], (result.text, truth)
    return result


def _learned(graph_dir: Path) -> dict[str, dict]:
    return {yaml.safe_load(p.read_text())["popups"][0]["name"]: yaml.safe_load(p.read_text())["popups"][0]
            for p in graph_dir.glob("learned_*.yaml")}


@pytest.mark.parametrize("style", ["own", "shared"])
def test_two_different_dialogs_in_one_run_are_two_popups_each_dismissed_by_its_own_button(user, drawn, style):
    """`shared`: both dialogs have the same panel and title bar colours (one game's style); only the title's
    text and the close button tell them apart."""
    open_, game, graph_dir, proposals = user
    session = open_("learning: {mode: auto, min_sightings: 2, search: 0}\n")  # (the model's lessons)
    rng = random.Random(4)
    colours = new_dialog.OWN_COLOURS if style == "own" else new_dialog.OFFER_COLOURS

    def login():
        return new_dialog.login(dim=new_dialog.DIM, colours=colours)

    shows = [new_dialog.offer(new_dialog.moving_spot(rng), dim=new_dialog.DIM) if i % 2 == 0 else login()
             for i in range(4)]
    for i, dialog in enumerate(shows):
        _trip(session, game, i, dialog)
    learned = _learned(graph_dir)
    assert len(learned) == 2, sorted(learned)  # never merged, never split
    offer = next(n for n in learned if "OFFER" in n)
    login_name = next(n for n in learned if "LOGIN" in n)
    assert learned[offer]["dismiss"][0]["button"] != learned[login_name]["dismiss"][0]["button"]

    for i, (dialog, name) in enumerate([(login(), login_name),
                                        (new_dialog.offer(new_dialog.moving_spot(rng), dim=new_dialog.DIM), offer),
                                        (login(), login_name)]):
        result = _trip(session, game, i, dialog)
        dismissed = [s["popup"] for s in session.tools.last_run.steps if s["kind"] == "dismiss"]
        assert result.data["vision_calls"] == 0 and dismissed == [name], (dismissed, result.data["vision_calls"])

    # Learned popups never fire on a clean frame: every page of the graph, drawn by the simulator.
    full, assets = drawn
    observer = Observer(session.graph, session.assets)
    clean = SimGame(full, assets=assets)
    for page in [p.name for p in full.pages if p.signatures and p.name != full.unknown_page]:
        clean.goto(page)
        fired = set(observer.observe(clean.frame()).popups) & set(learned)
        assert not fired, (page, fired)


def test_a_panel_that_shifts_between_showings_is_one_popup_that_is_found_wherever_it_sits(user):
    open_, game, graph_dir, proposals = user
    session = open_("learning: {mode: auto, min_sightings: 3, search: 0}\n")  # (the model's lessons)
    rng = random.Random(9)

    def shifted():
        return new_dialog.offer(new_dialog.moving_spot(rng), dim=new_dialog.DIM, at=new_dialog.shifted(rng))

    for i in range(3):
        assert _trip(session, game, i, shifted()).data["vision_calls"] >= 1
    [name] = _learned(graph_dir)
    record = yaml.safe_load((proposals / "accepted" / f"{name}.yaml").read_text())
    assert record["sightings"] == 3 and record["shift"] > 0 and not list(proposals.glob("*.yaml"))
    for i in range(4):
        result = _trip(session, game, i, shifted())
        assert result.data["vision_calls"] == 0, result.text


def test_without_learning_a_covered_page_is_never_verified_and_the_back_key_closes_what_it_can(user):
    open_, game, graph_dir, proposals = user
    session = open_("learning: off\n")
    assert session.tools.alas_goto("page_reward").ok
    game.show_overlay(new_dialog.offer(dim=new_dialog.DIM, back=True))  # the model names no point: back closes it
    result = session.tools.alas_goto("page_mail")
    assert result.ok and game.truth()["page"] == "page_mail" and not game.truth()["overlays"], result.text
    assert any(s["kind"] == "covered" for s in session.tools.last_run.steps)

    game.show_overlay(new_dialog.offer(dim=new_dialog.DIM))  # only its X closes it, and the model is not heeded
    session.navigator.observer.vision = None
    result = session.tools.alas_goto("page_reward")  # the dismissal search finds the X (issue 46)
    assert result.ok and game.truth()["page"] == "page_reward" and not game.truth()["overlays"], result.text
    assert [d["rung"] for d in result.data["dialogs_closed"]] == ["search"] and result.data["vision_calls"] == 0
    assert not list(graph_dir.glob("learned_*.yaml"))



def test_state_a_tasks_and_a_goals_conditions_never_call_a_covered_page_verified(user):
    """alas_state under a dialog no popup names reports the page, but popup_blocking, never verified; a task's
    `no_popup` success condition (engine.tasks.runner) and a goal's `page` and `no_popup` criteria
    (engine.config.goals) do not hold under it either, and do on the same page seen clean."""
    from engine.config.goals import Criterion, evaluate
    from engine.config.tasks import Condition
    from engine.core.results import Observation
    from engine.tasks.runner import _Execution

    open_, game, graph_dir, proposals = user
    session = open_("learning: off\n")
    assert session.tools.alas_goto("page_reward").ok
    clean = session.tools.alas_state()
    assert clean.ok and clean.status == "verified", clean.text
    game.show_overlay(new_dialog.offer(dim=new_dialog.DIM))
    covered = session.tools.alas_state()
    assert not covered.ok and covered.status == "popup_blocking", covered.text
    assert covered.data["observed"] == "page_reward" and "under a dialog" in covered.text, covered.text

    obs = session.observer.observe(session.device.screenshot())
    assert obs.page == "page_reward" and obs.cover is not None
    seen_clean = Observation("page_reward")
    execution = _Execution(session.tasks, None, session.tools.last_run)
    for seen, held in ((obs, False), (seen_clean, True)):
        execution.obs = seen
        assert execution._holds(Condition(page="page_reward", no_popup=True)) is held
        results = evaluate([Criterion(page="page_reward"), Criterion(no_popup=True)], seen,
                                 read_field=lambda _: None, task_outcome=lambda _: None)
        assert [r.held for r in results] == [held, held], results
