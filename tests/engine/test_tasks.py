"""Named tasks: declared in YAML, checked against the graph at load time, run and verified in the simulator."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config.loader import load_graph
from engine.config.taskfiles import load_tasks
from engine.config.tasks import tasks_json_schema
from engine.core.errors import GraphError
from engine.core.paths import builtin_graph_dir
from engine.runtime.session import open_session

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "tests" / "data" / "graphs" / "good"


@pytest.fixture
def session():
    s = open_session()
    yield s
    s.close()


def test_shipped_tasks_load_and_the_schema_file_is_current():
    book = load_tasks(builtin_graph_dir(), load_graph())
    assert {"login", "mail.collect", "commission.status"} <= set(book.names())
    committed = json.loads((ROOT / "pages" / "tasks.schema.json").read_text())
    assert committed == tasks_json_schema(), "run: python -m engine schema --tasks > pages/tasks.schema.json"


def test_login_reaches_the_main_menu_through_announcements(session):
    game = session.sim.game
    assert game.truth()["page"] == "page_login"
    game.show_popup("LOGIN_ANNOUNCE")
    result = session.tools.alas_run("login")
    assert result.ok, result.text
    truth = game.truth()
    assert truth["page"] == "page_main" and not truth["popups"]
    assert any(e["kind"] == "dismiss" for e in session.tools.last_run.steps)


def test_mail_collect_taps_the_control_and_clears_the_reward(session):
    result = session.tools.alas_run("mail.collect")
    assert result.ok, result.text
    truth = session.sim.game.truth()
    assert truth["page"] == "page_mail" and not truth["popups"] and truth["controls"] == 1


def test_commission_status_reads_the_fields_with_ocr(session):
    result = session.tools.alas_run("commission.status")
    assert result.ok, result.text
    fields = {f.name: f.sample for f in session.graph.page("page_commission").fields}
    assert result.data["values"] == {"running": fields["commission_running"], "daily": fields["commission_daily"]}
    assert session.sim.game.truth()["page"] == "page_commission"


def test_unknown_task_names_suggest_the_closest(session):
    result = session.tools.alas_run("mail.colect")
    assert not result.ok and result.status == "unknown_task"
    assert result.data["suggestions"][0] == "mail.collect"


def _demo_with_tasks(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder)
    (folder / "tasks.yaml").write_text(text)
    return folder


GOOD_DEMO_TASKS = """
tasks:
  - name: collect
    description: collect the mail reward
    steps:
      - {type: goto, page: page_mail}
      - {type: tap, button: MAIL_COLLECT}
      - {type: wait_for, until: {popup: popup_reward}, timeout: 3}
      - {type: dismiss_popups}
    success: [{page: page_mail}, {no_popup: true}]
  - name: claims_too_much
    description: ends on the mail page but claims the shop
    steps:
      - {type: goto, page: page_mail}
    success: [{page: page_shop}]
"""


def test_tasks_run_on_any_graph_and_success_is_checked_by_observation(tmp_path):
    folder = _demo_with_tasks(tmp_path, GOOD_DEMO_TASKS)
    with open_session(graph_dir=folder) as s:
        assert s.tools.alas_tools().data["tasks"][0]["name"] == "collect"
        ok = s.tools.alas_run("collect")
        assert ok.ok, ok.text
        assert s.sim.game.truth()["controls"] == 1
        claimed = s.tools.alas_run("claims_too_much")
        assert not claimed.ok and claimed.status == "not_verified"
        assert s.sim.game.truth()["page"] == "page_mail"


def test_a_task_naming_unknown_things_is_refused_with_file_and_line(tmp_path):
    folder = _demo_with_tasks(tmp_path, """tasks:
  - name: broken
    description: names a page that does not exist
    steps:
      - {type: goto, page: page_nowhere}
    success: [{page: page_main}]
