"""The studio never answers 500: under the flaky-device scenario (tests/data/scenarios/flaky_device.yaml), under a
device whose every request fails, and under malformed requests, every answer is a 2xx, a structured 4xx or a
structured 503, and none comes from the last-resort shield (``internal``), which would mean a handler had a bug."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from engine.faces.studio import create_app
from engine.faces.studio.replies import Shield, error
from engine.runtime.session import open_session

ROOT = Path(__file__).resolve().parents[3]
FLAKY = ROOT / "tests" / "data" / "scenarios" / "flaky_device.yaml"
BASE = "http://127.0.0.1:8011"
ROUNDS = 5
"""Polling rounds under the flaky device (each: every live endpoint once, while gotos run)."""


def served(tmp_path: Path, scenario: Path | None) -> tuple:
    session = open_session(transcript_dir=tmp_path / "transcript", scenario=scenario)
    app = create_app(session, transcript_dir=tmp_path / "transcript", captures_dir=tmp_path / "captures")
    return session, app


def judge(response, where: str) -> None:
    """A 2xx, or a JSON error with a 4xx or 503 that no shield had to make."""
    assert response.status_code != 500, f"{where}: 500 {response.text[:300]}"
    if response.status_code < 400:
        return
    assert response.status_code < 500 or response.status_code == 503, f"{where}: {response.status_code}"
    body = response.json()
    assert isinstance(body.get("error"), str) and body["error"], f"{where}: {body}"
    assert not body.get("internal"), f"{where}: a handler failed: {body['error']}"


LIVE = [("GET", "/api/info"), ("GET", "/api/observe"), ("GET", "/api/frame.png"), ("POST", "/api/capture"),
        ("GET", "/api/run?tab=poller"), ("GET", "/api/steps"), ("GET", "/api/transcript?since=0"),
        ("GET", "/api/bundles"), ("GET", "/api/route?to=page_reward")]


def test_the_flaky_device_never_gets_a_500(tmp_path):
    session, app = served(tmp_path, FLAKY)
    seen: dict[int, int] = {}
    try:
        with TestClient(app, base_url=BASE, raise_server_exceptions=False) as client:
            for round_ in range(ROUNDS):  # a goto runs (or is refused with 409) while the page polls
                target = ("page_reward", "page_main")[round_ % 2]
                judge(client.post("/api/goto", json={"page": target, "tab": "flaky"}), "goto")
                for method, path in LIVE:
                    response = client.request(method, path)
                    judge(response, path)
                    seen[response.status_code] = seen.get(response.status_code, 0) + 1
                judge(client.post("/api/recognize", json={"source": "live"}), "recognize live")
            app.state.studio.runner.wait(15)
    finally:
        app.state.studio.close()
        session.close()
    assert seen.get(200, 0) > len(LIVE) * ROUNDS // 2, seen


def test_a_dead_device_is_a_503_with_the_engine_status_on_every_frame_endpoint(tmp_path):
    """Every device request fails: the endpoints that need a frame say so with 503 and the ToolResult's status
    (the duplicated ``status`` argument made these 500s)."""
    dead = tmp_path / "dead.yaml"
    dead.write_text("description: a device that never answers\nseed: 1\nadb_error_p: 1.0\nadb_error: offline\n")
    session, app = served(tmp_path, dead)
    try:
        with TestClient(app, base_url=BASE, raise_server_exceptions=False) as client:
            for method, path, body in [("GET", "/api/frame.png", None), ("GET", "/api/observe", None),
                                       ("POST", "/api/capture", None), ("POST", "/api/recognize", {"source": "live"})]:
                response = client.request(method, path, json=body)
                judge(response, path)
                assert response.status_code == 503, (path, response.status_code, response.text)
                assert response.json().get("status") or path == "/api/observe", (path, response.json())
    finally:
        app.state.studio.close()
        session.close()


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("malformed")
    session, app = served(tmp, None)
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as made:
        yield made
    app.state.studio.close()
    session.close()


JSON_POSTS = ["/api/goto", "/api/template", "/api/test-signature", "/api/recognize",
              "/api/proposals/NOPE/accept", "/api/proposals/NOPE/reject"]
BODIES = [b"", b"{", b"null", b"[]", b'"text"', b"12", b"\xff\xfe\x00", json.dumps({"page": 3}).encode(),
          json.dumps({"page": "page_main", "tab": "../../x"}).encode(),
          json.dumps({"page": "page_main", "tab": ["a"]}).encode(),
          json.dumps({"frame": "../../etc/passwd", "box": [0, 0, 9, 9], "name": "X"}).encode(),
          json.dumps({"frame": "nope.png", "box": "0,0,9,9", "name": "X", "overwrite": "yes"}).encode(),
          json.dumps({"frame": 1, "box": [True, 0, 9, 9], "name": "X"}).encode(),
          json.dumps({"signature": {"type": "template"}, "folder": ["captures"]}).encode(),
          json.dumps({"signature": {"type": "color", "area": [0, 0, 5, 5], "rgb": [1, 2, 3]},
                      "folder": "/etc"}).encode(),
          json.dumps({"signature": {"type": "color", "area": [0, 0, 5, 5], "rgb": [1, 2, 3]},
                      "folder": "transcript/../../.."}).encode(),
          json.dumps({"signature": {"type": "nope"}}).encode(),
          json.dumps({"source": "step", "seq": 10 ** 30}).encode(),
          json.dumps({"source": "step", "seq": True}).encode(),
          json.dumps({"source": "bundle", "bundle": "../x", "file": "a.png"}).encode(),
          json.dumps({"source": "frame", "name": "%00.png"}).encode(),
          json.dumps({"source": "frame", "name": ["a"]}).encode(),
          json.dumps({"source": {"live": 1}}).encode()]
GETS = ["/api/route?to=", "/api/route?to=page_main&from=nowhere", "/api/route?to=%00", "/api/run?tab=%2F..",
        "/api/run?tab=" + "x" * 200, "/api/transcript?since=abc", "/api/transcript?since=1e999&limit=-5",
        "/api/events?max_s=nan", "/api/events?max_s=0", "/api/graph.svg?to=%ff", "/api/observed/0.png",
        "/api/observed/99999999999999999999.png", "/api/steps/0.png", "/api/steps/-1.png", "/api/bundles/..",
        "/api/bundles/%2e%2e/x.png", "/api/frames/..%2f..%2fetc", "/api/frames/a.txt", "/static/..%2fapp.py",
        "/api/proposals/..%2f/frame.png", "/api/nothing", "/api/info?x=%ff%fe"]


@pytest.mark.parametrize("path", JSON_POSTS)
def test_malformed_json_posts_get_a_structured_answer(client, path):
    for body in BODIES:
        for kind in ("application/json", "text/plain", "multipart/form-data; boundary=x"):
            judge(client.post(path, content=body, headers={"Content-Type": kind}), f"POST {path} {body[:40]!r}")


def test_malformed_gets_and_uploads_get_a_structured_answer(client):
    for path in GETS:
        judge(client.get(path), f"GET {path}")
    uploads = [(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "image/png"), (b"\xff\xd8\xff" + b"\x00" * 10, "image/jpeg"),
               (b"--x\r\nContent-Disposition: form-data; name=file\r\n\r\nabc\r\n--x--\r\n",
                "multipart/form-data; boundary=x"), (b"--x\r\n\r\n", "multipart/form-data; boundary=x"),
               (b"", "multipart/form-data"), (b"GIF89a", "image/gif")]
    for body, kind in uploads:
        judge(client.post("/api/upload", content=body, headers={"Content-Type": kind}), f"upload {body[:20]!r}")


def test_the_shield_turns_an_unexpected_failure_into_a_logged_structured_503(caplog):
    async def broken(scope, receive, send):
        raise RuntimeError("a bug")

    async def answered(scope, receive, send):
        await error(418, "teapot", status="ok")(scope, receive, send)

    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.routing import Mount

    app = Starlette(routes=[Mount("/broken", broken), Mount("/fine", answered)], middleware=[Middleware(Shield)])
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as client:
        response = client.get("/broken")
        assert response.status_code == 503 and response.json()["internal"] is True
        assert "RuntimeError: a bug" in response.json()["error"]
        fine = client.get("/fine")
        assert fine.status_code == 418 and fine.json() == {"error": "teapot", "status": "ok"}
    assert any("failed" in r.getMessage() and r.exc_info for r in caplog.records)
