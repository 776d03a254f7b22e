"""`python -m engine explore` through a real subprocess on the built-in simulator: a small budget still writes a
draft folder that validate accepts and goto uses; bad options are one stderr line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import GOOD

from engine.explore.draft import load_draft
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[3]


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    # No --serial and no ENGINE_SERIAL: auto, which finds nothing here and explores the built-in simulator. The scan
    # probes no port and asks an ADB server port nothing listens on, so that an emulator another test serves at the
    # same time (on a default port) is never taken.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ENGINE_DISCOVERY_PORTS": "", "ENGINE_EMULATOR_PATHS": "",
           "ANDROID_ADB_SERVER_PORT": str(free_port())}
    env.pop("ENGINE_SERIAL", None)
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_explore_writes_a_draft_that_validate_and_goto_accept(tmp_path):
    out = tmp_path / "draft"
    result = run("explore", "--out", str(out), "--graph", str(GOOD), "--no-ocr", "--taps", "12", "--minutes", "1")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["ok"] and summary["taps"] <= 12 and summary["pages"] >= 2
    assert "pages," in result.stderr and "taps and" in result.stderr  # progress on stderr
    assert "Traceback" not in result.stderr
    checked = run("validate", str(out))
    assert checked.returncode == 0, checked.stderr
    draft = load_draft(out)
    reached = {link.to for link in draft.links}
    target = next(p.name for p in draft.pages if p.name in reached)
    # goto with the draft on the game itself: the simulator plays the true graph, the engine reads the draft
    with subprocess.Popen([sys.executable, "-m", "engine", "sim", "serve", "--graph", str(GOOD), "--port", "0"],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True) as sim:
        try:
            line = sim.stderr.readline()  # "serving sim-0 on 127.0.0.1:PORT"
            port = int(line.strip().rsplit(":", 1)[-1])
            went = run("goto", target, "--serial", "sim-0", "--adb-port", str(port), "--graph", str(out),
                       "--assets", str(out / "assets"), "--json")
            assert went.returncode == 0, went.stdout + went.stderr
            assert json.loads(went.stdout)["status"] == "verified"
        finally:
            sim.terminate()
            sim.wait(timeout=10)


def test_bad_options_are_one_line_and_exit_2(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run("explore", "--out", str(empty), "--resume", "--graph", str(GOOD))
    assert result.returncode == 2 and "no recording.jsonl" in result.stderr and "Traceback" not in result.stderr
    result = run("explore", "--out", str(tmp_path / "x"), "--taps", "0", "--graph", str(GOOD))
    assert result.returncode == 2 and "--taps" in result.stderr
    afile = tmp_path / "file"
    afile.write_text("x")
    result = run("explore", "--out", str(afile), "--graph", str(GOOD))
    assert result.returncode == 2 and "is a file" in result.stderr


PORTRAIT = ROOT / "tests" / "data" / "graphs" / "explore_portrait"


def test_a_game_over_adb_is_explored_in_its_own_shape_and_restarted_as_the_app_in_front(tmp_path):
    """No --resolution and no --package (issue 45, point 2): a portrait game served over ADB is explored at its own
    720x1280, and the app in the foreground when the explore starts is the one it restarts; a device that stops
    answering ends the run ok: false, exit 1, with the partial draft written."""
    out = tmp_path / "draft"
    with subprocess.Popen([sys.executable, "-m", "engine", "sim", "serve", "--graph", str(PORTRAIT), "--port", "0"],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True) as sim:
        try:
            port = int(sim.stderr.readline().strip().rsplit(":", 1)[-1])
            result = run("explore", "--out", str(out), "--serial", "sim-0", "--adb-port", str(port), "--no-ocr",
                         "--minutes", "0.4")
        finally:
            sim.terminate()
            sim.wait(timeout=10)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    draft = load_draft(out)
    assert tuple(draft.resolution) == (720, 1280), draft.resolution
    assert draft.app and draft.app["package"].startswith("com.sim."), draft.app
    assert "the app in the foreground" in result.stderr
    assert summary["pages"] >= 2 and summary["ok"] is True and result.returncode == 0, (summary, result.stderr[-2000:])
    assert summary["stopped"] != "nowhere left to go and no way to restart the game"


def test_a_device_that_goes_away_is_not_ok_and_keeps_the_partial_draft(tmp_path):
    out = tmp_path / "draft"
    result = run("explore", "--out", str(out), "--serial", "127.0.0.1:1", "--adb-port", str(free_port()),
                 "--resolution", "1280x720", "--no-ocr", "--minutes", "0.2", timeout=120)
    assert result.returncode in (1, 2) and "Traceback" not in result.stderr, result.stderr[-2000:]
    if result.returncode == 1:
        summary = json.loads(result.stdout)
        assert summary["ok"] is False and summary["why"], summary
