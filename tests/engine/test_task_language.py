"""The task language for chores: OCR value conditions, for_each_match, scroll, run, per-step outcomes.

Load-time checks run on the demo graph; behaviour runs against the embedded simulator (one session for the
module) where its screens allow, and template matching of many items against composed frames.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from engine.config.loader import load_graph
from engine.config.taskfiles import TaskBook, load_tasks, read_tasks
from engine.config.taskvalues import compare, number_of
from engine.core.errors import GraphError
from engine.runtime.session import open_session

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "tests" / "data" / "graphs" / "good"


@pytest.fixture(scope="module")
def session():
    s = open_session()
    yield s
    s.close()


def _run(session, tmp_path: Path, text: str, name: str, start: str | None = None):
    """Load `text` as the session's only task file and run task `name` (from page `start` when given)."""
    file = tmp_path / "tasks.yaml"
    file.write_text(text)
    tasks, problems = read_tasks([file], session.graph)
    assert not problems, [str(p) for p in problems]
    session.tasks.book = TaskBook(tasks)
    if start:
        session.sim.game.goto(start)
    return session.tools.alas_run(name)


def _problems(tmp_path: Path, text: str) -> list:
    folder = tmp_path / "demo"
    if not folder.exists():
        shutil.copytree(DEMO, folder)
    (folder / "tasks.yaml").write_text(text)
    with pytest.raises(GraphError) as info:
        load_tasks(folder, load_graph(folder))
    return info.value.problems


# ----------------------------------------------------------------------------------------------- values


@pytest.mark.parametrize("text, part, number", [
    ("3/4", None, 3), ("3 / 4", "total", 4), ("01:23:45", None, 5025), ("23:45", None, 1425),
    ("1,250", None, 1250), ("Lv. 7", None, 7), ("none", None, None), ("12", "total", None),
])
def test_numbers_counters_and_durations(text, part, number):
    assert number_of(text, part) == number


@pytest.mark.parametrize("op, left, right, part, held", [
    ("lt", "3/4", 4, None, True), ("eq", "3/4", 4, "total", True), ("gt", "01:00:00", "00:30:00", None, True),
    ("le", "00:59:59", 3600, None, True), ("lt", "3/4", "7/12", None, True), ("ge", "3/4", "7/12", "total", False),
    ("eq", "Idle", "Idle", None, True), ("ne", "Idle", "Busy", None, True), ("matches", "3/4", r"^\d+/\d+$", None, True),
    ("eq", None, 1, None, False), ("gt", "n/a", 1, None, False),
])
def test_compare(op, left, right, part, held):
    assert compare(op, left, right, part)[0] is held


def test_value_conditions_read_with_ocr_in_the_simulator(session, tmp_path):
    # commission_running reads "3/4", commission_daily "7/12" (their samples).
    result = _run(session, tmp_path, r"""tasks:
  - name: values
    description: compare the commission counters
    steps:
      - {type: goto, page: page_commission}
      - {type: key, key: back, when: {value: {field: commission_running, op: ge, value: 4}}}
    success:
      - {page: page_commission}
      - value: {field: commission_running, op: lt, value: 4}
      - value: {field: commission_running, op: eq, value: 4, part: total}
      - value: {field: commission_running, op: lt, than: commission_daily}
      - value: {field: commission_daily, op: matches, value: '^\d+\s*/\s*12$'}
""", "values")
    assert result.ok, result.text
    steps = result.data["steps"]
    assert [(s["step"], s["type"], s["outcome"]) for s in steps] == [
        ("0", "goto", "done"), ("1", "key", "skipped")]
    assert "commission_running ge 4 does not hold" in steps[1]["why"]
    failing = _run(session, tmp_path, """tasks:
  - name: too_many
    description: a counter that is not reached
    steps: [{type: goto, page: page_commission}]
    success: [{value: {field: commission_daily, op: ge, value: 12}}]
""", "too_many")
    assert not failing.ok and failing.status == "not_verified"


# ----------------------------------------------------------------------------------------- for_each_match


