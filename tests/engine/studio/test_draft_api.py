"""The studio's draft API (engine.faces.studio.drafts) over a draft built from simulator frames
(tests/engine/studio/draftkit.py): the draft is shown page by page with its frames, every edit works through the
API and names the revision it was made on, accepting asks before it replaces and writes a graph that validates;
hostile paths and bodies get a JSON 4xx, never a 500 and never the shield's 503."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from engine.faces.studio import create_app
from engine.runtime.session import open_session
from tests.engine.studio.draftkit import make_draft
from tests.engine.studio.test_no_500 import judge

BASE = "http://127.0.0.1:8011"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Path:
    return make_draft(tmp_path_factory.mktemp("made"))


@pytest.fixture(scope="module")
def session():
    opened = open_session()
    yield opened
    opened.close()


@pytest.fixture
def studio(session, made, tmp_path):
    """A client of a studio over a fresh copy of the draft; yields (client, draft folder)."""
    folder = tmp_path / "draft"
    shutil.copytree(made, folder)
    app = create_app(session, captures_dir=tmp_path / "captures", draft_dir=folder)
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as client:
        yield client, folder
    app.state.studio.close()


def ok(response) -> dict:
    assert response.status_code == 200, response.text
    return response.json()


def refused(response, status: int, reason: str | None = None) -> dict:
    judge(response, response.url.path)
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert reason is None or body.get("reason") == reason, body
    return body


def test_the_draft_is_shown_page_by_page_with_its_frames_and_signature_boxes(studio):
    client, folder = studio
    view = ok(client.get("/api/draft"))
    assert view["folder"] == str(folder.resolve()) and view["resolution"] == [1280, 720]
    assert [p["name"] for p in view["pages"]] == ["page_main", "page_1", "page_2", "page_3"]
    main = view["pages"][0]
    assert main["count"] == 2 and main["title"] == "DEMO QUEST" and main["links_out"] == 3
    assert all(len(s["area"]) == 4 for s in main["signatures"]) and main["signatures"]
    image = client.get(main["members"][0]["url"])
    assert image.status_code == 200 and image.content.startswith(PNG_MAGIC)
    assert {(link["from"], link["to"]) for link in view["links"]} >= {("page_main", "page_1"), ("page_3", "page_main")}
    assert {r["kind"] for r in view["review"]} == {"maybe_same_page", "maybe_two_pages", "link_seen_once"}
    assert view["original"] is False
    popup = view["popups"][0]
    assert popup["name"] == "popup_1" and popup["over"] == ["page_main"] and popup["dismiss"]["type"] == "tap"
    assert client.get(popup["members"][0]["url"]).content.startswith(PNG_MAGIC)


def test_every_edit_through_the_api(studio):
    client, folder = studio
    rev = ok(client.get("/api/draft"))["rev"]
    view = ok(client.post("/api/draft/rename", json={"rev": rev, "old": "page_main", "new": "page_home"}))
    assert view["pages"][0]["name"] == "page_home" and view["did"] == "renamed page_main to page_home"
    assert view["original"] is True and view["rev"] != rev
    refused(client.post("/api/draft/rename", json={"rev": rev, "old": "page_1", "new": "page_a"}), 409, "stale")
    view = ok(client.post("/api/draft/merge", json={"rev": view["rev"], "keep": "page_1", "other": "page_2"}))
    assert [p["name"] for p in view["pages"]] == ["page_home", "page_1", "page_3"]
    assert view["pages"][1]["count"] == 4 and view["pages"][1]["signatures"]
    frames = [m["path"] for m in view["pages"][2]["members"]]
    view = ok(client.post("/api/draft/split", json={"rev": view["rev"], "page": "page_3", "frames": frames[1:],
                                                     "name": "page_settings"}))
    assert [p["name"] for p in view["pages"]] == ["page_home", "page_1", "page_3", "page_settings"]
    link = next(li for li in view["links"] if (li["from"], li["to"]) == ("page_3", "page_home"))
    view = ok(client.post("/api/draft/drop-link", json={"rev": view["rev"], "index": link["index"],
                                                         "from": "page_3", "to": "page_home"}))
    assert not any((li["from"], li["to"]) == ("page_3", "page_home") for li in view["links"])
    assert ok(client.get("/api/draft"))["rev"] == view["rev"]


def test_accept_asks_before_it_replaces_then_writes_a_graph_that_validates(studio):
    client, folder = studio
    rev = ok(client.get("/api/draft"))["rev"]
    rev = ok(client.post("/api/draft/rename", json={"rev": rev, "old": "page_1", "new": "page_shop"}))["rev"]
    before = (folder / "pages.yaml").read_bytes()
    asked = refused(client.post("/api/draft/accept", json={"rev": rev}), 409, "exists")
    assert "pages.yaml" in asked["exists"] and (folder / "pages.yaml").read_bytes() == before
    done = ok(client.post("/api/draft/accept", json={"rev": rev, "overwrite": True}))
    assert done["validate"]["ok"], done["validate"]
    assert "page_shop" in (folder / "pages.yaml").read_text()
    backup = next(r["backup"] for r in done["replaced"] if r["path"] == "pages.yaml")
    assert (folder / backup).read_bytes() == before
    out = ok(client.post("/api/draft/accept", json={"rev": rev, "out": "reviewed"}))
    assert out["folder"] == str((folder / "reviewed").resolve()) and out["validate"]["ok"]
    refused(client.post("/api/draft/accept", json={"rev": "0" * 16}), 409, "stale")


def test_without_a_draft_the_panel_says_how_to_open_one(session, tmp_path):
    app = create_app(session, captures_dir=tmp_path / "captures")
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as client:
        body = ok(client.get("/api/draft"))
        assert body["folder"] is None and "--draft" in body["note"]
        for path in ("/api/draft/rename", "/api/draft/accept"):
            refused(client.post(path, json={"rev": "x", "old": "a", "new": "b"}), 404)
        refused(client.get("/api/draft/files/evidence/x.png"), 404)
    app.state.studio.close()


HOSTILE_FILES = ["../draft.yaml", "..%2Fdraft.yaml", "%2e%2e/%2e%2e/etc/passwd", "evidence/../../outside.png",
                 "draft.yaml", "evidence/page_1", "evidence/page_1/none.png", "%2Fetc%2Fpasswd", "evidence/out.png",
                 "evidence/%00.png", "C:%5Cwindows%5Cx.png"]


def test_hostile_file_paths_stay_inside_the_draft(studio, tmp_path):
    client, folder = studio
    secret = tmp_path / "outside.png"
    secret.write_bytes(PNG_MAGIC + b"secret")
    (folder / "evidence" / "out.png").symlink_to(secret)
    for path in HOSTILE_FILES:
        response = client.get(f"/api/draft/files/{path}")
        judge(response, path)
        assert response.status_code in (400, 404), (path, response.status_code)
        assert b"secret" not in response.content


def test_hostile_bodies_get_a_structured_4xx(studio):
    client, folder = studio
    rev = ok(client.get("/api/draft"))["rev"]
    before = (folder / "draft.yaml").read_bytes()
    cases = [
        ("rename", b"not json", 400), ("rename", b"[1, 2]", 400), ("rename", {"rev": rev}, 400),
        ("rename", {"rev": rev, "old": "page_1", "new": "../evil"}, 400),
        ("rename", {"rev": rev, "old": "page_1", "new": "x" * 5000}, 400),
        ("rename", {"rev": rev, "old": "y" * 500_000, "new": "page_x"}, 404),
        ("rename", {"rev": rev, "old": "nope", "new": "page_x"}, 404),
        ("rename", {"rev": rev, "old": "page_1", "new": "page_2"}, 409),
        ("rename", {"rev": 5, "old": "page_1", "new": "page_x"}, 400),
        ("merge", {"rev": rev, "keep": "page_1", "other": ["page_2"]}, 400),
        ("merge", {"rev": rev, "keep": "page_1", "other": "page_1"}, 400),
        ("split", {"rev": rev, "page": "page_3", "frames": "evidence/page_3/0001.png", "name": "p"}, 400),
        ("split", {"rev": rev, "page": "page_3", "frames": ["/etc/passwd"], "name": "p"}, 404),
        ("split", {"rev": rev, "page": "page_3", "frames": [1], "name": "p"}, 400),
        ("drop-link", {"rev": rev, "index": 10 ** 30, "from": "a", "to": "b"}, 404),
        ("drop-link", {"rev": rev, "index": "0", "from": "a", "to": "b"}, 404),
        ("drop-link", {"rev": rev, "index": 0, "from": "page_1", "to": "page_3"}, 409),
        ("accept", {"rev": rev, "out": "../outside"}, 400), ("accept", {"rev": rev, "out": "/tmp/x"}, 400),
        ("accept", {"rev": rev, "out": "evidence"}, 400), ("accept", {"rev": rev, "overwrite": "yes"}, 400),
        ("accept", {"rev": rev, "out": 7}, 400), ("accept", {"rev": rev, "out": "a\x00b"}, 400),
    ]
    for verb, body, status in cases:
        kwargs = {"content": body} if isinstance(body, bytes) else {"json": body}
        response = client.post(f"/api/draft/{verb}", **kwargs)
        refused(response, status)
        assert len(response.content) < 2000, (verb, len(response.content))  # a huge name is not echoed back
    assert (folder / "draft.yaml").read_bytes() == before  # nothing was changed
    assert not (folder.parent / "outside").exists()


def test_a_broken_draft_on_disk_is_a_400_not_a_500(studio):
    client, folder = studio
    (folder / "draft.yaml").write_text("format: engine-draft/1\npages: [unclosed\n")
    body = refused(client.get("/api/draft"), 400)
    assert "draft.yaml" in body["error"]
    (folder / "draft.yaml").write_text("format: engine-draft/1\ngame: g\nresolution: [1, 2]\nbogus: 1\n")
    refused(client.get("/api/draft"), 400)


def test_a_draft_the_explorer_made_is_reviewed_and_accepted(session, tmp_path):
    """engine.explore's own run (16 actions on the good graph's simulator, virtual time), reviewed through the
    API: a rename, a merge (made, or refused because no region is the same on both pages' frames), a dropped link,
    and the accepted graph validates."""
    from tests.engine.studio.draftkit import explored_draft

    folder = explored_draft(tmp_path / "explored")
    app = create_app(session, captures_dir=tmp_path / "captures", draft_dir=folder)
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as client:
        view = ok(client.get("/api/draft"))
        names = [p["name"] for p in view["pages"]]
        assert len(names) >= 3 and all(p["count"] >= 1 for p in view["pages"])
        view = ok(client.post("/api/draft/rename", json={"rev": view["rev"], "old": names[0], "new": "page_first"}))
        merged = client.post("/api/draft/merge", json={"rev": view["rev"], "keep": names[1], "other": names[2]})
        if merged.status_code == 200:
            view = merged.json()
            assert names[2] not in [p["name"] for p in view["pages"]]
        else:
            assert refused(merged, 400, "invalid")["error"].startswith("no region stays the same")
        if view["links"]:
            link = view["links"][0]
            view = ok(client.post("/api/draft/drop-link", json={"rev": view["rev"], "index": 0, "from": link["from"],
                                                                 "to": link["to"]}))
        done = ok(client.post("/api/draft/accept", json={"rev": view["rev"], "out": "reviewed"}))
        assert done["validate"]["ok"], done["validate"]
        assert "page_first" in (folder / "reviewed" / "pages.yaml").read_text()
    app.state.studio.close()
