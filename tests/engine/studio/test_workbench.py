"""The studio as a graph author's daily tool, through its HTTP API: a run belongs to the tab that started it and
a reloaded tab can take it back; a hop counts as verified only once a look verifies it; recognition of one chosen
frame from every source, with every candidate's scores and the reason; a signature tested over a folder and its
subfolders; a template never replaced unasked, its old file kept."""

from __future__ import annotations

import threading
from pathlib import Path

import cv2
import numpy as np
import pytest
from starlette.testclient import TestClient

from engine.faces.studio import create_app
from engine.runtime.session import open_session

BASE = "http://127.0.0.1:8011"
GATE_S = 10.0


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("workbench")


@pytest.fixture(scope="module")
def session(home):
    opened = open_session(transcript_dir=home / "transcript")
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def app(session, home):
    made = create_app(session, transcript_dir=home / "transcript", captures_dir=home / "captures")
    yield made
    made.state.studio.close()


@pytest.fixture(scope="module")
def client(app):
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as made:
        yield made


@pytest.fixture
def gate(session, monkeypatch):
    """Taps wait until the test opens the gate (bounded): a goto stays in progress while the test looks at it."""
    opened = threading.Event()
    device = session.navigator.actuator.device
    tap = device.tap

    def gated(*args, **kwargs):
        opened.wait(GATE_S)
        return tap(*args, **kwargs)

    monkeypatch.setattr(device, "tap", gated)
    yield opened
    opened.set()


def frame_of(session) -> np.ndarray:
    return cv2.imdecode(np.frombuffer(session.tools.call("adb_screenshot", {}).png, np.uint8), cv2.IMREAD_COLOR)


def test_a_run_belongs_to_its_tab_and_a_reloaded_tab_gets_it_back(client, app, gate):
    runner = app.state.studio.runner
    runner.wait(GATE_S)
    client.post("/api/goto", json={"page": "page_login"})
    runner.wait(GATE_S)
    started = client.post("/api/goto", json={"page": "page_reward", "tab": "tab-A"})
    assert started.status_code == 202 and started.json()["tab"] == "tab-A"
    run = started.json()["run"]
    mine = client.get("/api/run?tab=tab-A").json()["current"]  # tab A after a reload: the run is still running
    assert mine["run"] == run and mine["mine"] is True and mine["page"] == "page_reward"
    theirs = client.get("/api/run?tab=tab-B").json()
    assert theirs["current"]["mine"] is False and theirs["last"] is None
    refused = client.post("/api/goto", json={"page": "page_main", "tab": "tab-B"})
    assert refused.status_code == 409 and refused.json()["mine"] is False and "another tab" in refused.json()["error"]
    gate.set()
    runner.wait(GATE_S)
    snap = client.get("/api/run?tab=tab-A").json()
    assert snap["current"] is None and snap["last"]["run"] == run and snap["last"]["result"]["ok"] is True
    events = snap["last"]["events"]
    assert all(e["tab"] == "tab-A" and e["run"] == run for e in events)
    assert [e["n"] for e in events] == list(range(1, len(events) + 1))
    # Every hop tried is followed by a look that verifies its page: only that look ticks it.
    for i, event in enumerate(events):
        if event["event"] == "hop":
            later = [e for e in events[i + 1:] if e["event"] == "look"]
            assert later and later[0]["verdict"] == "verified" and later[0]["expected"] == event["to"], events
            assert later[0]["believed"] == event["to"]
    assert client.get("/api/run?tab=tab-B").json()["last"] is None
    assert client.get("/api/run?tab=..%2F").status_code == 400


