"""What the single-host schedule got wrong when a new user tried it (issue 38, point 9): each fault is a clear
error with exit 2 or a visible line, the database a refusal names is left byte for byte as it was, and nothing is
left behind."""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from engine.core.errors import ScheduleError
from engine.schedule.backends import SqliteBackend
from engine.schedule.store import Store
from tests.engine.schedule.test_scheduler import _worker

ROOT = Path(__file__).resolve().parents[3]
NOW = 1_800_000_000.0


def _cli(*args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, **kwargs)


def _damage(path: Path, table: str) -> None:
    """Overwrite the root page of `table` (an interior page once it holds a few hundred rows) with 0xff bytes."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    conn.close()
    data = bytearray(path.read_bytes())
    data[(root - 1) * size + 8:root * size] = b"\xff" * (size - 8)
    path.write_bytes(bytes(data))


def test_a_database_refused_as_newer_is_left_byte_for_byte_as_it_was(tmp_path):
    path = tmp_path / "s.sqlite3"
    conn = sqlite3.connect(path)  # a database of a later version, in rollback-journal mode, without our tables
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute("INSERT INTO meta VALUES ('schema', '99')")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(ScheduleError, match="newer version"):
        Store(path)
    assert path.read_bytes() == before  # no WAL switch, no table created
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite3"]  # no -wal, no -shm


def test_a_postgresql_database_refused_as_newer_is_left_as_it_was(postgres):
    import psycopg

    url = postgres.new_database()
    with psycopg.connect(url, autocommit=True) as conn:  # a later version's schedule, without our tables
        conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT INTO meta VALUES ('schema', '99')")
    with pytest.raises(ScheduleError, match="newer version"):
        Store(url)
    done = _cli("schedule", "--db", url, "pause")
    assert done.returncode == 2 and "newer version" in done.stderr and postgres.password not in done.stderr
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'").fetchall() == [("meta",)]
        assert conn.execute("SELECT key, value FROM meta").fetchall() == [("schema", "99")]


def test_a_schema_version_that_is_not_a_number_is_a_clear_error(db_url):
    store = Store(db_url)
    with store.backend.tx() as db:
        db.run("UPDATE meta SET value = 'two' WHERE key = 'schema'")
    store.close()
    with pytest.raises(ScheduleError, match="'two' is not a number"):
        Store(db_url)
    done = _cli("schedule", "--db", db_url, "status")
    assert done.returncode == 2 and "is not a number" in done.stderr and "ValueError" not in done.stderr


def test_a_read_only_database_gets_its_own_advice(tmp_path):
    path = tmp_path / "s.sqlite3"
    Store(path).close()
    conn = sqlite3.connect(path.as_uri() + "?mode=ro", uri=True)  # the error SQLite gives on a read-only file
    with pytest.raises(sqlite3.OperationalError) as caught:
        conn.execute("INSERT INTO meta VALUES ('x', 'y')")
    conn.close()
    text = str(SqliteBackend(path).explain(caught.value))
    assert "read-only" in text and "ENGINE_HOME" in text and "move it aside" not in text


def test_corruption_found_on_a_write_stops_the_scheduler_with_one_line_and_exit_2(tmp_path, caplog):
    from engine.runtime.scheduler import Scheduler

    worker, session, clock = _worker(tmp_path, [], stop_after=3)
    path = tmp_path / "s.sqlite3"
    for i in range(300):
        worker.store.record_off_schedule("dev", "chore", started=NOW, now=NOW, status="verified", ok=True,
                                         text="x" * 500, owner="o", via="tool")
    worker.store.backend.close_all()
    _damage(path, "history")
    with caplog.at_level(logging.ERROR, logger="engine.runtime.scheduler"):
        assert Scheduler([worker]).run() == 2
    assert "cannot be read" in worker.failure and "malformed" in worker.failure
    assert all(r.exc_info is None for r in caplog.records)  # a line, not a thread's traceback


def test_status_into_a_closed_pipe_ends_quietly_with_exit_0(db_url):
    path = db_url
    store = Store(path)
    for i in range(200):
        store.ensure_tasks(f"dev-{i}", ["a", "b"], NOW)
    read, write = os.pipe()
    os.close(read)  # `| head -1` that has read its line and gone
    try:
        done = subprocess.run([sys.executable, "-m", "engine", "schedule", "--db", str(path), "status"],
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=120, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        os.close(write)
    assert done.returncode == 0 and "BrokenPipe" not in done.stderr and "Traceback" not in done.stderr


def test_controls_on_a_database_that_does_not_exist_exit_2_and_create_nothing(tmp_path):
    path = tmp_path / "fresh.sqlite3"
    for args in (("run-now", "nosuchtask"), ("pause",), ("resume", "--device", "x")):
        done = _cli("schedule", "--db", str(path), *args)
        assert done.returncode == 2 and "no schedule database" in done.stderr, (args, done.stderr)
    status = _cli("schedule", "--db", str(path), "status")
    assert status.returncode == 0 and "no scheduler has run here yet" in status.stdout
    assert list(tmp_path.iterdir()) == []
    Store(path).ensure_tasks("dev", ["chore"], NOW)
    unknown = _cli("schedule", "--db", str(path), "run-now", "nosuchtask")
    assert unknown.returncode == 2 and "unknown task 'nosuchtask'" in unknown.stderr


def test_a_failed_simulation_leaves_no_work_folder(tmp_path, monkeypatch):
    import tempfile

    from engine.core.errors import EngineError
    from engine.runtime.schedsim import simulate

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises((EngineError, OSError)):
        simulate(days=0.01, seed=1, graph=str(tmp_path / "no-such-graph"))
    assert list(tmp_path.iterdir()) == []


def test_game_restarts_and_failed_restarts_reach_stderr(tmp_path, caplog):
    from engine.core.errors import DeviceError

    worker, session, clock = _worker(tmp_path, [])
    with caplog.at_level(logging.WARNING, logger="engine.runtime.scheduler"):
        assert worker.restart_game("chore failed: stuck")

        def broken(package, activity=None):
            raise DeviceError("am start failed")
        session.device.restart_app = broken
        assert not worker.restart_game("chore failed again")
    lines = [r.getMessage() for r in caplog.records]
    assert any("restarting the game: chore failed: stuck" in line for line in lines)
    assert any("restart failed: am start failed" in line for line in lines)


def test_a_task_put_off_shows_how_many_times_it_failed(tmp_path, db_url):
    worker, session, clock = _worker(tmp_path, ["stuck", "stuck", "stuck"], stop_after=500, db=db_url)

    def until_put_off(t) -> None:
        if len(worker.store.history()) >= 3:
            t.stop_after = t.waits  # stop at this wait, before the put-off ends
    clock.script.append(until_put_off)
    worker.run()
    row = worker.store.tasks("dev")["chore"]
    assert row["reason"].startswith("put off after 3 failures") and row["failures"] == 3
    (dev,) = worker.store.status(clock.t)["devices"]
    assert dev["tasks"][0]["failures"] == 3


def test_controls_on_an_empty_postgresql_database_exit_2_and_create_no_table(postgres):
    url = postgres.new_database()
    for args in (("run-now", "nosuchtask"), ("pause",), ("resume", "--device", "x")):
        done = _cli("schedule", "--db", url, *args)
        assert done.returncode == 2 and "no schedule database" in done.stderr, (args, done.stderr)
        assert postgres.password not in done.stdout + done.stderr
    status = _cli("schedule", "--db", url, "status")
    assert status.returncode == 0 and "no scheduler has run here yet" in status.stdout
    assert postgres.password not in status.stdout + status.stderr
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0


def test_a_database_that_refuses_a_write_stops_the_scheduler_with_one_line_and_exit_2(tmp_path, postgres, caplog):
    """PostgreSQL's counterpart of a damaged page: a statement refused mid-run (here its table is gone)."""
    from engine.runtime.scheduler import Scheduler

    worker, session, clock = _worker(tmp_path, [], stop_after=3, db=postgres.new_database())
    with worker.store.backend.tx() as db:
        db.run("DROP TABLE history")
    with caplog.at_level(logging.ERROR, logger="engine.runtime.scheduler"):
        assert Scheduler([worker]).run() == 2
    assert "refused a statement" in worker.failure and worker.store.where in worker.failure
    assert all(r.exc_info is None for r in caplog.records)


