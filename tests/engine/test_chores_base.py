"""The base daily chores of issue 14 (pages/azurlane/tasks_base.yaml) against the simulator's true state.

research.collect, tactical.collect, dorm.collect, guild.logistics, shop.free and meowfficer.free, each run three
ways: with something to collect (the shipped sim_state_base.yaml, drawn with ALAS's real assets when
../shared/alas/assets is there), with nothing (a scenario's state override) and under the chaos scenario. What the
engine reports collected must equal what the simulator's state changed, and a chore must never end ok while the
truth shows its work undone. One session per scenario for the module.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.runtime.session import open_session
from engine.sim.scenario import Scenario

ROOT = Path(__file__).resolve().parents[2]
CHAOS = ROOT / "tests" / "data" / "scenarios" / "chaos.yaml"
ALAS_ASSETS = ROOT.parent / "shared" / "alas" / "assets"
"""ALAS's asset pack (en): the chores' buttons are then ALAS's real pixels; without it, the synthetic pack."""
CHORES = ["research.collect", "tactical.collect", "dorm.collect", "guild.logistics", "shop.free", "meowfficer.free"]

NOTHING = {
    "research_projects": [{"name": "D-091 Fighter Study", "state": "running", "seconds": 10800}],
    "tactical_classes": [{"name": "Javelin Firepower", "state": "training", "seconds": 7200}],
    "dorm_pickups": [],
    "guild_supply": [{"name": "Logistics supply", "state": "collected"}],
    "free_packs": [{"name": "Daily free pack", "state": "taken"}],
    "meow_boxes": [{"name": "Free box", "state": "bought"}],
}


def _state(session) -> dict:
    return session.sim.game.truth()["state"]


def _count(state: dict, name: str, in_state: str) -> int:
    return sum(1 for it in state["lists"][name] if it["state"] == in_state)


def _finished(state: dict, name: str) -> int:
    return _count(state, name, "finished")


PAGES = {"research.collect": "page_research", "tactical.collect": "page_tactical", "dorm.collect": "page_dorm",
         "guild.logistics": "page_guild", "shop.free": "page_supply_pack", "meowfficer.free": "page_meowfficer"}


def truth_change(name: str, before: dict, after: dict) -> int:
    """What the chore really collected: the things the taps on its page took, in the simulator's truth."""
    page = PAGES[name]
    return after["taken"].get(page, 0) - before["taken"].get(page, 0)


def work_left(name: str, state: dict) -> bool:
    """True while the truth shows the chore's work undone."""
    return {
        "research.collect": _finished(state, "research_projects") > 0,
        "tactical.collect": _finished(state, "tactical_classes") > 0,
        "dorm.collect": bool(state["lists"]["dorm_pickups"]),
        "guild.logistics": _count(state, "guild_supply", "ready") > 0,
        "shop.free": _count(state, "free_packs", "free") > 0,
        "meowfficer.free": _count(state, "meow_boxes", "free") > 0,
    }[name]


def _run(session, name: str):
    before = _state(session)
    result = session.tools.alas_run(name)
    return result, before, _state(session)


def _virtual() -> dict:
    """A virtual clock for a session: loading screens and settles cost no wall time."""
    from tests.engine.sim.conftest import FakeClock as _Clock

    clock = _Clock()
    return {"clock": clock, "sleep": clock.sleep}


@pytest.fixture(scope="module")
def plain():
    s = open_session(assets=ALAS_ASSETS if ALAS_ASSETS.is_dir() else None, **_virtual())
    yield s
    s.close()


@pytest.fixture(scope="module")
def empty():
    s = open_session(scenario=Scenario(state=NOTHING), **_virtual())
    yield s
    s.close()


def test_the_chores_are_listed_with_descriptions(plain):
    listed = {t["name"]: t for t in plain.tools.alas_tools().data["tasks"]}
    for name in CHORES:
        assert listed[name]["description"], name


@pytest.mark.parametrize("name", CHORES)
def test_chore_collects_what_the_simulator_holds(plain, name):
    result, before, after = _run(plain, name)
    assert result.ok and result.status == "verified", result.text
    change = truth_change(name, before, after)
    assert change > 0 and not work_left(name, after), (before, after)
    assert result.data["collected"] == change, (result.data["steps"], before, after)
    assert "nothing to collect" not in result.text


@pytest.mark.parametrize("name", CHORES)
def test_chore_with_nothing_to_collect(empty, name):
    result, before, after = _run(empty, name)
    assert result.ok and result.status == "verified", result.text
    assert "nothing to collect" in result.text and result.data.get("nothing_to_collect") is True
    assert result.data["collected"] == 0
    assert before["counters"] == after["counters"] and before["dots"] == after["dots"]
    assert {k: [(i["name"], i["state"]) for i in v] for k, v in before["lists"].items()} == \
        {k: [(i["name"], i["state"]) for i in v] for k, v in after["lists"].items()}


# Two seeds, each running half of the chores, on the virtual clock (the daily soak runs them in real time).
@pytest.mark.parametrize("seed, chores", [(3, CHORES[:3]), (11, CHORES[3:])])
def test_chores_under_chaos_never_claim_false_success(seed, chores):
    session = open_session(scenario=str(CHAOS), seed=seed, **_virtual())
    try:
        report = []
        for name in chores:
            result, before, after = _run(session, name)
            claim = result.data.get("collected") if result.data else None
            change = truth_change(name, before, after)
            report.append((name, result.ok, result.status, claim, change))
            if result.ok:
                assert not work_left(name, after), (name, result.text, after)
                # A tap counts only when the next recognised frame shows its effect (the button gone from the
                # tapped spot, a popup, another page), so a lost tap followed by a black frame is not a claim.
                assert claim == change, (name, claim, change, result.data["steps"])
        assert any(ok for _, ok, *_ in report), report  # chaos slows the chores down, it does not stop them all
    finally:
        session.close()
