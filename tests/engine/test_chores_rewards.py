"""The reward chores of issue 14 (mail.collect, reward.missions, commission.collect, commission.dispatch) against
the simulator's true page state: what the task reports equals what the state changed, an empty chore is ok with
"nothing to collect", and under the chaos scenario a chore never claims success while the work is undone.

One session per case (a fresh session is the state reset); the shipped tasks are run as `alas_run` runs them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.runtime.session import open_session
from engine.sim.scenario import Scenario
from tests.engine.sim.conftest import FakeClock as _Clock

ROOT = Path(__file__).resolve().parents[2]
CHAOS = ROOT / "tests" / "data" / "scenarios" / "chaos.yaml"
ALAS_ASSETS = ROOT.parent / "shared" / "alas" / "assets"


def _run(task: str, state: dict | None = None, chaos_seed: int | None = None):
    """Run `task` on a fresh simulator holding `state` (overrides): (result, truth before, truth after)."""
    if chaos_seed is None:
        scenario = Scenario(state=state)
    else:
        scenario = Scenario.from_file(CHAOS).model_copy(update={"state": state})
    session = open_session(scenario=scenario, seed=chaos_seed, clock=(clock := _Clock()), sleep=clock.sleep)
    try:
        before = session.sim.game.truth()["state"]
        result = session.tools.alas_run(task)
        return result, before, session.sim.game.truth()["state"]
    finally:
        session.close()


def _view(truth: dict) -> dict:
    """Counters, dots and (name, state) of every list item: the truth without timers' time left."""
    return {"counters": truth["counters"], "dots": truth["dots"],
            "lists": {k: [(i["name"], i["state"]) for i in v] for k, v in truth["lists"].items()}}


def _states(truth: dict, name: str) -> list[str]:
    return [i["state"] for i in truth["lists"][name]]


def _item(name: str, state: str, seconds: float = 0) -> dict:
    return {"name": name, "state": state, "seconds": seconds}


def test_alas_tools_lists_the_reward_chores_with_descriptions():
    with open_session(clock=(clock := _Clock()), sleep=clock.sleep) as session:
        tasks = {t["name"]: t for t in session.tools.call("alas_tools", {}).data["tasks"]}
    for name in ("mail.collect", "reward.missions", "commission.collect", "commission.dispatch"):
        assert tasks[name]["description"], name


# ------------------------------------------------------------------------------------------------ mail


def test_mail_collect_collects_all_when_mails_exist():
    result, before, after = _run("mail.collect")
    assert result.ok and result.status == "verified", result.text
    assert len(before["lists"]["mails"]) == 3 and after["lists"]["mails"] == []
    assert after["counters"]["mail_count"] == 0 and not after["dots"]["mail_dot"]
    assert result.data["collected"] == 3  # one collect-all took every mail: three attachment markers gone


def test_mail_collect_with_an_empty_mailbox_has_nothing_to_collect():
    result, before, after = _run("mail.collect", {"mails": []})
    assert result.ok and "nothing to collect" in result.text and result.data.get("nothing_to_collect")
    assert _view(before) == _view(after)


# ---------------------------------------------------------------------------------------------- missions


def test_reward_missions_collect_all_clears_the_red_dot():
    result, before, after = _run("reward.missions")
    assert result.ok and result.status == "verified", result.text
    assert _states(before, "missions") == ["ready", "ready", "running"]
    assert _states(after, "missions") == ["done", "done", "running"] and not after["dots"]["mission_dot"]
    taps = [s["collected"] for s in result.data["steps"] if s["type"] == "for_each_match"]
    assert taps == [2, 0]  # MISSION_MULTI once took both ready missions, then no MISSION_SINGLE left
    assert result.data["collected"] == 2


def test_reward_missions_single_rows_are_collected_one_by_one():
    missions = [_item("Sortie 3 times", "running"), _item("Enhance once", "ready"), _item("Daily login", "done")]
    result, before, after = _run("reward.missions", {"missions": missions})
    assert result.ok and result.status == "verified", result.text
    assert _states(after, "missions") == ["running", "done", "done"] and not after["dots"]["mission_dot"]
    assert result.data["collected"] == 1 == _states(before, "missions").count("ready")


def test_reward_missions_with_nothing_ready_has_nothing_to_collect():
    missions = [_item("Sortie 3 times", "running"), _item("Enhance once", "done")]
    result, before, after = _run("reward.missions", {"missions": missions})
    assert result.ok and "nothing to collect" in result.text, result.text
    assert _view(before) == _view(after)


# ------------------------------------------------------------------------------------------- commissions


def _commissions(truth: dict) -> list[tuple[str, str]]:
    return [(i["name"], i["state"]) for i in truth["lists"]["commissions"]]


