"""kill -9 in the middle of a goto: every complete transcript line still parses and nothing earlier is lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _complete_lines(path: Path) -> list[str]:
    text = path.read_text() if path.exists() else ""
    return text.split("\n")[:-1]  # the part after the last newline may still be being written


def test_kill_9_mid_goto_leaves_a_parseable_ledger(tmp_path):
    scenario = tmp_path / "slow.yaml"
    scenario.write_text("loading_min: 1.0\nloading_max: 1.5\n")  # each hop loads for a while: time to kill it
    ledger_dir = tmp_path / "run"
    ledger = ledger_dir / "transcript.jsonl"
    child = subprocess.Popen(
        [sys.executable, "-m", "engine", "goto", "page_commission", "--scenario", str(scenario),
         "--transcript", str(ledger_dir)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # bounded: wait until the first hop was taken and looked at
            kinds = [json.loads(line).get("kind") for line in _complete_lines(ledger)]
            if "action" in kinds and kinds.count("observation") >= 3:
                break
            assert child.poll() is None, "the goto finished before it could be killed"
            time.sleep(0.05)
        else:
            raise AssertionError("the goto wrote no action within 60 s")
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    from engine.runtime.transcript import read_lines

    entries = read_lines(ledger)
    raw = [line for line in ledger.read_text().split("\n") if line.strip()]
    assert len(entries) >= len(raw) - 1  # at most a torn last line
    seqs = [e["seq"] for e in entries]
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))  # nothing earlier lost
    kinds = [e["kind"] for e in entries]
    assert kinds[0] == "request" and "action" in kinds and "result" not in kinds
    for line in raw[:-1]:
        json.loads(line)