def test_for_each_match_taps_each_match_and_looks_again(session, tmp_path):
    result = _run(session, tmp_path, """tasks:
  - name: fleet
    description: tap the fleet button as long as it shows (once, it opens the fleet)
    steps:
      - {type: goto, page: page_main}
      - {type: for_each_match, button: MAIN_GOTO_FLEET, area: [700, 300, 1100, 480], max: 3}
    success: [{page: page_fleet}]
""", "fleet")
    assert result.ok, result.text
    assert result.data["collected"] == 1
    assert result.data["steps"][1] == {"step": "1", "type": "for_each_match", "outcome": "done", "why": "",
                                       "collected": 1}
    assert session.sim.game.truth()["page"] == "page_fleet"


def test_a_chore_with_nothing_to_tap_is_ok_with_nothing_to_collect(session, tmp_path):
    result = _run(session, tmp_path, """tasks:
  - name: nothing
    description: no fleet button on the mail page
    steps:
      - {type: goto, page: page_mail}
      - {type: for_each_match, button: MAIN_GOTO_FLEET, max: 3, do: [{type: dismiss_popups}]}
    success: [{page: page_mail}]
""", "nothing")
    assert result.ok and result.status == "verified", result.text
    assert "nothing to collect" in result.text and result.data["collected"] == 0
    assert result.data["steps"][1]["why"] == "no MAIN_GOTO_FLEET to tap"


def test_find_matches_finds_every_copy_once_on_a_composed_frame():
    from verifiers.template import TemplateCheck, find_matches

    rng = np.random.default_rng(7)
    patch = rng.integers(0, 255, (30, 40, 3), dtype=np.uint8)
    frame = np.full((720, 1280, 3), 40, np.uint8)
    spots = [(100, 100), (100, 300), (600, 500), (1200, 650)]
    for x, y in spots:
        frame[y:y + 30, x:x + 40] = patch
    gray = cv2.cvtColor(patch, cv2.COLOR_BGR2GRAY)
    check = TemplateCheck(name="ITEM", area=(0, 0, 40, 30), search=(0, 0, 1280, 720), templates=(gray,),
                          means=(tuple(float(c) for c in cv2.mean(patch)[:3]),), flat=(False,), threshold=0.9)
    boxes = find_matches(frame, check)
    assert sorted(b[:2] for b, _ in boxes) == sorted(spots)
    assert [b[:2] for b, _ in find_matches(frame, check, (0, 0, 600, 720))] in ([(100, 100), (100, 300)],
                                                                               [(100, 300), (100, 100)])
    assert len(find_matches(frame, check, limit=2)) == 2


# ------------------------------------------------------------------------------------------------ scroll, run


def test_scroll_stops_when_the_list_stops_moving_and_run_calls_a_task(session, tmp_path):
    result = _run(session, tmp_path, """tasks:
  - name: to_mail
    description: open the mailbox
    steps: [{type: goto, page: page_mail}]
    success: [{page: page_mail}]
  - name: outer
    description: run a task, then scroll a page that does not move
    steps:
      - {type: run, task: to_mail}
      - {type: scroll, swipe: {start: [640, 500], end: [640, 200]}, until: {page: page_main}, max: 4}
      - {type: scroll, swipe: {start: [640, 500], end: [640, 200]}, until: {page: page_mail}, max: 4}
    success: [{page: page_mail}]
""", "outer")
    assert result.ok, result.text
    steps = {s["step"]: s for s in result.data["steps"]}
    assert steps["0"]["type"] == "run" and steps["0"]["outcome"] == "done"
    assert steps["0/0"]["type"] == "goto"
    assert steps["1"]["outcome"] == "failed" and "stopped moving" in steps["1"]["why"]
    assert steps["2"]["outcome"] == "done" and "after 0 swipe(s)" in steps["2"]["why"]


def test_a_failing_optional_run_is_recorded_and_the_caller_goes_on(session, tmp_path):
    result = _run(session, tmp_path, """tasks:
  - name: wrong
    description: claims the shop
    steps: [{type: goto, page: page_mail}]
    success: [{page: page_dormmenu}]
  - name: caller
    description: goes on past a failed chore
    steps:
      - {type: run, task: wrong, optional: true}
      - {type: run, task: wrong}
    success: [{page: page_mail}]
""", "caller")
    assert not result.ok
    outcomes = [(s["step"], s["outcome"]) for s in result.data["steps"]]
    assert outcomes == [("0", "failed"), ("0/0", "done"), ("1", "failed"), ("1/0", "done")]
    assert "optional" in result.data["steps"][0]["why"]


# ------------------------------------------------------------------------------------------------ load checks