def test_a_hop_whose_look_does_not_verify_it_is_sent_as_tried_only():
    """The runner passes each look on with its verdict; a hop is verified only by a look with verdict "verified"
    for its page, and the believed page moves only on a verified or mismatched look (as the navigator's belief)."""
    from types import SimpleNamespace

    from engine.core.results import ToolResult
    from engine.faces.studio.runs import EventBus, GotoRunner

    class Tools:
        on_event = None

        def call(self, name, arguments):
            for kind, entry in [("action", {"hop": 1, "source": "page_a", "to": "page_b", "action": {"type": "tap"}}),
                                ("verdict", {"verdict": "loading", "expected": "page_b", "observed": None}),
                                ("verdict", {"verdict": "mismatch", "expected": "page_b", "observed": "page_c"})]:
                self.on_event(kind, entry)
            return ToolResult(False, "stuck", "never reached page_b", {"observed": "page_c", "hops": 1})

    bus = EventBus()
    queue = bus.subscribe()
    runner = GotoRunner(Tools(), bus, SimpleNamespace(belief=SimpleNamespace(state="page_a")))
    runner.start("page_b", "tab-T")
    runner.wait(GATE_S)
    events = [queue.get_nowait() for _ in range(queue.qsize())]
    assert [name for name, _ in events] == ["hop", "look", "look", "result"]
    looks = [data for name, data in events if name == "look"]
    assert [(d["verdict"], d["believed"]) for d in looks] == [("loading", "page_a"), ("mismatch", "page_c")]
    assert not any(d["verdict"] == "verified" for d in looks)
    assert all(d["tab"] == "tab-T" and d["target"] == "page_b" for _, d in events[:-1])


def test_recognition_explains_a_frame_from_every_source(client, app, session, home):
    live = client.post("/api/recognize", json={"source": "live"}).json()
    page = live["observation"]["page"]
    assert page and live["frame"]["source"] == "live" and client.get(live["frame"]["url"]).status_code == 200
    names = {c["name"] for c in live["candidates"]}
    graph = session.graph
    assert {p for p in graph.page_names if p != graph.unknown_page} <= names
    assert {p.name for p in graph.popups} <= names
    won = next(c for c in live["candidates"] if c["name"] == page)
    assert won["chosen"] and won["hit"] and f"{page} won" in live["why"]
    for candidate in live["candidates"]:
        for sig in candidate["signatures"]:
            assert len(sig["area"]) == 4 and sig["source"] is not None
            if sig["hit"] is not None:
                assert isinstance(sig["threshold"], float) and (sig["score"] >= sig["threshold"]) == sig["hit"] or \
                    sig["channel"] == "color", sig

    # An uploaded PNG that shows nothing known: no page, and why names the closest misses with their thresholds.
    noise = np.random.default_rng(3).integers(0, 255, (720, 1280, 3), dtype=np.uint8)
    saved = client.post("/api/upload", content=cv2.imencode(".png", noise)[1].tobytes(),
                        headers={"Content-Type": "image/png"}).json()
    unknown = client.post("/api/recognize", json={"source": "frame", "name": saved["name"]}).json()
    assert unknown["observation"]["page"] is None and not any(c["chosen"] for c in unknown["candidates"])
    assert unknown["why"].startswith("No page hit. Closest:") and "below its threshold" in unknown["why"]

    # An error bundle's frame, and a run's look.
    bundle = session.transcript.error_bundle(home / "transcript" / "error_bundles", [("last", frame_of(session))],
                                             result={"ok": False, "status": "stuck"})
    file = min(p.name for p in Path(bundle).glob("*.png"))
    from_bundle = client.post("/api/recognize", json={"source": "bundle", "bundle": Path(bundle).name,
                                                      "file": file}).json()
    assert from_bundle["observation"]["page"] == page and from_bundle["frame"]["label"].endswith(file)
    client.post("/api/goto", json={"page": "page_main", "tab": "tab-R"})
    app.state.studio.runner.wait(GATE_S)
    steps = client.get("/api/steps").json()["steps"]
    assert steps and client.get(steps[0]["url"]).content.startswith(b"\x89PNG")
    line = next(x for x in session.transcript.since(steps[0]["seq"] - 1) if x["seq"] == steps[0]["seq"])
    assert line["kind"] == "observation"
    from_step = client.post("/api/recognize", json={"source": "step", "seq": steps[0]["seq"]}).json()
    assert from_step["observation"]["page"] == line["page"]
    gone = client.post("/api/recognize", json={"source": "step", "seq": 10 ** 6})
    assert gone.status_code == 400 and "gone" in gone.json()["error"]
    # a transcript step stays choosable after the studio restarts: its frame is in the transcript's steps/ folder
    from engine.faces.studio.recognition import StepFrames

    app.state.studio.steps.flush()
    later = StepFrames(folder=home / "transcript" / "steps")
    assert steps[0]["seq"] in [row["seq"] for row in later.listing()]
    again = later.get(steps[0]["seq"])
    assert again is not None and again[1] == steps[0]["label"]
    assert (again[0] == app.state.studio.steps.get(steps[0]["seq"])[0]).all()  # PNG is lossless


