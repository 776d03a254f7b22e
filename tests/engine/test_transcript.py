"""The JSONL ledger: durable lines, contiguous seq, slices, redaction, error bundles and traces."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from engine.core.redact import REDACTED, is_secret_key, redact
from engine.core.results import Evidence, Observation
from engine.runtime.transcript import Transcript, error_bundle, load_trace, read_lines, save_trace

ROOT = Path(__file__).resolve().parents[2]


def test_record_writes_one_parsable_line_per_event_with_seq_ts_kind(tmp_path):
    clock = iter([100.0, 101.5, 103.25])
    with Transcript(tmp_path / "t.jsonl", clock=lambda: next(clock)) as t:
        t.record("action", type="tap", point=(10, 20))
        t.record("observation", observation=Observation(page="page_main", confidence=0.9))
        t.record("result", ok=True, status="verified")
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    assert len(lines) == 3
    entries = [json.loads(line) for line in lines]
    assert [e["seq"] for e in entries] == [1, 2, 3]
    assert [e["ts"] for e in entries] == [100.0, 101.5, 103.25]
    assert [e["kind"] for e in entries] == ["action", "observation", "result"]
    assert entries[0]["point"] == [10, 20]
    assert entries[1]["observation"]["page"] == "page_main"


def test_appending_to_an_existing_file_continues_seq(tmp_path):
    path = tmp_path / "t.jsonl"
    with Transcript(path) as t:
        t.record("a")
        t.record("b")
    with Transcript(path) as t:
        assert t.seq == 2
        entry = t.record("c")
    assert entry["seq"] == 3
    assert [e["seq"] for e in read_lines(path)] == [1, 2, 3]


def test_a_torn_last_line_is_skipped_and_the_next_writer_starts_on_a_fresh_line(tmp_path):
    path = tmp_path / "t.jsonl"
    with Transcript(path) as t:
        t.record("a")
    with open(path, "ab") as f:
        f.write(b'{"seq": 2, "ts": 1, "kin')
    assert [e["kind"] for e in read_lines(path)] == ["a"]
    with Transcript(path) as t:
        t.record("b")
    lines = path.read_text().splitlines()
    assert lines[1].startswith('{"seq": 2, "ts": 1, "kin')
    assert json.loads(lines[2])["seq"] == 2


def test_a_corrupt_middle_line_is_an_error_not_silently_dropped(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"seq":1}\nnot json\n{"seq":3}\n')
    with pytest.raises(ValueError, match=":2:"):
        read_lines(path)


def test_tail_and_since_slice_the_ledger(tmp_path):
    with Transcript(tmp_path / "t.jsonl") as t:
        for i in range(10):
            t.record("step", i=i)
        assert [e["i"] for e in t.tail(3)] == [7, 8, 9]
        assert t.tail(0) == []
        assert [e["seq"] for e in t.since(7)] == [8, 9, 10]
        assert len(t.since(0)) == 10


def test_concurrent_writers_never_interleave_and_seq_stays_contiguous(tmp_path):
    path = tmp_path / "t.jsonl"
    with Transcript(path, fsync=False) as t:

        def write(worker: int) -> None:
            for i in range(200):
                t.record("step", worker=worker, i=i, pad="x" * (i % 50))

        threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
    entries = read_lines(path)
    assert [e["seq"] for e in entries] == list(range(1, 801))
    for worker in range(4):
        assert [e["i"] for e in entries if e["worker"] == worker] == list(range(200))


_WRITER = """
import sys
from engine.runtime.transcript import Transcript
t = Transcript(sys.argv[1])
i = 0
while i < 10_000_000:
    t.record("step", i=i, payload="y" * 3000)
    if i == 20:
        print("ready", flush=True)
    i += 1
