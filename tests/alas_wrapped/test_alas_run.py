"""alas_run alas:<Task>: a user's ALAS task run through ALAS's own code path (AzurLaneAutoScript.run) in a worker
the engine bounds, kills and verifies, against the simulator over the real ADB protocol.

The checkout is assembled from ALAS's real configuration files (conftest.py); its code is the stand-ins of
tests/data/alas_standin (ALAS's run, config and device in their real shape), whose task functions follow the test's
plan: tap, raise one of ALAS's exceptions, print, flood, block forever, or spawn a child that ignores TERM. Their
interpreter is this one (the driver needs only the standard library and the checkout).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

from alas_wrapped.checkout import Checkout
from alas_wrapped.provider import AlasProvider, adb_warning
from alas_wrapped.worker import group_members
from engine.runtime.session import open_session
from tests.alas_wrapped.conftest import ROOT, plan
from tests.speed import within

SHORT = """policies:
  alas:Research: {timeout: 6, attempts: 1, wait: {type: none}, retry_on: []}
  alas:Dorm: {timeout: 7, attempts: 1, wait: {type: none}, retry_on: []}
"""
HANG = [{"print": "working"}, {"hang": True}]
STUBBORN = [{"ignore_term": True}, {"child": "talks"}, {"print": "parent ignores TERM too"}, {"hang": True}]


def centre(area) -> list[int]:
    x1, y1, x2, y2 = area
    return [(x1 + x2) // 2, (y1 + y2) // 2]


@pytest.fixture
def session(checkout, tmp_path):
    policies = tmp_path / "policies.yaml"
    policies.write_text(SHORT)
    plan(checkout, Research=HANG, Dorm=STUBBORN)
    s = open_session(providers=[AlasProvider(Checkout.open(checkout, sys.executable))], policies_file=policies,
                     transcript_dir=tmp_path / "transcript")
    yield s
    s.close()


def worker_pid(result) -> int:
    return result.data["worker"]["pid"]


def logged(session) -> list[str]:
    return [e["line"] for e in map(json.loads, session.transcript.path.read_text().splitlines())
            if e.get("kind") == "worker_log"]


def reward_point(session) -> list[int]:
    link = next(lk for p in session.graph.pages if p.name == "page_main" for lk in p.links if lk.to == "page_reward")
    return centre(session.graph.button(link.action.button).click_area)


# ------------------------------------------------------------------------------------------------ listing


def test_alas_tasks_are_listed_beside_ours_with_their_bounds(session):
    tasks = {t["name"]: t for t in session.tools.alas_tools().data["tasks"]}
    assert "mail.collect" in tasks and "daily" in tasks  # our YAML tasks stay listed
    # alas (60 s) for most, the shipped alas:Commission (300 s), the test's own alas:Research (6 s)
    assert tasks["alas:Reward"]["bound_s"] == 60.0 and tasks["alas:Research"]["bound_s"] == 6.0
    assert tasks["alas:Commission"]["bound_s"] == 300.0 and tasks["alas:Reward"]["enabled"] is True


# ------------------------------------------------------------------------------------------------ running


def test_a_task_drives_the_engines_device_and_the_engine_verifies_the_screen(session, checkout, caplog):
    point = reward_point(session)
    plan(checkout, Commission=[{"tap": point}])
    assert session.tools.alas_goto("page_main").ok
    result = session.tools.alas_run("alas:Commission")
    assert result.ok and result.status == "verified", result.text
    assert result.data["tool_success"] is True and result.data["state_verification"] == "verified"
    # ALAS's serial and ADB port were the simulator's: its tap moved the simulated game
    assert result.data["observation"]["page"] == "page_reward" == session.sim.game.truth()["page"]
    assert any("Commission: done" in line for line in result.data["worker"]["last_lines"])
    assert not group_members(worker_pid(result))
    lines = logged(session)
    assert any(f"Click ({point[0]}, {point[1]})" in x for x in lines) and any("[AdbDevice] AdbDevice(sim-0)" in x
                                                                             for x in lines)
    assert not [r for r in caplog.records if "ADB server" in r.getMessage()]  # the simulator is on loopback


def test_the_adb_warning_is_said_only_when_alas_cannot_reach_the_device():
    assert adb_warning("alas:Reward", SimpleNamespace(host="127.0.0.1", port=40123, serial="sim-0")) is None
    assert adb_warning("alas:Reward", SimpleNamespace(host="localhost", port=5037, serial="emulator-5554")) is None
    said = adb_warning("alas:Reward", SimpleNamespace(host="10.0.0.5", port=5037, serial="emulator-5554"))
    assert said is not None and "10.0.0.5:5037" in said and "127.0.0.1" in said


def test_a_worker_that_claims_success_under_a_blocking_popup_is_not_ok(session, checkout):
    plan(checkout, Reward=[{"tap": centre(session.graph.button("MAIL_COLLECT_ALL").click_area)}])
    assert session.tools.alas_goto("page_mail").ok
    result = session.tools.alas_run("alas:Reward")
    assert session.sim.game.truth()["popups"] == ["GET_ITEMS_1"]
    assert not result.ok and result.status == "popup_blocking", result.text
    assert result.data["tool_success"] is True and "GET_ITEMS_1" in result.text


@pytest.mark.parametrize("steps, status, exception, source, suggested", [
    ([{"raise": "GameStuckError", "message": "Wait too long"}], "game_stuck", "GameStuckError", "driver",
     "restart_app"),
    ([{"raise": "GameNotRunningError", "message": "Game died"}], "game_not_running", "GameNotRunningError",
     "driver", "restart_app"),
    ([{"raise": "GamePageUnknownError"}], "game_page_unknown", "GamePageUnknownError", "driver", "human"),
    ([{"raise": "HardNotSatisfied"}], "hard_not_satisfied", "HardNotSatisfied", "driver", "human"),
    ([{"raise": "RequestHumanTakeover"}], "request_human_takeover", "RequestHumanTakeover", "driver", "human"),
    ([{"raise": "ScriptError", "message": "a bug"}], "script_error", "ScriptError", "driver", "human"),
    ([{"raise": "NotAnAlasError", "message": "a bug in the task"}], "alas_error", None, "exit_code", "human"),
])
def test_alas_exceptions_become_statuses_and_the_engine_still_looks(session, checkout, steps, status, exception,
                                                                    source, suggested):
    plan(checkout, Tactical=steps)
    result = session.tools.alas_run("alas:Tactical")
    assert not result.ok and result.status == status and result.data["tool_success"] is False, result.text
    assert result.data["worker"]["alas"] == {"status": status, "exception": exception, "source": source}
    assert result.data["screenshot_analysis"]["suggested_action"] == suggested
    assert result.data["worker"]["exit_code"] == 1 and result.data["observation"]["page"] == "page_login"


def test_too_many_clicks_is_alas_own_click_record_and_alas_schedules_its_restart(session, checkout):
    plan(checkout, Commission=[{"tap": [5, 5], "wait": 0.02}] * 12)
    result = session.tools.alas_run("alas:Commission")
    assert result.status == "game_too_many_clicks" and "Too many click for a button" in result.text, result.text
    restart = json.loads((checkout / "config" / "alas.json").read_text())["Restart"]["Scheduler"]
    assert restart["Enable"] is True and restart["NextRun"] != "2020-01-01 00:00:00"  # ALAS's own run did that


def test_every_output_line_reaches_the_transcript_and_no_secret_reaches_the_worker(session, checkout, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "literal-key-5678")
    plan(checkout, Meowfficer=[{"env": "GEMINI_API_KEY"}, {"lines": 200}])
    result = session.tools.alas_run("alas:Meowfficer")
    assert result.ok, result.text
    lines = logged(session)
    assert [x for x in lines if x.startswith("line ")] == [f"line {i}" for i in range(200)]
    assert "GEMINI_API_KEY=None" in lines and "literal-key-5678" not in session.transcript.path.read_text()


def test_a_flood_of_output_is_cut_and_bounded_not_held(session, checkout):
    plan(checkout, Guild=[{"flood": 30_000}])
    result = session.tools.alas_run("alas:Guild")
    assert result.ok, result.text
    worker = result.data["worker"]
    assert all(len(line) <= 2000 for line in worker["last_lines"]) and "flood 29999" in worker["last_lines"]
    lines = logged(session)
    long = next(i for i, x in enumerate(lines) if x.startswith("xxx"))
    assert lines[long + 1] == "flood 0"  # the rest of the 5 MB line was skipped, not read as more lines
    assert max(map(len, lines)) == 2000 and len(lines) + worker["dropped_lines"] >= 30_000


@pytest.mark.parametrize("task, said", [
    ("alas:Restart", "use our bounded `login` task"),
    ("alas:Daemon", "needs a human: it is on the Tools page of ALAS's GUI"),
    ("alas:General", "is a group of settings that ALAS's tasks share, not a task"),
])
def test_what_is_not_a_task_is_refused_with_the_reason(session, task, said):
    result = session.tools.alas_run(task)
    assert not result.ok and result.status == "refused" and said in result.text, result.text
    assert result.data["screenshot_analysis"]["suggested_action"] == "human"


def test_an_unknown_task_gets_did_you_mean(session):
    result = session.tools.alas_run("alas:Comission")
    assert result.status == "unknown_task" and "did you mean alas:Commission" in result.text


# ------------------------------------------------------------------------------------------------ bounds


def test_an_overrunning_task_is_killed_with_its_whole_group_inside_the_bound(session):
    started = time.monotonic()
    result = session.tools.alas_run("alas:Research")
    elapsed = time.monotonic() - started
    assert not result.ok and result.status == "timeout" and result.data["worker"]["killed"] == "timeout"
    within(elapsed, 6.0, "overrunning alas_run killed, wall (s)")
    assert result.data["worker"]["survivors"] == [] and not group_members(worker_pid(result))
    assert result.data["worker"]["exit_code"] == -15  # TERM ended it, and its exit status was collected
    assert result.data["observation"]["page"] == "page_login"


def test_what_a_task_leaves_running_after_it_exits_is_killed_and_reported(session, checkout):
    plan(checkout, Awaken=[{"ignore_term": True}, {"child": "quiet"}])
    result = session.tools.alas_run("alas:Awaken")
    assert result.ok and result.status == "verified", result.text  # the task itself succeeded
    assert result.data["worker"]["killed"] == "leftovers after exit" and result.data["worker"]["survivors"] == []
    assert not group_members(worker_pid(result))


def _start(session, task: str, **kwargs) -> tuple[threading.Thread, dict]:
    box: dict = {}
    thread = threading.Thread(target=lambda: box.update(result=session.tools.call("alas_run", {"name": task},
                                                                                  **kwargs)))
    thread.start()
    provider = session.tools.providers[0]
    deadline = time.monotonic() + 10
    while not provider.state()["running"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert provider.state()["running"], "the worker did not start"
    return thread, box


def test_while_the_worker_owns_the_device_health_and_state_answer_and_actions_are_busy(session):
    thread, box = _start(session, "alas:Research")
    try:
        health = session.tools.adb_health()
        assert health.data["health"]["alas"]["running"]["task"] == "alas:Research"
        state = session.tools.alas_state()
        assert state.data["external"][0]["running"]["task"] == "alas:Research" and state.data["busy"]
        started = time.monotonic()
        goto = session.tools.alas_goto("page_main")
        assert goto.status == "busy" and "alas:Research owns the device" in goto.text
        within(time.monotonic() - started, 1.0, "busy answer while the worker runs, wall (s)")
        assert session.tools.adb_tap(10, 10).status == "busy"
    finally:
        thread.join(15)
    assert box["result"].status == "timeout"
    assert session.tools.alas_goto("page_main").ok  # the device is ours again


def test_cancel_kills_the_group_at_once(session):
    cancel = threading.Event()
    thread, box = _start(session, "alas:Dorm", cancel=cancel)
    time.sleep(0.3)
    pid = session.tools.providers[0].state()["running"]["pid"]
    cancel.set()
    thread.join(10)
    assert box["result"].status == "cancelled"  # answered at once; the run's thread kills the group meanwhile
    deadline = time.monotonic() + 5
    while group_members(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not group_members(pid)  # the parent and its child ignore TERM: KILL ended them


def test_closing_the_engine_kills_a_running_worker(checkout):
    plan(checkout, Dorm=STUBBORN)
    s = open_session(providers=[AlasProvider(Checkout.open(checkout, sys.executable))])
    thread, _ = _start(s, "alas:Dorm")
    pid = s.tools.providers[0].state()["running"]["pid"]
    s.close()
    assert not group_members(pid)
    thread.join(15)


# ------------------------------------------------------------------------------------------------ CLI and MCP


def test_the_cli_runs_an_alas_task_and_health_shows_the_checkout(checkout):
    common = ["--alas", str(checkout), "--alas-python", sys.executable, "--json"]
    run = subprocess.run([sys.executable, "-m", "engine", "run", "alas:Reward", *common], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    result = json.loads(run.stdout)
    assert run.returncode == 0 and result["ok"] and result["data"]["worker"]["exit_code"] == 0, run.stderr[-2000:]
    assert "Reward: nothing to do" in run.stderr and "alas:Reward | " in run.stderr  # ALAS's log, on stderr
    assert "ADB server" not in run.stderr  # no warning that does not apply to the simulator
    health = subprocess.run([sys.executable, "-m", "engine", "health", *common], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    alas = json.loads(health.stdout)["data"]["health"]["alas"]
    assert alas["root"] == str(checkout.resolve()) and alas["python"] == sys.executable and alas["tasks"] >= 50
    refused = subprocess.run([sys.executable, "-m", "engine", "run", "alas:Daemon", *common], capture_output=True,
                             text=True, timeout=120, cwd=ROOT)
    assert refused.returncode == 2 and json.loads(refused.stdout)["status"] == "refused"
    unknown = subprocess.run([sys.executable, "-m", "engine", "run", "alas:Comission", *common[:-1]],
                             capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert unknown.returncode == 2 and "did you mean alas:Commission" in unknown.stdout


def test_an_mcp_client_lists_and_runs_alas_tasks_while_health_answers(checkout, tmp_path):
    from tests.engine.test_mcp_server import body, open_client, server_params

    policies = tmp_path / "policies.yaml"
    policies.write_text(SHORT)
    plan(checkout, Research=HANG)
    client, close = open_client(server_params("--alas", str(checkout), "--alas-python", sys.executable,
                                              "--policies", str(policies)))
    try:
        run_tool = next(t for t in client.list_tools().tools if t.name == "alas_run")
        assert "alas:Commission" in run_tool.description and "alas:Research 6 s" in run_tool.description
        listed = {t["name"]: t for t in body(client.call("alas_tools"))["data"]["tasks"]}
        assert listed["alas:Reward"]["kind"] == "alas" and listed["alas:Reward"]["bound_s"] == 60.0
        hang = client.start("alas_run", {"name": "alas:Research"})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until the worker runs (health says so)
            health = body(client.call("adb_health", timeout=10))
            if health["data"]["health"]["alas"]["running"]:
                break
            time.sleep(0.05)
        assert health["data"]["health"]["alas"]["running"]["task"] == "alas:Research"
        hung = body(hang.result(timeout=30))
        assert hung["status"] == "timeout" and not group_members(hung["data"]["worker"]["pid"])
        reward = body(client.call("alas_run", {"name": "alas:Reward"}))
        assert reward["ok"] and reward["data"]["tool_success"] and reward["data"]["state_verification"] == "verified"
    finally:
        close()


def test_sigterm_to_the_engine_kills_the_worker_group_before_it_exits(checkout):
    import re
    import signal

    plan(checkout, Dorm=STUBBORN)
    engine = subprocess.Popen([sys.executable, "-m", "engine", "-v", "run", "alas:Dorm", "--alas", str(checkout),
                               "--alas-python", sys.executable], cwd=ROOT, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    pid, seen = None, []
    try:
        for line in engine.stderr:  # bounded by the worker's own 60 s bound at worst; it prints within a second
            seen.append(line)
            pid = pid or (int(m.group(1)) if (m := re.search(r"worker (\d+) started", line)) else None)
            if "parent ignores TERM too" in line:
                break
        assert pid is not None, "".join(seen[-20:])
        engine.send_signal(signal.SIGTERM)
        assert engine.wait(timeout=30) == 130
    finally:
        engine.kill()
        engine.wait()
        engine.stderr.close()
    assert not group_members(pid)