@pytest.mark.parametrize("url", ["postgresql://engine:Sekr3tPW@127.0.0.1:notaport/db",
                                 "postgresql://engine:Sekr3tPW@[::1/db",
                                 "postgresql://engine:Sekr3tPW@127.0.0.1:99999/db",
                                 "postgresql://engine:Sek%ZZr3tPW@127.0.0.1:1/db",
                                 "postgresql://engine:Sekr3tPW@127.0.0.1:1/db?nosuchoption=1"])
def test_a_malformed_database_url_exits_2_without_its_password(url):
    for args in (("status",), ("pause",)):
        done = _cli("-vv", "schedule", "--db", url, *args)
        assert done.returncode == 2, done.stderr
        assert "Sekr3tPW" not in done.stdout + done.stderr and "Traceback" not in done.stderr
        assert "unexpected" not in done.stderr and "postgresql://USER@HOST:PORT/DB" in done.stderr


def test_simulate_refuses_a_database_that_already_holds_a_schedule(tmp_path):
    from engine.core.errors import ConfigError
    from engine.runtime.schedsim import simulate

    path = tmp_path / "fleet.sqlite3"
    Store(path).ensure_tasks("real-device", ["chore"], NOW)
    with pytest.raises(ConfigError, match="already holds a schedule"):
        simulate(days=0.01, seed=1, db=str(path))
    assert [d["device"] for d in Store(path).devices()] == ["real-device"]


def test_a_postgresql_role_that_may_only_read_gets_the_servers_reason_not_the_advice_for_a_corrupt_file(postgres):
    """PostgreSQL's counterpart of a read-only ENGINE_HOME: a role granted SELECT only."""
    import secrets

    import psycopg

    url = postgres.new_database()
    Store(url).ensure_tasks("dev", ["chore"], NOW)
    role, password = "ro_" + secrets.token_hex(4), "ro-pw-" + secrets.token_hex(6)
    postgres.admin(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    reader = url.replace(f"engine:{postgres.password}@", f"{role}:{password}@")
    status = _cli("schedule", "--db", reader, "status")
    assert status.returncode == 0 and "dev" in status.stdout  # reading is all status needs
    done = _cli("schedule", "--db", reader, "pause", "--device", "dev")
    assert done.returncode == 2 and "refused a statement" in done.stderr and role in done.stderr
    assert "move it aside" not in done.stderr and password not in done.stdout + done.stderr
