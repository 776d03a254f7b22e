"""The studio shows the schedule `schedule status` shows, from the same database; a broken database is a 503 the
page shows, never a 500; no database is a note."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from engine.faces.studio import create_app
from engine.runtime.session import open_session
from engine.schedule.store import Store, new_owner

BASE = "http://127.0.0.1:8012"
NOW = 1_800_000_000.0


@pytest.fixture()
def client(tmp_path):
    session = open_session()
    app = create_app(session, transcript_dir=tmp_path / "t", captures_dir=tmp_path / "c")
    with TestClient(app, base_url=BASE) as made:
        yield made
    app.state.studio.close()
    session.close()


def test_the_panel_reads_the_schedules_own_status(client, tmp_path, monkeypatch):
    db = tmp_path / "schedule.sqlite3"
    monkeypatch.setenv("ENGINE_SCHEDULE_DB", str(db))
    assert "no scheduler has run" in client.get("/api/schedule").json()["note"]
    store = Store(db)
    store.take_device("sim-0", new_owner(), NOW)
    store.ensure_tasks("sim-0", ["commission", "mail.collect"], NOW)
    body = client.get("/api/schedule").json()
    assert body == {**store.status(NOW), "devices": body["devices"]}
    (dev,) = body["devices"]
    assert dev["device"] == "sim-0" and [t["task"] for t in dev["tasks"]] == ["commission", "mail.collect"]
    page = client.get("/").text
    assert 'id="schedule-panel"' in page and "/static/schedule.js" in page
    assert client.get("/static/schedule.js").status_code == 200


def test_a_broken_database_is_a_503_with_the_reason(client, tmp_path, monkeypatch):
    db = tmp_path / "broken.sqlite3"
    db.write_bytes(b"not a database " * 50)
    monkeypatch.setenv("ENGINE_SCHEDULE_DB", str(db))
    answer = client.get("/api/schedule")
    assert answer.status_code == 503 and "cannot be read" in answer.json()["error"]


def test_the_panel_shows_a_fleet_on_postgresql_without_its_password(client, postgres, monkeypatch):
    url = postgres.new_database()
    monkeypatch.setenv("ENGINE_DB_URL", url)
    empty = client.get("/api/schedule")
    assert "no scheduler has run" in empty.json()["note"] and postgres.password not in empty.text
    store = Store(url)
    for device, host in (("a1", "host-a"), ("b1", "host-b")):
        store.take_device(device, f"{host}:1:x.1:00000000", NOW)
        store.ensure_tasks(device, ["commission"], NOW)
    body = client.get("/api/schedule")
    assert {d["device"]: d["host"] for d in body.json()["devices"]} == {"a1": "host-a", "b1": "host-b"}
    assert body.json()["database"] == store.where and postgres.password not in body.text
    monkeypatch.setenv("ENGINE_DB_URL", url.replace(postgres.password, "wrong-pw-4242"))
    refused = client.get("/api/schedule")
    assert refused.status_code == 503 and "wrong-pw-4242" not in refused.text
    store.close()
