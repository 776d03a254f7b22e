"""Routines (a task made of `run` steps, such as a daily): each chore's outcome in the result, the routine going on
past a failed chore and saying so (status partial, never a plain success), today's progress kept so `--resume`
skips what was done, and a routine's own bound from the policy it names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.config.taskfiles import TaskBook, read_tasks
from engine.core.errors import ConfigError
from engine.runtime.session import open_session
from engine.tasks.progress import Progress, chore_report

ROUTINE = """tasks:
  - name: to.mail
    description: go to the mailbox
    steps: [{type: goto, page: page_mail}]
    success: [{page: page_mail}]
  - name: never
    description: waits for a popup that never shows
    steps:
      - {type: goto, page: page_main}
      - {type: wait_for, until: {popup: GET_ITEMS_1}, timeout: 0.3}
    success: [{page: page_main}]
  - name: to.commission
    description: go to the commission list
    steps: [{type: goto, page: page_commission}]
    success: [{page: page_commission}]
  - name: routine
    description: three chores, the middle one fails
    policy: daily
    steps:
      - {type: run, task: to.mail, optional: true}
      - {type: run, task: never, optional: true}
      - {type: run, task: to.commission, optional: true}
    success: [{page: page_commission}]
  - name: quick
    description: a routine bounded by the tap policy, far too short for a goto
    policy: tap
    steps:
      - {type: run, task: to.mail}
      - {type: wait_for, until: {popup: GET_ITEMS_1}, timeout: 5}
    success: [{page: page_mail}]
"""


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    s = open_session()
    file = tmp_path_factory.mktemp("routine") / "tasks.yaml"
    file.write_text(ROUTINE)
    tasks, problems = read_tasks([file], s.graph)
    assert not problems, [str(p) for p in problems]
    s.tasks.book = TaskBook(tasks)
    s.tasks.progress_dir = tmp_path_factory.mktemp("progress")
    yield s
    s.close()


def test_a_routine_goes_on_past_a_failed_chore_and_reports_each_one(session):
    result = session.tools.alas_run("routine")
    assert not result.ok and result.status == "partial", result.text
    chores = result.data["chores"]
    assert [(c["task"], c["outcome"]) for c in chores] == [
        ("to.mail", "done"), ("never", "failed"), ("to.commission", "done")]
    assert "GET_ITEMS_1" in chores[1]["why"] and "2 done" in result.text and "1 failed: never" in result.text
    assert session.sim.game.truth()["page"] == "page_commission"  # the chore after the failure ran
    record = json.loads((session.tasks.progress_dir / "routine.json").read_text())
    assert sorted(record["done"]) == ["to.commission", "to.mail"]


def test_resume_skips_what_was_done_today_and_a_fresh_run_starts_over(session):
    session.tools.alas_run("routine")
    session.sim.game.goto("page_main")
    resumed = session.tools.alas_run("routine", resume=True)
    assert [(c["task"], c["outcome"]) for c in resumed.data["chores"]] == [
        ("to.mail", "skipped"), ("never", "failed"), ("to.commission", "skipped")]
    assert "done earlier today (resumed)" in resumed.data["chores"][0]["why"]
    assert resumed.status == "not_verified"  # page_main, not the commission page: success is still looked at
    fresh = session.tools.alas_run("routine")
    assert [c["outcome"] for c in fresh.data["chores"]] == ["done", "failed", "done"]


def test_a_routine_is_bounded_by_the_policy_it_names(session):
    listed = {t["name"]: t["bound_s"] for t in session.tools.alas_tools().data["tasks"]}
    assert listed["routine"] == session.policies.get("daily").timeout > listed["to.mail"]
    assert listed["quick"] == session.policies.get("tap").timeout
    session.sim.game.goto("page_main")
    result = session.tools.alas_run("quick")
    assert result.status == "timeout" and f"within {listed['quick']:g} s" in result.text


def test_a_task_naming_an_unknown_policy_is_refused_at_open(tmp_path):
    folder = Path(__file__).resolve().parents[2] / "pages" / "azurlane"
    graph_dir = tmp_path / "g"
    graph_dir.mkdir()
    for f in folder.glob("*.yaml"):
        if not f.name.startswith(("tasks", "goals")):
            (graph_dir / f.name).write_text(f.read_text())
    (graph_dir / "tasks.yaml").write_text(ROUTINE.replace("policy: daily", "policy: dayly"))
    with pytest.raises(ConfigError, match="task routine names policy 'dayly'"):
        open_session(graph_dir=graph_dir)


def test_progress_is_kept_per_day_and_a_broken_file_is_ignored(tmp_path):
    p = Progress(tmp_path, "daily", resume=False, day=lambda: "2026-11-23")
    p.mark("mail.collect", {"status": "verified", "why": "3 collected", "collected": 3, "other": 1})
    assert Progress(tmp_path, "daily", resume=True, day=lambda: "2026-11-23").done == {
        "mail.collect": {"status": "verified", "why": "3 collected", "collected": 3}}
    assert Progress(tmp_path, "daily", resume=True, day=lambda: "2026-11-24").done == {}
    assert Progress(tmp_path, "daily", resume=False, day=lambda: "2026-11-23").done == {}
    (tmp_path / "daily.json").write_text("{not json")
    assert Progress(tmp_path, "daily", resume=True, day=lambda: "2026-11-23").done == {}
    Progress(None, "daily", resume=True).mark("x", {})  # no folder: nothing written, nothing raised


def test_chore_report_counts_only_top_level_chores():
    chores, text = chore_report([
        {"step": "0", "type": "run", "task": "a", "outcome": "done", "collected": 2},
        {"step": "0/1", "type": "run", "task": "inner", "outcome": "done", "collected": 2},
        {"step": "1", "type": "run", "task": "b", "outcome": "done", "collected": 0, "nothing_to_collect": True},
        {"step": "2", "type": "goto", "outcome": "done"},
    ])
    assert [c["task"] for c in chores] == ["a", "b"]
    assert text == "1 done (2 collected); 1 nothing to collect: b"


def test_resume_must_be_a_boolean(session):
    result = session.tools.call("alas_run", {"name": "routine", "resume": "yes"})
    assert result.status == "bad_argument" and "resume must be true or false" in result.text


def test_the_daily_does_every_chore_on_a_full_day_and_a_rerun_finds_nothing_left(tmp_path, monkeypatch):
    # Ten chores bring a dozen reward popups: each chore is judged by its own stuck detectors and each collection
    # is progress, so the routine never mistakes the next reward for the last one coming back (PopupBlocking).
    from tests.engine.sim.conftest import FakeClock as _Clock

    monkeypatch.setenv("ENGINE_HOME", str(tmp_path))
    clock = _Clock()
    with open_session(clock=clock, sleep=clock.sleep) as s:
        chores = [step.task for step in s.tasks.book.get("daily").steps if step.type == "run"]
        first = s.tools.alas_run("daily")
        assert first.ok and first.status == "verified", first.text
        assert [c["task"] for c in first.data["chores"]] == chores
        assert all(c["outcome"] == "done" and c["collected"] >= 1 for c in first.data["chores"])
        assert not any(s.sim.game.truth()["state"]["actionable"].values())
        again = s.tools.alas_run("daily")
        assert again.ok, again.text
        assert all(c["collected"] == 0 for c in again.data["chores"])