def test_a_signature_is_tested_on_every_frame_of_a_folder_and_its_subfolders(client, session, home):
    captures = home / "captures"
    frame = frame_of(session)
    nested = captures / "set" / "deeper"
    nested.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(captures / "set" / "top.png"), frame)
    cv2.imwrite(str(nested / "inner.png"), frame)
    cv2.imwrite(str(nested / "black.png"), np.zeros_like(frame))
    page = client.get("/api/observe").json()["page"]
    explained = client.post("/api/recognize", json={"source": "live"}).json()
    sig = next(c for c in explained["candidates"] if c["name"] == page)["signatures"][0]["source"]
    result = client.post("/api/test-signature", json={"signature": sig, "folder": "captures/set"}).json()
    by_file = {row["file"]: row["hit"] for row in result["frames"]}
    assert by_file == {"deeper/black.png": False, "deeper/inner.png": True, "top.png": True}, result


def test_frame_files_is_bounded_and_stays_in_its_folder(tmp_path):
    from engine.faces.studio.authoring import frame_files

    (tmp_path / "a" / "b").mkdir(parents=True)
    for i in range(5):
        (tmp_path / "a" / "b" / f"{i}.png").write_bytes(b"x")
    (tmp_path / "z.png").write_bytes(b"x")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.png"
    outside.write_bytes(b"x")
    (tmp_path / "link.png").symlink_to(outside)
    (tmp_path / "loop").symlink_to(tmp_path, target_is_directory=True)
    files, more = frame_files(tmp_path, limit=4)
    assert [p.relative_to(tmp_path).as_posix() for p in files] == ["a/b/0.png", "a/b/1.png", "a/b/2.png", "a/b/3.png"]
    assert more == 2
    files, _ = frame_files(tmp_path, skip=(tmp_path / "a",))
    assert [p.name for p in files] == ["z.png"]


def test_a_template_is_not_overwritten_unasked_and_the_old_file_is_kept(client, session, app):
    saved = client.post("/api/capture").json()
    body = {"frame": saved["name"], "box": [100, 100, 160, 140], "name": "KEEP_ME"}
    first = client.post("/api/template", json=body)
    assert first.status_code == 200, first.text
    path = Path(first.json()["path"])
    old = path.read_bytes()
    again = client.post("/api/template", json={**body, "box": [200, 200, 240, 230]})
    assert again.status_code == 409 and again.json()["exists"] == str(path)
    assert path.read_bytes() == old and not list(path.parent.glob("KEEP_ME.png.*.bak"))
    replaced = client.post("/api/template", json={**body, "box": [200, 200, 240, 230], "overwrite": True})
    assert replaced.status_code == 200, replaced.text
    backups = list(path.parent.glob("KEEP_ME.png.*.bak"))
    assert len(backups) == 1 and backups[0].read_bytes() == old
    assert replaced.json()["replaced"] == [{"path": str(path), "backup": str(backups[0])}]
    assert replaced.json()["old_area"] == [100, 100, 160, 140]
    assert cv2.imread(str(path)).shape[:2] == (30, 40)
    assert not any(p.suffix == ".bak" for p in path.parent.glob("*.png"))  # no pack reads a .bak as a template
