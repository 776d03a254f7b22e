"""MCP clients and the agent see the schedule through the eight tools: alas_tools shows each task's next run and
state, alas_run of a due task claims its due time as the scheduler does (no ninth tool)."""

from __future__ import annotations

from engine.runtime.session import open_session
from engine.runtime.toolspecs import TOOL_NAMES
from engine.schedule.store import Store, new_owner


def test_the_tools_share_the_schedule_and_never_run_a_due_time_twice(tmp_path, monkeypatch, db_url):
    monkeypatch.setenv("ENGINE_HOME", str(tmp_path / "home"))
    db = db_url  # a SQLite file, or a fleet's PostgreSQL
    store = Store(db)  # the scheduler has run here before: the database exists
    with open_session(schedule_db=db) as session:
        assert len(TOOL_NAMES) == 8
        tasks = {t["name"]: t for t in session.tools.call("alas_tools", {}).data["tasks"]}
        assert tasks["mail.collect"]["schedule"]["state"] == "waiting"
        assert tasks["mail.collect"]["schedule"]["due_in_s"] <= 0  # never run: due at once
        assert "schedule" not in tasks["login"]  # not a scheduled task

        device = session.device.serial
        scheduler = new_owner()  # a scheduler in this (live) process holds reward.missions' due time
        due = store.tasks(device)["reward.missions"]["next_run"]
        assert store.claim(device, "reward.missions", due, scheduler, due + 1) is not None
        busy = session.tools.call("alas_run", {"name": "reward.missions"})
        assert not busy.ok and busy.status == "busy"
        other = session.tools.call("alas_run", {"name": "login"})  # one task at a time on a device, scheduled or not
        assert not other.ok and other.status == "busy" and "reward.missions" in other.text
        from engine.schedule.store import Claim

        store.finish(Claim(device, "reward.missions", due, scheduler, 1), started=due, now=due + 2,
                     status="verified", ok=True, text="", next_run=due + 7200, failures=0, reason=None)

        first = session.tools.call("alas_run", {"name": "mail.collect"})
        assert first.ok and first.data["schedule"]["recorded"] == "done"
        row = store.tasks(device)["mail.collect"]
        assert row["last_status"] == first.status and row["next_run"] - row["last_run"] == 7200  # every: 7200
        again = session.tools.call("alas_run", {"name": "mail.collect"})  # between due times: history only
        assert again.ok and "schedule" not in again.data
        runs = [(r["task"], r["due"] is None, r["via"]) for r in store.history(device)]
        assert runs == [("reward.missions", False, "scheduler"), ("mail.collect", False, "tool"),
                        ("mail.collect", True, "tool")]
        assert store.tasks(device)["mail.collect"]["next_run"] == row["next_run"]


def test_without_a_schedule_database_the_tools_are_as_before(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGINE_HOME", str(tmp_path / "home"))
    with open_session(schedule_db=tmp_path / "absent.sqlite3") as session:
        tasks = session.tools.call("alas_tools", {}).data["tasks"]
        assert all("schedule" not in t for t in tasks)
        assert not (tmp_path / "absent.sqlite3").exists()


def test_an_empty_postgresql_database_is_no_schedule_and_gets_no_table(tmp_path, monkeypatch, postgres):
    import psycopg

    monkeypatch.setenv("ENGINE_HOME", str(tmp_path / "home"))
    url = postgres.new_database()
    with open_session(schedule_db=url) as session:
        assert all("schedule" not in t for t in session.tools.call("alas_tools", {}).data["tasks"])
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()[0] == 0
