"""`python -m engine agent`: exit codes, stdout/stderr, a model behind a scripted local Gemini, resume and replay.

Each case is a subprocess on the embedded simulator (about 1-3 s each), so the cases are few. Every child gets its
own ENGINE_HOME (skills and episodic memory), and a model only through ENGINE_AGENT_BASE_URL (the scripted server)
or --model replay:FILE.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DEAD_ENDPOINT = "http://127.0.0.1:9"
"""Where vision would go if anything asked it: refused at once, never Google."""


def agent(*args: str, home: Path, url: str | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m engine agent ARGS``; with `url`, a key and that endpoint make the model available."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ENGINE_", "GEMINI_", "GOOGLE_"))}
    env.update(ENGINE_HOME=str(home), ENGINE_VISION_BASE_URL=DEAD_ENDPOINT,
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    env.setdefault("ADBUTILS_ADB_PATH", "/bin/false")
    if url is not None:
        env.update(GEMINI_API_KEY="test-key", ENGINE_AGENT_BASE_URL=url)
    return subprocess.run([sys.executable, "-m", "engine", "agent", *args], cwd=ROOT, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=90, check=False)


def call(name: str, **args) -> dict:
    return {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name": name, "args": args}}]},
                            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 5}}


GOTO_DORM = call("alas_goto", page="page_dorm")
FINAL_DORM = call("final", criteria=[{"page": "page_dorm"}])


def result_of(proc: subprocess.CompletedProcess) -> dict:
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def test_named_goal_needs_no_key_and_no_model(tmp_path):
    proc = agent("collect_mail", "--json", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = result_of(proc)
    assert result["ok"] is True and result["status"] == "goal_met"
    assert result["data"]["model_calls"] == 0 and result["data"]["deterministic_calls"] >= 1
    assert result["data"]["observed"] == "page_mail"
    assert "alas_run {'name': 'mail.collect'} -> verified" in proc.stderr
    assert "looked: page_mail, goal held" in proc.stderr.splitlines()[-1]
    # the episode's transcript and checkpoint went to $ENGINE_HOME/<game>/episodes/<episode>
    checkpoint = Path(result["data"]["checkpoint"])
    assert checkpoint.is_file() and tmp_path in checkpoint.parents
    assert (checkpoint.parent / "transcript.jsonl").is_file()


@pytest.mark.parametrize("args, message", [
    (["find the oil balance"], "a free-text goal needs a model: set GEMINI_API_KEY"),
    (["collect_mal"], "did you mean collect_mail"),
    (["--resume", "/nonexistent/episode"], "no checkpoint to resume"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, args, message):
    proc = agent(*args, home=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and message in proc.stderr and "Traceback" not in proc.stderr


def test_free_text_goal_with_the_model_is_verified(tmp_path, scripted_gemini):
    scripted_gemini.script = [GOTO_DORM, FINAL_DORM]
    folder = tmp_path / "episode"
    proc = agent("reach the dorm", "--json", "--transcript", str(folder), home=tmp_path, url=scripted_gemini.url)
    assert proc.returncode == 0, proc.stderr
    result = result_of(proc)
    assert result["status"] == "goal_met" and result["data"]["observed"] == "page_dorm"
    assert result["data"]["model_calls"] == 2 == len(scripted_gemini.requests)
    assert result["data"]["tokens"] == 110
    assert "turn 1: tool: alas_goto {'page': 'page_dorm'}" in proc.stderr
    kinds = [json.loads(line)["kind"] for line in (folder / "transcript.jsonl").read_text().splitlines()]
    assert kinds.count("agent_request") == 2 and kinds[-1] == "agent_stop"
    assert "test-key" not in (folder / "transcript.jsonl").read_text()


def test_false_claim_exits_1_and_resume_continues_the_episode(tmp_path, scripted_gemini):
    folder = tmp_path / "episode"
    scripted_gemini.script = [FINAL_DORM]
    proc = agent("reach the dorm", "--json", "--max-turns", "2", "--transcript", str(folder), home=tmp_path,
                 url=scripted_gemini.url)
    assert proc.returncode == 1, proc.stderr
    result = result_of(proc)
    assert result["status"] == "false_claim" and result["ok"] is False
    assert result["data"]["false_claims"] == 2 and result["data"]["verified"] is False
    episode = result["data"]["episode"]

    scripted_gemini.requests.clear()
    scripted_gemini.script = [GOTO_DORM, FINAL_DORM]
    proc = agent("--resume", str(folder), "--json", home=tmp_path, url=scripted_gemini.url)
    assert proc.returncode == 0, proc.stderr
    resumed = result_of(proc)
    assert resumed["status"] == "goal_met" and resumed["data"]["episode"] == episode
    assert resumed["data"]["turns"] == 4 and resumed["data"]["false_claims"] == 2
    assert len(scripted_gemini.requests) == 2
    checkpoint = json.loads((folder / "checkpoint.json").read_text())
    assert checkpoint["stop_reason"] == "goal_met" and checkpoint["verified"] is True


def test_replayed_model_needs_no_key(tmp_path):
    turns = tmp_path / "turns.jsonl"
    turns.write_text(json.dumps({"calls": [{"name": "alas_goto", "arguments": {"page": "page_dorm"}}]}) + "\n"
                     + json.dumps({"calls": [{"name": "final", "arguments": {"criteria": [{"page": "page_dorm"}]}}],
                                   "usage": {"input_tokens": 7, "output_tokens": 1}}) + "\n")
    proc = agent("reach the dorm", "--model", f"replay:{turns}", "--json", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = result_of(proc)
    assert result["status"] == "goal_met" and result["data"]["model_calls"] == 2
    assert [c["tool"] for c in result["data"]["calls"]] == ["alas_goto"]
