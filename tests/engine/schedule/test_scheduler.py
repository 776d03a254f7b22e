"""The scheduler's workers: faults escalate and are never silent, the clock may jump, controls reach a running
scheduler through the database, and the whole thing runs in simulated time against the simulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from engine.config.schedule import Due, Entry, Retry, Schedule, parse_zone
from engine.core.results import make_result
from engine.runtime.scheduler import Worker
from engine.schedule.store import Store

ROOT = Path(__file__).resolve().parents[3]
NOW = 1_800_000_000.0


class FakeTime:
    """Wall and monotonic clocks that move only when the worker waits; `script` runs at each wait."""

    def __init__(self, stop_after: int = 50) -> None:
        self.t, self.mono, self.waits, self.stop_after = NOW, 0.0, 0, stop_after
        self.script: list = []

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.mono

    def wait(self, seconds: float, stop: threading.Event) -> None:
        self.waits += 1
        self.t += seconds
        self.mono += seconds
        for action in list(self.script):
            action(self)
        if self.waits >= self.stop_after:
            stop.set()

    def sleep(self, seconds: float) -> None:
        self.t += seconds
        self.mono += seconds

    def join(self) -> None: ...

    def leave(self) -> None: ...


class FakeTools:
    def __init__(self, statuses: list[str]) -> None:
        self.statuses, self.calls = list(statuses), []

    def call(self, name, arguments):
        self.calls.append((name, arguments.get("name")))
        if name == "adb_health":
            status = self.health.pop(0) if getattr(self, "health", None) else "healthy"
            return make_result(name, ok=status == "healthy", status=status, text=status)
        if arguments["name"] == "login":
            return make_result(name, ok=True, status="verified", text="logged in")
        status = self.statuses.pop(0) if self.statuses else "verified"
        return make_result(name, ok=status == "verified", status=status, text=f"{arguments['name']}: {status}",
                           extra={"values": {"left": "0:20:00"}})


class FakeDevice:
    serial = "dev"

    def __init__(self) -> None:
        self.restarts, self.reconnects = [], 0

    def restart_app(self, package, activity=None):
        self.restarts.append(package)

    def reconnect(self):
        self.reconnects += 1


def _session(tools: FakeTools) -> SimpleNamespace:
    graph = SimpleNamespace(app=SimpleNamespace(package="com.example.game", activity="com.example.Main"))
    return SimpleNamespace(tools=tools, device=FakeDevice(), graph=graph, close=lambda: None)


def _worker(tmp_path, statuses, entries=None, retry=None, stop_after=50, notifier=None, db=None):
    entries = entries or (Entry(task="chore", due=Due(every=3600)),)
    schedule = Schedule(tuple(entries), ("00:00",), parse_zone("UTC+00:00"),
                        retry or Retry(backoff_s=60, max_backoff_s=600, restart_after=2, give_up_after=3,
                                       put_off_s=1800), "login")
    session = _session(FakeTools(statuses))
    clock = FakeTime(stop_after)
    worker = Worker("dev", lambda: session, Store(db or tmp_path / "s.sqlite3"), schedule, time=clock, session=session,
                    notifier=notifier)
    return worker, session, clock


class Told:
    def __init__(self) -> None:
        self.sent = []

    def send(self, channel, title, body, device=None):
        self.sent.append(channel)
        return True


def test_failures_retry_then_restart_the_game_then_put_off_and_tell_a_person(tmp_path):
    told = Told()
    worker, session, clock = _worker(tmp_path, ["stuck", "stuck", "stuck", "verified"], stop_after=80, notifier=told)
    worker.run()
    history = worker.store.history()
    assert [r["status"] for r in history][:4] == ["stuck", "stuck", "stuck", "verified"]
    gaps = [round(b["started"] - a["finished"]) for a, b in zip(history, history[1:])]
    assert gaps[:3] == [60, 120, 1800]  # backoff, backoff, put off
    assert session.device.restarts == ["com.example.game"]  # after the second failure in a row
    assert ("alas_run", "login") in session.tools.calls  # the start task after the restart
    assert "restart" in told.sent and "needs_human" in told.sent
    events = [e["kind"] for e in worker.store.events("dev")]
    assert "restart" in events
    row = worker.store.tasks("dev")["chore"]
    assert row["failures"] == 0 and row["last_status"] == "verified"  # never disabled: it ran again and passed


def test_a_lost_device_is_probed_reconnected_and_resumed(tmp_path):
    told = Told()
    worker, session, clock = _worker(tmp_path, ["device_offline", "verified"], stop_after=8, notifier=told)
    session.tools.health = ["device_offline", "device_offline", "healthy"]
    worker.run()
    assert session.device.reconnects == 2
    kinds = [e["kind"] for e in worker.store.events("dev")]
    assert kinds.count("device_lost") == 1 and "device_back" in kinds and told.sent.count("device_lost") == 1
    assert [r["status"] for r in worker.store.history()][:2] == ["device_offline", "verified"]


def test_a_reported_time_sets_the_next_run_and_priorities_order_due_tasks(tmp_path):
    entries = (Entry(task="low", priority=9, due=Due(every=7200)),
               Entry(task="high", priority=1, due=Due(reported="left", every=3600)))
    worker, session, clock = _worker(tmp_path, [], entries=entries, stop_after=1)
    worker.run()
    assert [c[1] for c in session.tools.calls[:2]] == ["high", "low"]
    rows = worker.store.tasks("dev")
    assert rows["high"]["next_run"] - rows["high"]["last_run"] == pytest.approx(1200)  # "0:20:00" read by the task
    assert rows["low"]["next_run"] - rows["low"]["last_run"] == pytest.approx(7200)


def test_a_clock_that_jumps_back_a_day_does_not_leave_tasks_waiting_a_day(tmp_path):
    worker, session, clock = _worker(tmp_path, [], stop_after=3)

    def jump(t: FakeTime) -> None:
        if t.waits == 1:
            t.t -= 86400  # NTP stepped the wall clock back; the monotonic clock did not move
    clock.script.append(jump)
    worker.run()
    kinds = [e["text"] for e in worker.store.events("dev")]
    assert any("jumped back" in k for k in kinds)
    row = worker.store.tasks("dev")["chore"]
    assert row["next_run"] - clock.t <= 3600


def test_a_missed_due_time_is_reported_and_run_once(tmp_path):
    worker, session, clock = _worker(tmp_path, [], stop_after=1)
    worker.run()  # ran once; due again in an hour
    worker2, session2, clock2 = _worker(tmp_path, [], stop_after=1)
    clock2.t = NOW + 5 * 3600  # the machine slept five hours
    worker2.run()
    assert [c[1] for c in session2.tools.calls] == ["chore"]  # caught up once, not five times
    assert any(e["kind"] == "missed" for e in worker2.store.events("dev"))


def _cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=120)


def test_status_pause_resume_and_run_now_work_on_the_shared_database(tmp_path):
    db = tmp_path / "s.sqlite3"
    store = Store(db)
    store.ensure_tasks("sim-0", ["commission", "mail.collect"], NOW)
    env = {**os.environ, "ENGINE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    status = json.loads(_cli("schedule", "--db", str(db), "status", "--json", env=env).stdout)
    assert [t["task"] for t in status["devices"][0]["tasks"]] == ["commission", "mail.collect"]
    assert _cli("schedule", "--db", str(db), "pause", "--device", "sim-0", env=env).returncode == 0
    assert store.paused("sim-0")
    assert _cli("schedule", "--db", str(db), "resume", env=env).returncode == 0
    assert not store.paused("sim-0")
    assert _cli("schedule", "--db", str(db), "run-now", "mail.collect", env=env).returncode == 0
    assert store.take_requests("sim-0") == ["mail.collect"]
    bad = _cli("schedule", "--db", str(db), "run-now", "no.such.task", env=env)
    assert bad.returncode == 2 and "unknown task" in bad.stderr and "Traceback" not in bad.stderr
    unknown = _cli("schedule", "pause", "--device", "no-such-phone", "--db", str(db), env=env)  # --db after too
    assert unknown.returncode == 2 and "unknown device 'no-such-phone'" in unknown.stderr and not store.paused("sim-0")
    folder = _cli("schedule", "--db", str(tmp_path), "status", env=env)
    assert folder.returncode == 2 and "is a folder" in folder.stderr
    (tmp_path / "broken.sqlite3").write_bytes(b"garbage" * 100)
    broken = _cli("schedule", "--db", str(tmp_path / "broken.sqlite3"), "status", env=env)
    assert broken.returncode == 2 and "cannot be read" in broken.stderr


def test_two_simulated_devices_with_kills_under_chaos_miss_nothing_and_claim_nothing_twice():
    """The short CI form of `schedule simulate` (the long form: benchmarks/test_bench_schedule.py with
    SCHEDULE_SIM_DAYS=2). The kill is aimed at a claimed run, so the commission that run was collecting waits out
    the scheduler's time down (up to 600 s) and, when chaos fails its next attempt too, the retry ladder's gaps:
    on a sample of some 20 collections that one sets the p95 (seen 1593 s once in three runs, under 600 s in the
    others), so the bound is the downtime plus the ladder (KILLED_RUN_DELAY_S)."""
    from engine.runtime.schedsim import simulate

    report = simulate(days=0.25, seed=3, devices=2, kills=1, scenario=str(ROOT / "tests/data/scenarios/chaos.yaml"))
    assert report["scheduler_restarts"] == 1 and report["devices"] == 2
    assert report["kills_mid_run"] == 1 and report["takeovers"] >= 1  # the kill hit claimed runs: taken over
    assert report["double_claims"] == 0 and report["false_successes"] == 0 and report["missed_days"] == 0
    assert report["collect_delay_p95_s"] <= KILLED_RUN_DELAY_S and report["collected"] >= 10
    assert report["runs"] >= 40  # (not report["ok"]: its p95 bound is 600 s, the killed run's is the one above)


KILLED_RUN_DELAY_S = 600 + 60 + 120 + 1800
"""The longest a killed run's collection may wait: the simulated time down, then the retry gaps 60, 120, 1800 s."""


