"""alas_run alas:<Task>: a user's ALAS tasks run by ALAS's interpreter in a worker the engine bounds, kills and
verifies, against the simulator over the real ADB protocol.

ALAS cannot be installed here, so tests/data/alas_checkout is an ALAS-shaped checkout (ALAS's entry point and
configuration layout) whose tasks tap through adbutils, finish, fail, crash, print, block forever, or spawn a child
that ignores TERM. Its interpreter is this one (the driver needs only the standard library and the checkout).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from alas_wrapped.checkout import Checkout
from alas_wrapped.provider import AlasProvider
from alas_wrapped.worker import group_members
from engine.errors import ConfigError
from engine.session import open_session

ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = ROOT / "tests" / "data" / "alas_checkout"
SHORT = """policies:
  alas:Hang: {timeout: 6, attempts: 1, wait: {type: none}, retry_on: []}
  alas:Stubborn: {timeout: 7, attempts: 1, wait: {type: none}, retry_on: []}
"""


def centre(area) -> list[int]:
    x1, y1, x2, y2 = area
    return [(x1 + x2) // 2, (y1 + y2) // 2]


@pytest.fixture
def checkout(tmp_path):
    """A copy of the fake checkout whose config the test may edit (ALAS writes its own config too)."""
    folder = tmp_path / "AzurLaneAutoScript"
    shutil.copytree(CHECKOUT, folder)
    return folder


def taps(folder: Path, task: str, points: list[list[int]]) -> None:
    path = folder / "config" / "alas.json"
    data = json.loads(path.read_text())
    data[task]["Fake"]["Taps"] = points
    path.write_text(json.dumps(data))


@pytest.fixture
def session(checkout, tmp_path):
    policies = tmp_path / "policies.yaml"
    policies.write_text(SHORT)
    s = open_session(providers=[AlasProvider(Checkout.open(checkout, sys.executable))], policies_file=policies,
                     transcript_dir=tmp_path / "transcript")
    yield s
    s.close()


def worker_pid(result) -> int:
    return result.data["worker"]["pid"]


# ------------------------------------------------------------------------------------------------ discovery


def test_discovery_reads_the_checkout_as_data_and_lists_alas_tasks_beside_ours(session):
    tasks = {t["name"]: t for t in session.tools.alas_tools().data["tasks"]}
    alas = sorted(n for n in tasks if n.startswith("alas:"))
    assert alas == ["alas:Chatty", "alas:Commission", "alas:Crash", "alas:Fail", "alas:Flood", "alas:Hang",
                    "alas:Mail", "alas:Orphan", "alas:Reward", "alas:Stubborn"]  # settings groups (Alas, General) and the login-like Restart: not
    assert "mail.collect" in tasks and "daily" in tasks  # our YAML tasks stay listed
    assert tasks["alas:Commission"]["description"] == "ALAS: Commission - Collect finished commissions and " \
                                                       "dispatch new ones"
    # alas (60 s) for most, the shipped alas:Commission (300 s), the test's own alas:Hang (6 s)
    assert tasks["alas:Reward"]["bound_s"] == 60.0 and tasks["alas:Hang"]["bound_s"] == 6.0
    assert tasks["alas:Commission"]["bound_s"] == 300.0


@pytest.mark.parametrize("change, message", [
    (lambda f: shutil.rmtree(f), "no such folder"),
    (lambda f: (f / "alas.py").unlink(), "not an ALAS checkout (no alas.py)"),
    (lambda f: (f / "config" / "alas.json").unlink(), "no config/alas.json"),
    (lambda f: (f / "module/config/argument/task.yaml").write_text("Commission: [Scheduler\n  bad: ]"),
     "task.yaml:2"),
    (lambda f: (f / "module/config/argument/task.yaml").write_text(
        "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, "
                                                          f"*{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi"))),
     "task.yaml"),  # a billion laughs: refused at once, not expanded
    (lambda f: (f / "module/config/argument/task.yaml").write_text("- just\n- a list\n"),
     "expected a mapping of task name to settings groups"),
])
def test_a_wrong_checkout_is_a_clear_config_error(checkout, change, message):
    change(checkout)
    with pytest.raises(ConfigError) as err:
        Checkout.open(checkout, sys.executable)
    assert message in str(err.value)


def test_the_cli_refuses_a_wrong_checkout_with_exit_2(tmp_path):
    run = subprocess.run([sys.executable, "-m", "engine", "run", "alas:Reward", "--alas", str(tmp_path / "nope")],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 2 and "no such folder" in run.stdout + run.stderr and "Traceback" not in run.stderr


def test_the_cli_runs_an_alas_task_and_health_shows_the_checkout(checkout):
    common = ["--alas", str(checkout), "--alas-python", sys.executable, "--json"]
    run = subprocess.run([sys.executable, "-m", "engine", "run", "alas:Reward", *common], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    result = json.loads(run.stdout)
    assert run.returncode == 0 and result["ok"] and result["data"]["worker"]["exit_code"] == 0, run.stderr[-2000:]
    assert "alas:Reward | Reward: nothing to do" in run.stderr  # ALAS's log lines, on stderr
    health = subprocess.run([sys.executable, "-m", "engine", "health", *common], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    alas = json.loads(health.stdout)["data"]["health"]["alas"]
    assert alas["root"] == str(checkout.resolve()) and alas["python"] == sys.executable and alas["tasks"] == 10


# ------------------------------------------------------------------------------------------------ running


def test_a_task_that_taps_runs_and_the_engine_verifies_the_screen(session, checkout):
    button = session.graph.button("MAIN_GOTO_REWARD") if any(b.name == "MAIN_GOTO_REWARD"
                                                              for b in session.graph.buttons) else None
    link = next(lk for p in session.graph.pages if p.name == "page_main" for lk in p.links
                if lk.to == "page_reward")
    point = centre(session.graph.button(link.action.button).click_area) if button is None else \
        centre(button.click_area)
    taps(checkout, "Commission", [point])
    assert session.tools.alas_goto("page_main").ok
    result = session.tools.alas_run("alas:Commission")
    assert result.ok and result.status == "verified", result.text
    assert result.data["tool_success"] is True and result.data["state_verification"] == "verified"
    assert result.data["observation"]["page"] == "page_reward" == session.sim.game.truth()["page"]
    assert "Commission done" in result.data["worker"]["last_lines"]
    assert not group_members(worker_pid(result))
    logged = [json.loads(line) for line in session.transcript.path.read_text().splitlines()]
    lines = [e["line"] for e in logged if e.get("kind") == "worker_log"]
    assert f"tap {point[0]} {point[1]}" in lines and "Commission done" in lines


def test_a_worker_that_claims_success_under_a_blocking_popup_is_not_ok(session, checkout):
    taps(checkout, "Mail", [centre(session.graph.button("MAIL_COLLECT_ALL").click_area)])
    assert session.tools.alas_goto("page_mail").ok
    result = session.tools.alas_run("alas:Mail")
    assert session.sim.game.truth()["popups"] == ["GET_ITEMS_1"]
    assert not result.ok and result.status == "popup_blocking", result.text
    assert result.data["tool_success"] is True and "GET_ITEMS_1" in result.text


@pytest.mark.parametrize("task, line", [("alas:Fail", "ERROR GameStuckError: Wait too long"),
                                        ("alas:Crash", "CRITICAL RuntimeError: a bug in the task")])
def test_a_failing_or_crashing_task_reports_its_exit_and_last_lines(session, task, line):
    result = session.tools.alas_run(task)
    assert not result.ok and result.status == "worker_failed" and result.data["tool_success"] is False
    assert result.data["worker"]["exit_code"] == 1 and line in result.data["worker"]["last_lines"]
    assert result.data["observation"]["page"] == "page_login"  # the engine still looked


def test_every_output_line_reaches_the_transcript_and_no_secret_reaches_the_worker(session, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "literal-key-5678")
    result = session.tools.alas_run("alas:Chatty")
    assert result.ok, result.text
    text = session.transcript.path.read_text()
    lines = [e["line"] for e in map(json.loads, text.splitlines()) if e.get("kind") == "worker_log"]
    assert [x for x in lines if x.startswith("line ")] == [f"line {i}" for i in range(200)]
    assert "key=None" in lines and "literal-key-5678" not in text


def test_a_flood_of_output_is_cut_and_bounded_not_held(session):
    result = session.tools.alas_run("alas:Flood")
    assert result.ok, result.text
    worker = result.data["worker"]
    assert all(len(line) <= 2000 for line in worker["last_lines"]) and worker["last_lines"][-2] == "flood 29999"
    text = session.transcript.path.read_text()
    logged = [e["line"] for e in map(json.loads, text.splitlines()) if e.get("kind") == "worker_log"]
    long = next(i for i, x in enumerate(logged) if x.startswith("xxx"))
    assert logged[long + 1] == "flood 0"  # the rest of the 5 MB line was skipped, not read as more lines
    assert max(map(len, logged)) == 2000 and len(logged) + worker["dropped_lines"] >= 30_000


def test_login_like_tasks_are_refused_with_a_pointer_to_ours(session):
    result = session.tools.alas_run("alas:Restart")
    assert not result.ok and result.status == "refused" and "`login`" in result.text
    unknown = session.tools.alas_run("alas:Nope")
    assert unknown.status == "unknown_task" and "alas:" in unknown.text


# ------------------------------------------------------------------------------------------------ bounds


@pytest.mark.parametrize("task, bound", [("alas:Hang", 6.0)])  # a TERM-ignoring group: the cancel test
def test_an_overrunning_task_is_killed_with_its_whole_group_inside_the_bound(session, task, bound):
    started = time.monotonic()
    result = session.tools.alas_run(task)
    elapsed = time.monotonic() - started
    assert not result.ok and result.status == "timeout" and result.data["worker"]["killed"] == "timeout"
    assert elapsed < bound, elapsed
    assert result.data["worker"]["survivors"] == [] and not group_members(worker_pid(result))
    assert result.data["observation"]["page"] == "page_login"


def test_what_a_task_leaves_running_after_it_exits_is_killed_and_reported(session):
    result = session.tools.alas_run("alas:Orphan")
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
    thread, box = _start(session, "alas:Hang")
    try:
        health = session.tools.adb_health()
        assert health.data["health"]["alas"]["running"]["task"] == "alas:Hang"
        state = session.tools.alas_state()
        assert state.data["external"][0]["running"]["task"] == "alas:Hang" and state.data["busy"]
        started = time.monotonic()
        goto = session.tools.alas_goto("page_main")
        assert goto.status == "busy" and "alas:Hang owns the device" in goto.text
        assert time.monotonic() - started < 1.0
        assert session.tools.adb_tap(10, 10).status == "busy"
    finally:
        thread.join(15)
    assert box["result"].status == "timeout"
    assert session.tools.alas_goto("page_main").ok  # the device is ours again


def test_cancel_kills_the_group_at_once(session):
    cancel = threading.Event()
    thread, box = _start(session, "alas:Stubborn", cancel=cancel)
    time.sleep(0.3)
    pid = session.tools.providers[0].state()["running"]["pid"]
    cancel.set()
    thread.join(10)
    assert box["result"].status == "cancelled"  # answered at once; the run's thread kills the group meanwhile
    deadline = time.monotonic() + 5
    while group_members(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not group_members(pid)  # the parent and its child ignore TERM: KILL ended them


def test_closing_the_engine_kills_a_running_worker(checkout, tmp_path):
    s = open_session(providers=[AlasProvider(Checkout.open(checkout, sys.executable))])
    thread, _ = _start(s, "alas:Stubborn")
    pid = s.tools.providers[0].state()["running"]["pid"]
    s.close()
    assert not group_members(pid)
    thread.join(15)


# ------------------------------------------------------------------------------------------------ MCP


def test_an_mcp_client_lists_and_runs_alas_tasks_while_health_answers(checkout, tmp_path):
    from tests.engine.test_mcp_server import body, open_client, server_params

    policies = tmp_path / "policies.yaml"
    policies.write_text(SHORT)
    client, close = open_client(server_params("--alas", str(checkout), "--alas-python", sys.executable,
                                              "--policies", str(policies)))
    try:
        run_tool = next(t for t in client.list_tools().tools if t.name == "alas_run")
        assert "alas:Commission" in run_tool.description and "alas:Hang 6 s" in run_tool.description
        listed = body(client.call("alas_tools"))["data"]["tasks"]
        assert {"name": "alas:Reward", "description": "ALAS: Reward", "kind": "alas", "bound_s": 60.0} in listed
        hang = client.start("alas_run", {"name": "alas:Hang"})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until the worker runs (health says so)
            health = body(client.call("adb_health", timeout=10))
            if health["data"]["health"]["alas"]["running"]:
                break
            time.sleep(0.05)
        assert health["data"]["health"]["alas"]["running"]["task"] == "alas:Hang"
        hung = body(hang.result(timeout=30))
        assert hung["status"] == "timeout" and not group_members(hung["data"]["worker"]["pid"])
        reward = body(client.call("alas_run", {"name": "alas:Reward"}))
        assert reward["ok"] and reward["data"]["tool_success"] and reward["data"]["state_verification"] == "verified"
    finally:
        close()


def test_sigterm_to_the_engine_kills_the_worker_group_before_it_exits(checkout):
    import re
    import signal

    engine = subprocess.Popen([sys.executable, "-m", "engine", "-v", "run", "alas:Stubborn", "--alas", str(checkout),
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