def _one(name: str, steps: str, success: str = "[{page: page_mail}]") -> str:
    return f"  - name: {name}\n    description: d\n    steps:\n{steps}    success: {success}\n"


def test_run_steps_are_checked_for_unknown_tasks_cycles_and_depth(tmp_path):
    run = "      - {{type: run, task: {}}}\n"
    text = "tasks:\n" + _one("a", run.format("b")) + _one("b", run.format("a")) + _one("c", run.format("nope"))
    messages = sorted((p.line, p.message) for p in _problems(tmp_path, text))
    assert messages == [(5, "task a: run steps form a cycle: a -> b -> a"),
                        (10, "task b: run steps form a cycle: b -> a -> b"),
                        (15, "task c: runs unknown task 'nope' (tasks: a, b, c)")]
    leaf = "      - {type: goto, page: page_mail}\n"
    chain = "tasks:\n" + "".join(_one(n, run.format(m)) for n, m in zip("pqrs", "qrst")) + _one("t", leaf)
    (problem,) = _problems(tmp_path, chain)
    assert problem.line == 5 and problem.message == "task p: run steps nest 4 deep; at most 3"


@pytest.mark.parametrize("step, line, message", [
    ("{type: for_each_match, button: NOPE}", 5, "unknown button 'NOPE'"),
    ("{type: for_each_match, button: MAIL_COLLECT, area: [0, 0, 5000, 10]}", 5, "is not inside the screen"),
    ("{type: scroll, swipe: {start: [10, 10], end: [10, 9000]}, until: {page: page_mail}}", 5, "outside the screen"),
    ("{type: tap, button: MAIL_COLLECT, when: {value: {field: nope, op: gt, value: 1}}}", 5,
     "unknown text field 'nope'"),
    ("{type: tap, button: MAIL_COLLECT, collects: {button: NOPE}}", 5, "unknown button 'NOPE'"),
    ("{type: for_each_match, button: MAIL_COLLECT, collects: {button: MAIL_COLLECT, area: [0, 0, 9999, 9]}}", 5,
     "is not inside the screen"),
])
def test_new_steps_name_things_the_graph_has(tmp_path, step, line, message):
    problems = _problems(tmp_path, "tasks:\n" + _one("t", f"      - {step}\n"))
    assert [p.line for p in problems] == [line] and message in problems[0].message, problems


@pytest.mark.parametrize("value, message", [
    ("{field: f, op: lt, value: 1, than: g}", "exactly one of `value`, `than` or `read`"),
    ("{field: f, op: lt, value: soon}", "needs a number or a duration"),
    ("{field: f, op: matches, value: '('}", "bad regular expression"),
    ("{field: f, op: matches, than: g}", "regular expression as value"),
])
def test_value_checks_are_validated_with_a_line(tmp_path, value, message):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "tasks.yaml").write_text("tasks:\n" + _one("t", "      - {type: goto, page: p}\n",
                                                          f"[{{value: {value}}}]"))
    tasks, problems = read_tasks([folder / "tasks.yaml"])
    assert not tasks and problems and problems[0].line == 6 and message in problems[0].message, problems


def test_a_lost_tap_is_not_counted_though_the_next_frame_differs(session, tmp_path, monkeypatch):
    # Every tap on the list is lost and every other frame is black: the frame after each tap differs from the
    # one before, yet the button is still under the tapped spot on the next recognised frame, so nothing counts.
    faults = session.sim.game.faults
    flip = iter([True, False] * 100)
    result = _run(session, tmp_path, """tasks:
  - name: setup
    description: open the research list
    steps: [{type: goto, page: page_research}]
    success: [{page: page_research}]
  - name: lost
    description: collect finished research while every tap is lost
    steps:
      - {type: for_each_match, button: RESEARCH_FINISHED, area: [200, 110, 1000, 590], max: 2}
    success: [{page: page_research}]
""", "setup")
    assert result.ok, result.text
    before = session.sim.game.truth()["state"]["acted"].get("page_research", 0)
    monkeypatch.setattr(faults, "drop_tap", lambda: True)
    monkeypatch.setattr(faults, "black_frame", lambda: next(flip))
    lost = session.tools.alas_run("lost")
    monkeypatch.undo()
    assert not lost.ok and "did nothing after 3 taps" in lost.text, lost.text
    assert lost.data["collected"] == 0
    assert session.sim.game.truth()["state"]["acted"].get("page_research", 0) == before