def test_a_clock_that_jumps_forward_is_reported_and_each_task_runs_once(tmp_path):
    worker, session, clock = _worker(tmp_path, [], stop_after=3)

    def jump(t: FakeTime) -> None:
        if t.waits == 1:
            t.t += 3 * 86400  # a wrong RTC corrected three days ahead
    clock.script.append(jump)
    worker.run()
    assert any("jumped forward" in e["text"] for e in worker.store.events("dev"))
    assert [c[1] for c in session.tools.calls] == ["chore", "chore"]  # before the jump, and once after it


def test_a_scheduler_that_cannot_take_its_device_stops_loudly(tmp_path):
    from engine.runtime.scheduler import Scheduler
    from engine.schedule.store import new_owner

    told = Told()
    worker, session, clock = _worker(tmp_path, [], notifier=told)
    worker.store.take_device("dev", new_owner(), NOW)  # another scheduler (this live process) drives it
    told.flush = lambda timeout: True
    assert Scheduler([worker], told).run() == 2
    assert "already driven by another scheduler" in worker.failure and told.sent == ["stopped"]
    assert session.tools.calls == []


def test_a_devices_file_names_one_serial_a_line(tmp_path):
    from argparse import Namespace

    from engine.core.errors import ConfigError
    from engine.faces.commands.schedule import _devices

    good = tmp_path / "devices.txt"
    good.write_text("# my phones\n127.0.0.1:21503\n\nemulator-5554  # the second\n")
    assert _devices(Namespace(device=["usb1"], devices=str(good)))[0] == ["usb1", "127.0.0.1:21503", "emulator-5554"]
    bad = tmp_path / "bad.txt"
    bad.write_text("ok-1\nnot one serial\n")
    with pytest.raises(ConfigError) as caught:
        _devices(Namespace(device=None, devices=str(bad)))
    assert caught.value.line == 2
    with pytest.raises(ConfigError, match="named twice"):
        _devices(Namespace(device=["a", "a"], devices=None))
    assert _devices(Namespace(device=None, devices=None)) == ([None], {})  # --serial picks (auto by default)