def test_commission_collect_takes_every_finished_commission():
    items = [_item("Daily Resource I", "ready"), _item("Escort", "running", 1800), _item("Cargo", "ready"),
             _item("Oil", "idle")]
    result, before, after = _run("commission.collect", {"commissions": items})
    assert result.ok and result.status == "verified", result.text
    # the game offers a new commission for each one collected (sim_state.yaml's refill): two new idle rows
    assert _commissions(after)[:2] == [("Escort", "running"), ("Oil", "idle")]
    assert [state for _, state in _commissions(after)[2:]] == ["idle", "idle"]
    assert result.data["collected"] == 2 == sum(state == "ready" for _, state in _commissions(before))


def test_commission_collect_with_none_finished_has_nothing_to_collect():
    items = [_item("Escort", "running", 1800), _item("Oil", "idle")]
    result, before, after = _run("commission.collect", {"commissions": items})
    assert result.ok and "nothing to collect" in result.text, result.text
    assert _commissions(before) == _commissions(after)


def test_commission_dispatch_starts_daily_first_up_to_the_free_slots():
    # 1 running, 3 free slots; urgent rows listed first, yet the daily ones start first and one urgent fills the
    # last slot, the other urgent stays idle.
    items = [_item("Urgent A", "urgent"), _item("Urgent B", "urgent"), _item("Escort", "running", 5400),
             _item("Daily I", "idle"), _item("Daily II", "idle")]
    result, before, after = _run("commission.dispatch", {"commissions": items, "commission_daily": 3})
    assert result.ok and result.status == "verified", result.text
    states = dict(_commissions(after))
    assert states["Daily I"] == states["Daily II"] == "running"
    assert sorted([states["Urgent A"], states["Urgent B"]]) == ["running", "urgent"]
    assert after["counters"]["commission_running"] == 4 and after["counters"]["commission_daily"] == 5
    values = result.data["values"]
    assert (values["running_before"], values["running_after"]) == ("1/4", "4/4")
    assert (values["daily_before"], values["daily_after"]) == ("3/12", "5/12")
    started = after["counters"]["commission_running"] - before["counters"]["commission_running"]
    assert result.data["collected"] == 3 == started


def test_commission_dispatch_with_full_slots_has_nothing_to_start():
    result, before, after = _run("commission.dispatch", {"commissions": [
        _item("A", "running", 900), _item("B", "running", 900), _item("C", "running", 900),
        _item("D", "running", 900), _item("Daily I", "idle")]})
    assert result.ok and "nothing to collect" in result.text, result.text
    assert _commissions(before) == _commissions(after)
    assert before["counters"] == after["counters"]


@pytest.mark.skipif(not ALAS_ASSETS.is_dir(), reason="no ALAS asset pack at ../shared/alas/assets")
def test_missions_and_dispatch_with_alas_real_templates():
    # ALAS's own pixels (MISSION_MULTI, MISSION_NOTICE, COMMISSION_START...) drawn and matched, one session.
    state = {"commissions": [_item("Urgent A", "urgent"), _item("Daily I", "idle"), _item("Escort", "running", 900)]}
    with open_session(scenario=Scenario(state=state), assets=ALAS_ASSETS, clock=(clock := _Clock()),
                      sleep=clock.sleep) as session:
        missions = session.tools.alas_run("reward.missions")
        dispatch = session.tools.alas_run("commission.dispatch")
        truth = session.sim.game.truth()["state"]
    assert missions.ok and dispatch.ok, (missions.text, dispatch.text)
    assert "ready" not in _states(truth, "missions") and not truth["dots"]["mission_dot"]
    assert _commissions(truth) == [("Urgent A", "running"), ("Daily I", "running"), ("Escort", "running")]
    assert dispatch.data["collected"] == 2 and truth["counters"]["commission_running"] == 3


# ------------------------------------------------------------------------------------------------- chaos


def _work_done(task: str, after: dict) -> bool:
    if task == "mail.collect":
        return after["lists"]["mails"] == []
    if task == "reward.missions":
        return "ready" not in _states(after, "missions")
    if task == "commission.collect":
        return "ready" not in _states(after, "commissions")
    return after["counters"]["commission_running"] == 4 or not {"idle", "urgent"} & set(_states(after, "commissions"))


PAGES = {"mail.collect": "page_mail", "reward.missions": "page_mission", "commission.collect": "page_commission",
         "commission.dispatch": "page_commission"}


def _changed(task: str, before: dict, after: dict) -> int:
    """What the taps on the chore's page really took (mails, missions, commissions), in the simulator's truth."""
    page = PAGES[task]
    return after["taken"].get(page, 0) - before["taken"].get(page, 0)


@pytest.mark.parametrize("task, seed", [("mail.collect", 3), ("reward.missions", 29), ("commission.collect", 3),
                                        ("commission.collect", 29), ("commission.dispatch", 3),
                                        ("commission.dispatch", 29)])
def test_under_chaos_no_false_success_and_the_claim_matches_the_truth(task, seed):
    result, before, after = _run(task, chaos_seed=seed)
    if result.ok:
        assert _work_done(task, after), (result.text, after)
        assert result.data["collected"] == _changed(task, before, after), (result.text, before, after)
