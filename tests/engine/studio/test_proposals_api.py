"""The studio's proposals API (engine.faces.studio.proposals) over an embedded-simulator session on a copy of the shipped
graph: a popup learned from a real simulator frame is listed with its frame and crop, accepted into the graph
copy and seen by the live observer at once; one whose crop is what a known page shows is refused and rejected;
names that try to escape are JSON 4xx; the shipped graph is never written."""

from __future__ import annotations

import shutil

import cv2
import numpy as np
import pytest
import yaml
from starlette.testclient import TestClient

from engine.core.paths import builtin_graph_dir
from engine.faces.studio import create_app
from engine.learning.learner import Learner, Lesson
from engine.runtime.session import open_session

BASE = "http://127.0.0.1:8011"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
POPUP = "GET_ITEMS_1"
"""An Azur Lane popup the simulator draws; its dismiss button is where the lesson's tap goes."""


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("studio-proposals")
    graph = root / "my_graph"
    shutil.copytree(builtin_graph_dir(), graph)
    return {"graph": graph, "transcript": root / "transcript", "captures": root / "captures",
            "proposals": root / "transcript" / "proposals"}


@pytest.fixture(scope="module")
def session(folders):
    opened = open_session(graph_dir=folders["graph"], transcript_dir=folders["transcript"])
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def client(session, folders):
    app = create_app(session, graph_dir=folders["graph"], transcript_dir=folders["transcript"],
                     captures_dir=folders["captures"])
    with TestClient(app, base_url=BASE) as made:
        yield made
    app.state.studio.close()


def dismiss_point(graph) -> tuple[int, int]:
    action = graph.popup(POPUP).dismiss[0]
    if action.button is None:
        return tuple(action.point)
    x1, y1, x2, y2 = graph.button(action.button).click_area
    return (x1 + x2) // 2, (y1 + y2) // 2


def popup_frame(session) -> np.ndarray:
    """A real frame of page_main under the popup; the popup is then closed by a tap on its button."""
    game = session.sim.game
    game.goto("page_main")
    game.show_popup(POPUP)
    frame = session.device.screenshot()
    game.tap(*dismiss_point(session.graph))
    assert POPUP not in game.truth()["popups"]
    return frame


def main_frame(session) -> np.ndarray:
    session.sim.game.goto("page_main")
    return session.device.screenshot()


def propose(folder, frame: np.ndarray, point: tuple[int, int], label: str) -> str:
    """The lesson recorded as the learner does once a tap closed what covered page_main: the proposal's name."""
    return Learner(folder).record(Lesson(frame, point, label), "page_main")[0].stem


def listed(client) -> dict[str, dict]:
    body = client.get("/api/proposals").json()
    assert body["warnings"] == [], body["warnings"]
    return {row["name"]: row for row in body["proposals"]}


def decode(png: bytes) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)


def test_a_learned_popup_is_listed_then_accepted_into_the_graph_copy_and_seen_live(client, session, folders):
    frame = popup_frame(session)
    name = propose(folders["proposals"], frame, dismiss_point(session.graph), "Items obtained panel")
    row = listed(client)[name]
    assert row["label"] == "Items obtained panel" and row["shown_on"] == "page_main" and row["sightings"] == 1
    x1, y1, x2, y2 = row["area"]
    shown = client.get(row["frame_url"])
    assert shown.status_code == 200 and shown.headers["content-type"] == "image/png"
    assert decode(shown.content).shape == (720, 1280, 3)
    crop = client.get(row["crop_url"])
    assert crop.content.startswith(PNG_MAGIC) and decode(crop.content).shape == (y2 - y1, x2 - x1, 3)
    popup = yaml.safe_load(row["yaml"])["popups"][0]
    assert popup["name"] == name and popup["dismiss"][0]["point"] == row["tap"]
    assert name not in session.observer.observe(frame).popups

    done = client.post(f"/api/proposals/{name}/accept")
    assert done.status_code == 200, done.text
    body = done.json()
    graph_file = folders["graph"] / f"learned_{name.lower()}.yaml"
    assert body["accepted"] == name and body["by"] == "user" and body["adopted"] is True
    assert body["graph_file"] == str(graph_file) and graph_file.is_file()
    assert (folders["graph"] / "learned_assets" / "learned" / f"{name}.png").is_file()
    assert body["template"].startswith(str(folders["graph"] / "learned_assets"))
    assert (folders["proposals"] / "accepted" / f"{name}.yaml").is_file()
    assert name not in listed(client) and client.get(row["frame_url"]).status_code == 404
    assert name in session.observer.observe(frame).popups  # the live session took the grown graph up
    assert name in client.get("/api/info").json()["popups"]
    again = client.post(f"/api/proposals/{name}/accept")
    assert again.status_code == 404 and name in again.json()["error"]