def test_run_now_and_pause_reach_a_running_worker_through_the_database(tmp_path):
    worker, session, clock = _worker(tmp_path, [], stop_after=6)
    worker.store.ensure_tasks("dev", ["chore"], NOW)
    worker.store.set_next("dev", "chore", NOW + 86400)  # not due for a day

    def control(t: FakeTime) -> None:
        if t.waits == 1:
            worker.store.request_run(None, "chore", t.t)  # `schedule run-now chore`
        if t.waits == 3:
            worker.store.set_paused("dev", True)
            worker.store.request_run("dev", "chore", t.t)  # asked while paused: waits for resume
    clock.script.append(control)
    worker.run()
    assert [c[1] for c in session.tools.calls] == ["chore"]
    assert worker.store.paused("dev") and worker.store.take_requests("dev") == ["chore"]  # not taken while paused


def test_a_game_restart_on_the_simulator_force_stops_launches_and_logs_in(tmp_path, monkeypatch):
    """The real restart path: am force-stop and am start through the fake ADB server, then the start task."""
    from engine.config.loader import load_graph
    from engine.config.schedule import load_schedule
    from engine.runtime.session import load_task_book, open_session

    monkeypatch.setenv("ENGINE_HOME", str(tmp_path / "home"))
    graph = load_graph().resolve(None)
    schedule = load_schedule(None, graph, set(load_task_book(None, graph).names()))
    with open_session() as session:
        assert session.tools.call("alas_goto", {"page": "page_commission"}).ok
        worker = Worker(session.device.serial, lambda: session, Store(tmp_path / "s.sqlite3"), schedule,
                        session=session)
        assert worker.restart_game("a test")
        assert session.sim.game.truth()["page"] == "page_main"  # relaunched at the login screen, then logged in
        assert [e["kind"] for e in worker.store.events()] == ["restart"]