"""


def test_after_sigkill_mid_write_every_complete_line_parses_and_nothing_is_lost(tmp_path):
    path = tmp_path / "killed.jsonl"
    with subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as child:
        try:
            assert child.stdout.readline().strip() == b"ready"
            time.sleep(0.2)  # let it be somewhere in the middle of writing; any moment will do
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait(10)
    assert child.returncode == -signal.SIGKILL
    raw = path.read_bytes().split(b"\n")
    complete, last = raw[:-1], raw[-1]
    entries = [json.loads(line) for line in complete]  # every newline-terminated line parses
    assert len(entries) > 20
    assert [e["seq"] for e in entries] == list(range(1, len(entries) + 1))
    assert [e["i"] for e in entries] == list(range(len(entries)))
    if last:
        with pytest.raises(json.JSONDecodeError):
            json.loads(last)
    assert read_lines(path) == entries


def test_secret_keys_and_the_gemini_key_value_are_never_written(tmp_path, monkeypatch):
    secret = "AIzaSyTESTTESTTESTTESTTESTTESTTESTTEST12"
    monkeypatch.setenv("GEMINI_API_KEY", secret)
    path = tmp_path / "t.jsonl"
    with Transcript(path) as t:
        t.record(
            "vision",
            api_key="sk-abc",
            headers={"Authorization": "Bearer xyz", "x-goog-api-key": secret},
            url=f"https://example.invalid/v1?key={secret}",
            note=f"called with {secret}",
            key="back",
            nested=[{"access_token": "tok"}],
        )
    text = path.read_text()
    assert secret not in text and "sk-abc" not in text and "Bearer xyz" not in text and '"tok"' not in text
    entry = read_lines(path)[0]
    assert entry["api_key"] == REDACTED
    assert entry["headers"]["Authorization"] == REDACTED
    assert entry["key"] == "back"  # a key press is not a secret
    assert REDACTED in entry["url"] and REDACTED in entry["note"]


def test_redact_makes_records_and_arrays_json_ready_without_dumping_pixels():
    frame = np.zeros((720, 1280, 3), np.uint8)
    evidence = Evidence(channel="template", signature="BACK", hit=True, score=0.97)
    body = redact({"frame": frame, "evidence": evidence, "png": b"\x89PNG", "n": np.int64(3)}, secrets=[])
    json.dumps(body)
    assert body["frame"] == {"ndarray": [720, 1280, 3], "dtype": "uint8"}
    assert body["evidence"]["signature"] == "BACK"
    assert body["png"] == {"bytes": 4}
    assert body["n"] == 3
    assert not is_secret_key("keycode") and is_secret_key("GEMINI_API_KEY")


def test_error_bundle_writes_frames_as_png_and_the_slice_as_jsonl(tmp_path):
    with Transcript(tmp_path / "t.jsonl") as t:
        for i in range(5):
            t.record("step", i=i)
        first = np.full((72, 128, 3), (0, 0, 255), np.uint8)
        second = np.full((72, 128, 3), (255, 0, 0), np.uint8)
        folder = error_bundle(tmp_path / "bundle", [("before tap", first), ("after/tap", second)], t.since(3))
    names = sorted(p.name for p in folder.iterdir())
    assert names == ["00_before_tap.png", "01_after_tap.png", "transcript.jsonl"]
    back = cv2.imread(str(folder / "01_after_tap.png"))
    assert back.shape == (72, 128, 3) and tuple(back[0, 0]) == (255, 0, 0)
    assert [e["seq"] for e in read_lines(folder / "transcript.jsonl")] == [4, 5]


def test_each_failure_gets_its_own_bundle_folder_with_the_result(tmp_path):
    frame = np.zeros((8, 8, 3), np.uint8)
    with Transcript(tmp_path / "t.jsonl") as t:
        for i in range(4):
            t.record("step", i=i)
        result = {"ok": False, "status": "timeout", "text": "goto page_x did not finish"}
        first = t.error_bundle(tmp_path / "bundles", [("f", frame)], result=result, last=2)
        second = t.error_bundle(tmp_path / "bundles", [], [{"kind": "hop", "page": "page_main"}], result=result)
    assert first != second and first.parent == second.parent == tmp_path / "bundles"
    assert "timeout" in first.name
    assert [e["seq"] for e in read_lines(first / "transcript.jsonl")] == [3, 4]
    assert read_lines(second / "transcript.jsonl") == [{"kind": "hop", "page": "page_main"}]
    assert json.loads((first / "result.json").read_text())["status"] == "timeout"


def test_error_bundle_redacts_the_slice(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "hunter2-secret-value")
    folder = error_bundle(tmp_path / "b", [], [{"seq": 1, "kind": "vision", "prompt": "key hunter2-secret-value"}])
    assert "hunter2-secret-value" not in (folder / "transcript.jsonl").read_text()


def test_save_trace_keeps_ordered_steps_with_preconditions_and_success(tmp_path):
    steps = [
        {"action": {"type": "tap", "button": "MAIN_GOTO_COMMISSION"}, "precondition": "page_main",
         "success": "page_commission"},
        {"action": {"type": "key", "key": "back"}, "precondition": "page_commission", "success": "page_main"},
    ]
    path = save_trace(tmp_path / "traces" / "goto.json", steps, tool="alas_goto", target="page_main", token="t")
    trace = load_trace(path)
    assert trace["tool"] == "alas_goto" and trace["target"] == "page_main"
    assert trace["token"] == REDACTED
    assert [s["step"] for s in trace["steps"]] == [1, 2]
    assert trace["steps"][0]["precondition"] == "page_main"
    assert trace["steps"][1]["success"] == "page_main"
    with pytest.raises(ValueError):
        save_trace(tmp_path / "bad.json", ["not a mapping"])


def test_transcript_save_trace_puts_traces_beside_the_ledger(tmp_path):
    with Transcript(tmp_path / "run" / "t.jsonl") as t:
        t.record("request", tool="goto", target="page_main")
        path = t.save_trace("goto", "page_main", [{"action": "tap", "precondition": "a", "success": "b"}])
    assert path.parent == tmp_path / "run" / "traces"
    trace = load_trace(path)
    assert trace["tool"] == "goto" and trace["steps"][0]["success"] == "b"


def test_a_navigator_hop_in_a_trace_gets_its_precondition_and_success_from_source_and_to(tmp_path):
    steps = [{"kind": "action", "source": "page_main", "to": "page_commission", "action": {"type": "tap"}},
             {"kind": "verdict", "verdict": "verified"}]
    trace = load_trace(save_trace(tmp_path / "t.json", steps))
    assert trace["steps"][0]["precondition"] == {"page": "page_main"}
    assert trace["steps"][0]["success"] == {"page": "page_commission"}
    assert "precondition" not in trace["steps"][1]


def test_a_runaway_field_is_cut_and_the_line_says_what_was_cut(tmp_path):
    from engine.runtime.transcript import KEPT_HEAD_CHARS, MAX_RECORD_BYTES

    with Transcript(tmp_path / "t.jsonl") as transcript:
        entry = transcript.record("agent_response", turn=1, raw={"text": "x" * (5 * 1024 * 1024)}, note="small")
    line = (tmp_path / "t.jsonl").read_text().splitlines()[0]
    assert len(line.encode()) <= MAX_RECORD_BYTES + 200
    assert entry["cut"] == {"raw": entry["cut"]["raw"]} and entry["cut"]["raw"] > 5 * 1024 * 1024
    assert len(entry["raw"]) == KEPT_HEAD_CHARS and entry["note"] == "small" and entry["turn"] == 1
    assert json.loads(line)["cut"]["raw"] == entry["cut"]["raw"]
