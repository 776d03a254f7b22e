"""A fleet of hosts on one PostgreSQL (a real server the tests start, tests/postgres.py): the faults of issue 38
point 5, control by host, and a password that never shows."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine.core.errors import ScheduleError, ScheduleUnreachable
from engine.schedule.store import Store, new_owner
from tests.engine.schedule.test_liveness import _age_lease
from tests.engine.schedule.test_scheduler import FakeTime, Told, _session, FakeTools
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[3]
NOW = 1_800_000_000.0


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ENGINE_DB_URL")}
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={**clean, "PYTHONPATH": str(ROOT), **(env or {})})


def test_the_password_never_shows_in_errors_status_or_logs(postgres, tmp_path):
    good = postgres.new_database()
    wrong = good.replace(postgres.password, "not-the-password-42")
    with pytest.raises(ScheduleUnreachable) as caught:
        Store(wrong)
    text = str(caught.value)
    assert f"127.0.0.1:{postgres.port}" in text and "/t_" in text and "not-the-password-42" not in text
    closed = f"postgresql://engine:secret-pw-77@127.0.0.1:{free_port()}/fleet"
    with pytest.raises(ScheduleUnreachable) as caught:
        Store(closed)
    assert "127.0.0.1" in str(caught.value) and "secret-pw-77" not in str(caught.value)
    store = Store(good)
    store.ensure_tasks("dev", ["chore"], NOW)
    assert postgres.password not in str(store.status(NOW)) and store.where in str(store.status(NOW))
    for url in (wrong, good):
        done = _cli("-vv", "schedule", "--db", url, "status", "--json")
        assert postgres.password not in done.stdout + done.stderr
        assert "not-the-password-42" not in done.stdout + done.stderr
    assert _cli("schedule", "--db", wrong, "status").returncode == 2


def test_the_url_comes_from_a_file_only_its_owner_reads(postgres, tmp_path):
    url = postgres.new_database()
    Store(url).ensure_tasks("dev", ["chore"], NOW)
    secret = tmp_path / "db.url"
    secret.write_text(url + "\n")
    secret.chmod(0o644)
    loose = _cli("schedule", "--db-file", str(secret), "status")
    assert loose.returncode == 2 and "chmod 600" in loose.stderr and postgres.password not in loose.stderr
    secret.chmod(0o600)
    ok = _cli("schedule", "status", env={"ENGINE_DB_URL_FILE": str(secret)})
    assert ok.returncode == 0 and "dev" in ok.stdout and postgres.password not in ok.stdout


def test_two_hosts_taking_one_device_at_once_one_wins(postgres):
    url = postgres.new_database()
    Store(url).close()
    start, won, lost = threading.Barrier(2), [], []

    def take(owner: str) -> None:
        store = Store(url)
        start.wait(10)
        try:
            store.take_device("dev", owner, NOW)
            won.append(owner)
        except ScheduleError:
            lost.append(owner)
        finally:
            store.close()
    threads = [threading.Thread(target=take, args=(f"host-{c}:1:x.1:0000000{c}",)) for c in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(won) == 1 and len(lost) == 1


def test_a_connection_killed_mid_claim_writes_nothing_and_the_claim_is_made_again(postgres):
    import psycopg

    url = postgres.new_database()
    store = Store(url)
    store.ensure_tasks("dev", ["chore"], NOW)
    holder = psycopg.connect(url, autocommit=True)
    holder.execute("BEGIN")
    holder.execute("SELECT device FROM devices WHERE device = 'dev' FOR UPDATE")  # the claim will wait here
    outcome: list = []
    claimer = threading.Thread(target=lambda: outcome.append(_try(lambda: store.claim("dev", "chore", NOW, "h:1:x.1:0",
                                                                                            NOW))))
    claimer.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        killed = postgres.admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
                                "'engine-schedule' AND wait_event_type = 'Lock'")
        if killed:
            break
        time.sleep(0.05)
    claimer.join(10)
    holder.execute("ROLLBACK")
    holder.close()
    assert killed and isinstance(outcome[0], ScheduleUnreachable)
    assert store.history() == [] and store._read("SELECT * FROM claims") == []  # nothing half-written
    again = store.claim("dev", "chore", NOW, "h:1:x.1:0", NOW)  # a new connection, the same due time
    assert again is not None and again.attempt == 1


def _try(call):
    try:
        return call()
    except Exception as exc:  # noqa: BLE001 - the test looks at what was raised
        return exc


def test_a_database_down_for_minutes_workers_wait_tell_once_resume_and_run_nothing_twice(tmp_path):
    from engine.config.schedule import Due, Entry, Retry, Schedule, parse_zone
    from engine.runtime.scheduler import Worker
    from tests.postgres import Cluster

    cluster = Cluster()  # its own server: this test stops it
    try:
        url = cluster.new_database()
        schedule = Schedule((Entry(task="chore", due=Due(every=600)),), ("00:00",), parse_zone("UTC+00:00"),
                            Retry(), None)
        session, told, clock = _session(FakeTools([])), Told(), FakeTime(stop_after=60)
        waits, last = [], [NOW]

        def outage(t: FakeTime) -> None:
            waits.append(t.t - last[0])
            last[0] = t.t
            if t.waits == 3:
                cluster.stop()
            if t.waits == 9:  # backoff 2, 4, 8, 16, 32, 60 s: minutes of virtual time
                cluster.start()
        clock.script.append(outage)
        worker = Worker("dev", lambda: session, Store(url), schedule, time=clock, session=session, notifier=told)
        worker.run()
        assert worker.failure is None
        assert told.sent.count("database") == 1
        assert waits[3:9] == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0]  # backoff while it was down, 2 min in all
        history = worker.store.history()
        assert len({(r["task"], r["due"]) for r in history}) == len(history) >= 3  # ran before and after, once
        assert max(r["started"] for r in history) > NOW + 600
        worker.store.close()
    finally:
        cluster.close()


def test_pause_resume_and_run_now_act_by_host(db_url):
    store = Store(db_url)
    for device, host in (("a1", "host-a"), ("a2", "host-a"), ("b1", "host-b")):
        store.take_device(device, f"{host}:1:x.1:00000000", NOW)
        store.ensure_tasks(device, ["chore"], NOW)
    assert store.set_paused(None, True, host="host-a") == ["a1", "a2"]
    assert [d["device"] for d in store.status(NOW)["devices"] if d["paused"]] == ["a1", "a2"]
    assert store.request_run(None, "chore", NOW, host="host-b") == ["b1"]
    assert store.take_requests("b1") == ["chore"] and store.take_requests("a1") == []
    assert {d["device"]: d["host"] for d in store.status(NOW)["devices"]} == {"a1": "host-a", "a2": "host-a",
                                                                              "b1": "host-b"}


def test_two_hosts_on_postgresql_with_a_kill_mid_run_miss_nothing_and_claim_nothing_twice(postgres):
    """The short CI form of `schedule simulate --db URL --hosts H` (the long form, 2 days with 3 hosts x 2 devices:
    docs/benchmarks/fleet.md)."""
    from engine.runtime.schedsim import simulate

    report = simulate(days=0.03, seed=5, devices=2, hosts=2, kills=1, db=postgres.new_database(),
                      scenario=str(ROOT / "tests/data/scenarios/chaos.yaml"))
    assert report["hosts"] == 2 and report["scheduler_restarts"] == 1
    assert report["kills_mid_run"] == 1 and report["takeovers"] >= 1  # the kill hit a claimed run; it was taken over
    assert report["double_claims"] == 0 and report["false_successes"] == 0 and report["missed_days"] == 0
    assert report["runs"] >= 10


def test_a_standby_host_takes_a_dead_hosts_device_after_the_lease(db_url, caplog):
    import logging

    from engine.config.schedule import Due, Entry, Retry, Schedule, parse_zone
    from engine.runtime.scheduler import Worker
    from engine.schedule.store import LEASE_S

    store = Store(db_url)
    store.take_device("dev", "dead-host:7:x.1:00000000", NOW)  # a host that died a moment ago
    schedule = Schedule((Entry(task="chore", due=Due(every=600)),), ("00:00",), parse_zone("UTC+00:00"), Retry(),
                        None)
    session, clock = _session(FakeTools([])), FakeTime(stop_after=8)

    def lease_runs_out(t: FakeTime) -> None:
        if t.waits == 3:
            _age_lease(store, "dev", LEASE_S + 1)
    clock.script.append(lease_runs_out)
    worker = Worker("dev", lambda: session, store, schedule, time=clock, session=session)
    with caplog.at_level(logging.WARNING, logger="engine.runtime.scheduler"):
        worker.run()
    assert worker.failure is None and session.tools.calls == [("alas_run", "chore")]
    assert [r.getMessage() for r in caplog.records].count("dev: driven from host dead-host; standing by until its "
                                                          "lease runs out") == 1


def test_a_database_server_down_longer_than_the_lease_hands_no_live_owners_device_away(tmp_path):
    """Every host was cut off alike while the server was down: a lease counts from the server's start, so the owner
    that comes back within a lease keeps its device and its claim; a host that stays silent loses them a lease
    after the server is back."""
    from engine.schedule.store import LEASE_S
    from tests.postgres import Cluster

    cluster = Cluster()
    try:
        url = cluster.new_database()
        store = Store(url)
        far = "far-host:1:abcd.99:00000000"
        store.take_device("dev", far, NOW)
        store.ensure_tasks("dev", ["t"], NOW)
        assert store.claim("dev", "t", NOW, far, NOW) is not None
        with store.backend.tx() as db:  # its last heartbeat was minutes ago: the server was down since
            db.run("UPDATE devices SET lease = lease - ?", (LEASE_S + 300,))
            db.run("UPDATE claims SET lease = lease - ?", (LEASE_S + 300,))
        store.close()
        cluster.stop()
        cluster.start()
        store = Store(url)
        with pytest.raises(ScheduleError, match="already driven by another scheduler"):
            store.take_device("dev", new_owner(), NOW)
        assert store.claim("dev", "t", NOW, new_owner(), NOW) is None
        (dev,) = store.status(NOW)["devices"]
        assert dev["alive"] and dev["lease_age_s"] > LEASE_S  # the heartbeat is old; the lease still holds
        assert store.beat("dev", far, NOW)  # the owner is back: its lease renewed, its device still its own
        store.close()
    finally:
        cluster.close()


def test_four_hosts_racing_for_forty_due_times_of_one_device_run_each_exactly_once(postgres):
    from tests.engine.schedule.test_store import race

    flat, history = race(postgres.new_database(), [f"host-{h}" for h in range(4)])
    assert flat == list(range(40))  # every due time once, none twice
    assert len({(r["task"], r["due"]) for r in history}) == len(history) == 40
    assert {r["owner"].split(":")[0] for r in history} <= {f"host-{h}" for h in range(4)}
    assert all(r["attempt"] == 1 for r in history)  # no live host's claim was taken over


def test_a_lost_devices_long_probe_waits_keep_its_lease(db_url):
    """Probes of a lost device wait up to 300 s apart, past the lease: the owner beats between, so a standby host
    never takes a live owner's device while it waits for it."""
    from engine.config.schedule import Due, Entry, Retry, Schedule, parse_zone
    from engine.runtime.scheduler import CONTROL_POLL_S, Worker

    store = Store(db_url)
    schedule = Schedule((Entry(task="chore", due=Due(every=600)),), ("00:00",), parse_zone("UTC+00:00"), Retry(),
                        None)
    session, clock = _session(FakeTools(["device_offline"])), FakeTime(stop_after=40)
    session.tools.health = ["device_offline"] * 6 + ["healthy"]  # probes 5, 10, 20, 40, 80, 160 s apart
    gaps, beats = [], []
    real_beat = store.beat

    def beat(device, owner, now, state=None):
        beats.append(now)
        return real_beat(device, owner, now, state)
    store.beat = beat
    last = [NOW]

    def watch(t: FakeTime) -> None:
        gaps.append(t.t - last[0])
        last[0] = t.t
    clock.script.append(watch)
    worker = Worker("dev", lambda: session, store, schedule, time=clock, session=session)
    worker.run()
    assert worker.failure is None and sum(gaps) >= 5 + 10 + 20 + 40 + 80 + 160
    assert max(gaps) <= CONTROL_POLL_S and max(b - a for a, b in zip(beats, beats[1:])) <= CONTROL_POLL_S


def test_a_game_restart_that_outlasts_the_lease_keeps_renewing_it(tmp_path, monkeypatch):
    """A restart of the game (or the emulator) runs outside any claim: the device's lease is renewed meanwhile."""
    from engine.runtime import scheduler
    from tests.engine.schedule.test_scheduler import _worker

    monkeypatch.setattr(scheduler, "LEASE_S", 0.2)  # renewals every 0.05 s of wall time
    worker, session, clock = _worker(tmp_path, ["stuck", "stuck"], stop_after=6)
    beaten, real_beat = threading.Event(), worker.store.beat

    def beat(device, owner, now, state=None):
        if threading.current_thread().name.startswith("lease-"):
            beaten.set()
        return real_beat(device, owner, now, state)
    worker.store.beat = beat

    def slow_restart(package, activity=None):  # the restart ends once the lease was renewed while it ran
        assert beaten.wait(10), "the device's lease was not renewed during the game's restart"
        session.device.restarts.append(package)
    session.device.restart_app = slow_restart
    worker.run()
    assert worker.failure is None and session.device.restarts and beaten.is_set()
