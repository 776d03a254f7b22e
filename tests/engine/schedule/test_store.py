"""The schedule's state, on SQLite and on PostgreSQL alike: a due time is claimed once, whatever crashes or how many
processes share the database; an owner is judged by its process instance or its lease, never by a pid alone."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.core.errors import ScheduleError
from engine.schedule import backends
from engine.schedule.store import Store, new_owner
from tests.speed import within

NOW = 1_800_000_000.0


def _claimer(path: str, tasks: int, start: multiprocessing.Event, out: multiprocessing.Queue,
             host: str | None = None) -> None:
    if host is not None:  # a host of its own: the others judge it by its lease, not by its process
        os.environ["ENGINE_HOST_ID"] = host
    store, owner = Store(path), new_owner()
    start.wait(10)
    won = []
    for i in range(tasks):
        # a claim refused because another process runs a task on the device now is tried again until the due
        # time is gone (one device runs one task at a time): every due time ends claimed by exactly one process
        deadline = time.monotonic() + 30
        while store.tasks("dev")[f"t{i}"]["next_run"] == NOW and time.monotonic() < deadline:
            claim = store.claim("dev", f"t{i}", NOW, owner, NOW + 1)
            if claim is not None:
                store.finish(claim, started=NOW, now=NOW + 1, status="verified", ok=True, text="",
                             next_run=NOW + 60, failures=0, reason=None)
                won.append(i)
    out.put(won)


def race(path: str, hosts: list[str | None]) -> tuple[list[int], list[dict]]:
    """One claiming process per entry of `hosts` (a host id of its own, or None: this host) racing for forty due
    times of one device; the due times each won, and the history."""
    store = Store(path)
    store.ensure_tasks("dev", [f"t{i}" for i in range(40)], NOW)
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_claimer, args=(path, 40, start, out, host)) for host in hosts]
    for p in procs:
        p.start()
    start.set()
    won = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(10)
    return sorted(i for w in won for i in w), store.history()


def test_four_processes_racing_for_forty_due_times_run_each_exactly_once(db_url):
    flat, history = race(db_url, [None] * 4)
    assert flat == list(range(40))  # every due time once, none twice
    assert len(history) == 40 and len({(r["task"], r["due"]) for r in history}) == 40


def test_a_claim_whose_owner_was_killed_is_taken_over_as_the_next_attempt(db_url):
    path = db_url
    store = Store(path)
    store.ensure_tasks("dev", ["t"], NOW)
    code = ("import sys, time; from engine.schedule.store import Store, new_owner; s = Store(sys.argv[1]); "
            f"c = s.claim('dev', 't', {NOW!r}, new_owner(), {NOW + 1!r}); print(c.owner, flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    holder = child.stdout.readline().strip()
    assert holder
    assert store.claim("dev", "t", NOW, new_owner(), NOW + 2) is None  # its owner lives: refused
    os.kill(child.pid, signal.SIGKILL)
    child.wait(10)
    child.stdout.close()
    taken = store.claim("dev", "t", NOW, "me:1:x", NOW + 3)
    assert taken is not None and taken.attempt == 2
    # the dead owner's late finish (had it lived) writes nothing; the new owner's does
    from engine.schedule.store import Claim

    assert not store.finish(Claim("dev", "t", NOW, holder, 1), started=NOW, now=NOW + 4, status="verified", ok=True,
                            text="", next_run=NOW + 60, failures=0, reason=None)
    assert store.finish(taken, started=NOW, now=NOW + 4, status="verified", ok=True, text="", next_run=NOW + 60,
                        failures=0, reason=None)
    assert [r["attempt"] for r in store.history()] == [2]


def test_a_finished_due_time_is_never_claimed_again(db_url):
    store = Store(db_url)
    store.ensure_tasks("dev", ["t"], NOW)
    claim = store.claim("dev", "t", NOW, "a:1:x", NOW)
    store.finish(claim, started=NOW, now=NOW + 1, status="verified", ok=True, text="", next_run=NOW + 60,
                 failures=0, reason=None)
    assert store.claim("dev", "t", NOW, "b:2:y", NOW + 2) is None  # not the due time any more
    assert store.claim("dev", "t", NOW + 60, "b:2:y", NOW + 2) is None  # not due yet


def test_a_corrupt_database_is_a_clear_error_and_is_left_untouched(tmp_path):
    path = tmp_path / "s.sqlite3"
    garbage = b"this is not SQLite at all " * 40
    path.write_bytes(garbage)
    with pytest.raises(ScheduleError) as caught:
        Store(path)
    assert "cannot be read" in str(caught.value) and "move it aside" in str(caught.value)
    assert path.read_bytes() == garbage


def test_a_database_locked_by_another_writer_is_a_clear_error_in_bounded_time(tmp_path, monkeypatch):
    path = tmp_path / "s.sqlite3"
    store = Store(path)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    monkeypatch.setattr(backends, "BUSY_TIMEOUT_MS", 300)
    store.close()  # its next connection takes the short timeout
    started = time.monotonic()
    with pytest.raises(ScheduleError) as caught:
        store.ensure_tasks("dev", ["t"], NOW)
    assert "locked" in str(caught.value)
    within(time.monotonic() - started, 5, "locked database refused, wall (s)")
    other.execute("ROLLBACK")
    other.close()


def test_a_database_written_by_a_newer_version_is_refused(db_url):
    store = Store(db_url)
    with store.backend.tx() as db:
        db.run("UPDATE meta SET value = '99' WHERE key = 'schema'")
    store.close()
    with pytest.raises(ScheduleError, match="newer version"):
        Store(db_url)


def test_a_second_scheduler_on_one_device_is_refused_while_the_first_lives(db_url):
    store = Store(db_url)
    me = new_owner()  # this process: alive
    store.take_device("dev", me, NOW)
    with pytest.raises(ScheduleError, match="already driven by another scheduler"):
        store.take_device("dev", new_owner(), NOW + 1)
    store.take_device("other", new_owner(), NOW)  # another device is fine
    store.release_device("dev", me)
    store.take_device("dev", new_owner(), NOW + 2)  # released: taken


def test_status_shows_each_device_its_tasks_and_failures(db_url):
    store = Store(db_url)
    store.take_device("dev", new_owner(), NOW)
    store.ensure_tasks("dev", ["a", "b"], NOW)
    claim = store.claim("dev", "a", NOW, "x:1:y", NOW)
    store.finish(claim, started=NOW, now=NOW + 5, status="stuck", ok=False, text="no progress", next_run=NOW + 60,
                 failures=1, reason="stuck: no progress")
    status = store.status(NOW + 10)
    (dev,) = status["devices"]
    assert [t["task"] for t in dev["tasks"]] == ["b", "a"]
    assert dev["tasks"][1]["failures"] == 1 and dev["tasks"][1]["reason"] == "stuck: no progress"
    assert dev["recent_failures"][0]["status"] == "stuck"


def test_a_database_of_schema_1_is_migrated_to_the_current_version_keeping_its_rows(db_url):
    from engine.schedule import store as module

    backend = backends.open_backend(db_url)  # a schedule written before leases: schema 1
    with backend.tx() as db:
        ddl = module._MIGRATIONS[1].format(float="DOUBLE PRECISION", serial=backend.SERIAL)
        for statement in filter(str.strip, ddl.split(";")):
            db.run(statement)
        db.run("INSERT INTO meta (key, value) VALUES ('schema', '1')")
        db.run("INSERT INTO tasks (device, task, next_run) VALUES ('dev', 'chore', ?)", (NOW,))
    backend.close_all()
    store = Store(db_url)
    assert store._read("SELECT value FROM meta WHERE key = 'schema'")[0]["value"] == str(module.SCHEMA_VERSION)
    assert [r["version"] for r in store._read("SELECT version FROM migrations")] == [2]
    assert store.tasks("dev")["chore"]["next_run"] == NOW
    me = new_owner()
    store.take_device("dev", me, NOW)  # the columns of version 2 are there
    assert store.claim("dev", "chore", NOW, me, NOW) is not None


def test_the_database_is_named_by_a_path_a_sqlite_url_or_the_environment(tmp_path, monkeypatch):
    for name in ("ENGINE_DB_URL", "ENGINE_DB_URL_FILE", "ENGINE_SCHEDULE_DB"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ENGINE_HOME", str(tmp_path / "home"))
    assert backends.database_url() == str(tmp_path / "home" / "schedule.sqlite3")  # the embedded default
    monkeypatch.setenv("ENGINE_SCHEDULE_DB", str(tmp_path / "a.sqlite3"))
    assert backends.database_url() == str(tmp_path / "a.sqlite3")
    url_file = tmp_path / "db.url"
    url_file.write_text("postgresql://u@h/from-file\n")
    url_file.chmod(0o600)
    monkeypatch.setenv("ENGINE_DB_URL_FILE", str(url_file))
    assert backends.database_url() == "postgresql://u@h/from-file"
    monkeypatch.setenv("ENGINE_DB_URL", "postgresql://u@h/from-env")
    assert backends.database_url() == "postgresql://u@h/from-env"
    assert backends.database_url(db_file=url_file) == "postgresql://u@h/from-file"
    assert backends.database_url("sqlite:///x.sqlite3") == "sqlite:///x.sqlite3"  # --db first
    absolute = Store(f"sqlite:///{tmp_path}/b.sqlite3")  # sqlite:////abs/path, as SQLAlchemy spells it
    assert absolute.path == tmp_path / "b.sqlite3" and absolute.path.is_file()
    monkeypatch.chdir(tmp_path)
    assert Store("sqlite:///c.sqlite3").path == Path("c.sqlite3") and (tmp_path / "c.sqlite3").is_file()
    with pytest.raises(ScheduleError, match="not a schedule database"):
        Store("mysql://u:pw@h/db")