""")
    with pytest.raises(GraphError) as info:
        load_tasks(folder, load_graph(folder))
    problem = info.value.problems[0]
    assert problem.file.endswith("tasks.yaml") and problem.line == 5
    assert "page_nowhere" in problem.message


def test_cli_tasks_and_run():
    listing = subprocess.run([sys.executable, "-m", "engine", "tasks", "--json"], capture_output=True, text=True,
                             timeout=60, cwd=ROOT)
    assert listing.returncode == 0
    assert "commission.status" in [t["name"] for t in json.loads(listing.stdout)]
    run = subprocess.run([sys.executable, "-m", "engine", "run", "commission.status", "--json"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["ok"] and result["data"]["values"]["running"]
    bad = subprocess.run([sys.executable, "-m", "engine", "run", "nope"], capture_output=True, text=True,
                         timeout=60, cwd=ROOT)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_a_recorded_goto_is_saved_as_a_trace_and_replays_as_a_task(tmp_path):
    from engine.config.taskfiles import TaskBook
    from engine.config.tasks import task_from_trace
    from engine.runtime.transcript import load_trace

    with open_session(transcript_dir=tmp_path) as s:
        assert s.tools.alas_goto("page_commission").ok
        traces = sorted((tmp_path / "traces").glob("*.json"))
        assert traces, "a successful goto leaves a trace"
        trace = load_trace(traces[-1])
        hops = [step for step in trace["steps"] if step.get("kind") == "action"]
        assert hops[0]["precondition"] == {"page": "page_login"}
        assert hops[-1]["success"] == {"page": "page_commission"}
        task = task_from_trace(trace, "replay.commission")
        assert [step.page for step in task.steps] == ["page_main", "page_reward", "page_commission"]
        s.tasks.book = TaskBook([task])
        s.sim.game.goto("page_dock")  # replays from wherever the game is
        replay = s.tools.alas_run("replay.commission")
        assert replay.ok, replay.text
        assert s.sim.game.truth()["page"] == "page_commission"


def test_a_failed_goto_leaves_an_error_bundle_with_frames_and_the_transcript_slice(tmp_path, monkeypatch):
    from engine.navigation import recovery
    from engine.sim import Scenario

    monkeypatch.setattr(recovery, "MAX_RESTARTS", 0)  # (a popup that never goes away is no longer restarted away)
    with open_session(transcript_dir=tmp_path) as s:
        assert s.tools.alas_goto("page_main").ok
        s.sim.game.faults.scenario = Scenario(popup_chain_p=1.0, popups=["GET_ITEMS_1", "GET_ITEMS_2"])
        s.sim.game.show_popup("GET_ITEMS_1")
        result = s.tools.alas_goto("page_reward")
        assert not result.ok
        bundle = Path(result.data["error_bundle"])
        assert bundle.parent == tmp_path / "error_bundles"
        assert list(bundle.glob("*.png")), "the last frames"
        entries = [json.loads(line) for line in (bundle / "transcript.jsonl").read_text().splitlines()]
        assert entries[0]["kind"] == "request" and entries[-1]["kind"] == "result"
        assert json.loads((bundle / "result.json").read_text())["status"] == result.status


def _task(name: str, step: str) -> str:
    return (f"  - name: {name}\n    description: d\n    steps:\n      - {step}\n"
            "    success: [{page: page_mail}]\n")


def test_a_duplicate_task_name_is_reported_at_its_line(tmp_path):
    folder = _demo_with_tasks(tmp_path, "tasks:\n" + _task("mail", "{type: goto, page: page_mail}") * 2)
    with pytest.raises(GraphError) as info:
        load_tasks(folder, load_graph(folder))
    (problem,) = info.value.problems
    assert (problem.file, problem.line, problem.col) == (str(folder / "tasks.yaml"), 7, 5)
    assert problem.message == (f"task 'mail' is declared twice (first at {folder / 'tasks.yaml'}:2); "
                               "give each task its own name")


@pytest.mark.parametrize("step, col, message", [
    ("{type: wait_for, until: {page: page_mail}, timeout: .nan}", 52, "timeout: expected a finite number, got nan"),
    ("{type: click, button: MAIL_COLLECT}", 9, "unknown step type 'click'"),
    ("{type: goto, pgae: page_mail}", 22, "unknown field 'pgae' (did you mean 'page'?)"),
])
def test_task_schema_errors_have_a_line_the_field_and_a_hint(tmp_path, step, col, message):
    from engine.config.taskfiles import read_tasks, task_files

    folder = _demo_with_tasks(tmp_path, "tasks:\n" + _task("mail", step))
    tasks, problems = read_tasks(task_files(folder))
    assert tasks == [] and {p.line for p in problems} == {5}
    assert [(p.col, p.message) for p in problems if message in p.message] == [(col, problems[-1].message)]


def test_task_files_get_the_yaml_reader_limits(tmp_path):
    folder = _demo_with_tasks(tmp_path, "")
    (folder / "tasks.yaml").write_bytes(b"tasks:\n  - name: caf\xe9\n")
    with pytest.raises(GraphError) as info:
        load_tasks(folder)
    (problem,) = info.value.problems
    assert problem.line == 2 and "not UTF-8" in problem.message