def test_a_devices_yaml_declares_each_emulators_restart_commands(tmp_path):
    from argparse import Namespace

    from engine.core.errors import YamlError
    from engine.faces.commands.schedule import _devices

    good = tmp_path / "devices.yaml"
    good.write_text("devices:\n  - serial: 127.0.0.1:16384\n    restart:\n"
                    "      - '\"C:/MuMu/shell/MuMuManager.exe\" api -v 0 shutdown_player'\n"
                    "      - '\"C:/MuMu/shell/MuMuManager.exe\" api -v 0 launch_player'\n"
                    "  - serial: emulator-5554\n")
    serials, restart = _devices(Namespace(device=None, devices=str(good)))
    assert serials == ["127.0.0.1:16384", "emulator-5554"]
    assert restart["127.0.0.1:16384"][1].endswith("launch_player") and restart["emulator-5554"] == []
    bad = tmp_path / "bad.yaml"
    bad.write_text("devices:\n  - serial: a\n    restrat: [x]\n")
    with pytest.raises(YamlError) as caught:
        _devices(Namespace(device=None, devices=str(bad)))
    assert caught.value.line == 3


class EmulatorDevice(FakeDevice):
    """A device whose game cannot be restarted until its emulator is (the emulator's tool is a real command)."""

    def __init__(self) -> None:
        super().__init__()
        self.up = False

    def restart_app(self, package, activity=None):
        from engine.core.errors import DeviceError

        if not self.up:
            raise DeviceError("am force-stop: device offline", serial=self.serial)
        self.restarts.append(package)

    def health(self):
        from engine.device.health import Health

        return Health(status="healthy" if self.up else "device_offline", serial=self.serial)


def test_the_emulators_restart_comes_between_the_games_restart_and_a_person(tmp_path):
    told = Told()
    worker, session, clock = _worker(tmp_path, ["stuck", "stuck", "verified"], stop_after=40, notifier=told)
    session.device = EmulatorDevice()
    marker = tmp_path / "restarted"
    worker.restart_emulator = [f"{sys.executable} -c \"open({str(marker)!r}, 'w').close()\""]
    clock_sleep = clock.sleep

    def sleep(seconds):  # the emulator comes up while the ladder waits for it
        session.device.up = marker.exists()
        clock_sleep(seconds)
    clock.sleep = sleep
    worker.run()
    kinds = [(e["kind"], e["text"]) for e in worker.store.events("dev")]
    assert any(k == "restart_failed" for k, _ in kinds)
    assert any(k == "repair" and t.startswith("restart_emulator: ok") for k, t in kinds)
    assert session.device.restarts == ["com.example.game"]  # the game's second restart, after the emulator's
    assert marker.exists()