def test_a_crop_that_a_known_page_shows_too_is_refused_with_its_frames_then_rejected(client, session, folders):
    frame = main_frame(session)
    name = propose(folders["proposals"], frame, (60, 30), "Corner of the main page")
    known = folders["proposals"] / "known"
    known.mkdir(exist_ok=True)
    cv2.imwrite(str(known / "page_main.png"), frame)  # the learner keeps such frames of known pages

    refused = client.post(f"/api/proposals/{name}/accept")
    assert refused.status_code == 409, refused.text
    assert refused.json()["fired"] == ["proposals/known/page_main.png"]
    assert "known pages" in refused.json()["error"]
    assert not (folders["graph"] / f"learned_{name.lower()}.yaml").exists()
    assert not (folders["graph"] / "learned_assets" / "learned" / f"{name}.png").exists()
    assert name in listed(client) and name not in session.observer.observe(frame).popups

    rejected = client.post(f"/api/proposals/{name}/reject")
    assert rejected.status_code == 200 and rejected.json() == {"rejected": name}
    assert (folders["proposals"] / "rejected" / f"{name}.yaml").is_file()
    assert (folders["proposals"] / "rejected" / f"{name}.frame.png").is_file()
    assert name not in listed(client)
    assert client.post(f"/api/proposals/{name}/reject").status_code == 404


@pytest.mark.parametrize(("method", "path", "status"), [
    ("GET", "/api/proposals/..%2F..%2Fetc/frame.png", 404),
    ("GET", "/api/proposals/%2E%2E/frame.png", 400),
    ("GET", "/api/proposals/.hidden/crop.png", 400),
    ("GET", "/api/proposals/a%5Cb/crop.png", 400),
    ("GET", "/api/proposals/NOT%20A%20NAME/frame.png", 400),
    ("GET", "/api/proposals/LEARNED_NOTHING/frame.png", 404),
    ("GET", "/api/proposals/known/frame.png", 404),
    ("POST", "/api/proposals/LEARNED_NOTHING/accept", 404),
    ("POST", "/api/proposals/%2E%2E/accept", 400),
    ("POST", "/api/proposals/..%2Ftranscript/reject", 404),
    ("POST", "/api/proposals/LEARNED_NOTHING/reject", 404),
    ("GET", "/api/proposals/LEARNED_NOTHING/accept", 405),
])
def test_a_name_that_is_not_a_proposal_is_a_json_4xx(client, method, path, status):
    response = client.request(method, path)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json" and response.json()["error"]


def test_the_shipped_graph_is_never_written_and_no_transcript_means_no_proposals(session, folders):
    name = propose(folders["proposals"], main_frame(session), (60, 30), "Corner again")
    taken = session.tools.on_event
    shipped = create_app(session, transcript_dir=folders["transcript"], captures_dir=folders["captures"])
    bare = create_app(session, graph_dir=folders["graph"], captures_dir=folders["captures"])
    try:
        with TestClient(shipped, base_url=BASE) as first, TestClient(bare, base_url=BASE) as second:
            refused = first.post(f"/api/proposals/{name}/accept")
            assert refused.status_code == 409 and "shipped graph is never written" in refused.json()["error"]
            assert name in listed(first)
            body = second.get("/api/proposals").json()
            assert body["proposals"] == [] and body["folder"] is None and "--transcript" in body["note"]
            assert second.post(f"/api/proposals/{name}/reject").status_code == 404
            assert first.post(f"/api/proposals/{name}/reject").status_code == 200
    finally:
        session.tools.on_event = taken
        shipped.state.studio.close()
        bare.state.studio.close()
