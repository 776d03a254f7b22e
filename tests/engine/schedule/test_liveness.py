"""Who is alive: an owner is its process instance on this host (a pid with its start time), else its lease on the
database's clock; never a pid alone, never a host's own clock. On SQLite and on PostgreSQL alike."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from engine.core.errors import ScheduleError
from engine.schedule.hosts import host_id, new_owner, process_start
from engine.schedule.store import LEASE_S, Store

NOW = 1_800_000_000.0


def _age_lease(store: Store, device: str, seconds: float) -> None:
    """Let `seconds` pass on the database's clock for a device's lease (and its claims'): they move that far into
    the past, and so does the server's start (a lease never counts from before it: engine.schedule.store)."""
    with store.backend.tx() as db:
        db.run("UPDATE devices SET lease = lease - ? WHERE device = ?", (seconds, device))
        db.run("UPDATE claims SET lease = lease - ? WHERE device = ?", (seconds, device))
    if store.backend.STARTED:
        store.backend.STARTED = f"({store.backend.STARTED} - {float(seconds)!r})"


def test_a_pid_that_now_belongs_to_another_process_instance_is_no_owner(db_url):
    """kill -9 and a restart as pid 1 in a container (or a reused pid): the same pid, another start time."""
    store = Store(db_url)
    mine = process_start(os.getpid())
    assert mine not in (None, "-")
    boot, ticks = mine.split(".")
    earlier = f"{host_id()}:{os.getpid()}:{boot}.{int(ticks) - 1}:dead0000"  # this pid, an earlier process
    store.take_device("dev", earlier, NOW)
    store.ensure_tasks("dev", ["t"], NOW)
    assert store.claim("dev", "t", NOW, earlier, NOW) is not None
    me = new_owner()
    store.take_device("dev", me, NOW + 5)  # at +5 s: taken, no lease to wait for (its process is gone)
    taken = store.claim("dev", "t", NOW, me, NOW + 5)
    assert taken is not None and taken.attempt == 2


def test_an_owner_of_another_host_is_judged_by_its_lease_on_the_database_clock(db_url):
    store = Store(db_url)
    far = "far-host:1:abcd.99:00000000"  # pid 1 on another host: its pid says nothing here
    store.take_device("dev", far, NOW)
    store.ensure_tasks("dev", ["t"], NOW)
    assert store.claim("dev", "t", NOW, far, NOW) is not None
    skewed = NOW + 30 * 60  # this host's clock is half an hour ahead: it must not hand the device away
    with pytest.raises(ScheduleError, match="already driven by another scheduler.*far-host"):
        store.take_device("dev", new_owner(), skewed)
    assert store.claim("dev", "t", NOW, new_owner(), skewed) is None
    _age_lease(store, "dev", LEASE_S - 10)  # silent for less than the lease: still alive
    with pytest.raises(ScheduleError):
        store.take_device("dev", new_owner(), NOW)
    _age_lease(store, "dev", 20)  # now past the lease on the database's clock
    me = new_owner()
    store.take_device("dev", me, NOW)
    assert store.claim("dev", "t", NOW, me, NOW).attempt == 2
    assert not store.beat("dev", far, NOW)  # the old owner, back from a partition, learns it lost the device
    assert store.beat("dev", me, NOW)


def test_status_after_kill_9_shows_no_scheduler_and_nothing_running(db_url):
    store = Store(db_url)
    code = ("import sys; from engine.schedule.store import Store, new_owner; s = Store(sys.argv[1]); o = new_owner(); "
            f"s.take_device('dev', o, {NOW!r}); s.ensure_tasks('dev', ['commission'], {NOW!r}); "
            f"s.claim('dev', 'commission', {NOW!r}, o, {NOW!r}); s.beat('dev', o, {NOW!r}, 'running commission'); "
            "print('ok', flush=True); sys.stdin.read()")
    child = subprocess.Popen([sys.executable, "-c", code, db_url], stdout=subprocess.PIPE, stdin=subprocess.PIPE,
                             text=True)
    assert child.stdout.readline().strip() == "ok"
    (alive,) = store.status(NOW)["devices"]
    assert alive["running"] == "commission" and alive["alive"] and alive["state"] == "running commission"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(10)
    child.stdout.close()
    child.stdin.close()
    (dead,) = store.status(NOW + 1)["devices"]
    assert dead["running"] is None and not dead["alive"] and dead["scheduler"] is None
    assert dead["state"].startswith("no scheduler") and "running" not in dead["state"]
    assert [t["state"] for t in dead["tasks"]] == ["waiting"]
    assert dead["host"] == host_id() and dead["lease_age_s"] is not None
    me = new_owner()  # a scheduler started again at +5 s, well inside the lease: the killed one is gone
    store.take_device("dev", me, NOW + 5)
    taken = store.claim("dev", "commission", NOW, me, NOW + 5)
    assert taken is not None and taken.attempt == 2  # its open claim, taken over as the next attempt
