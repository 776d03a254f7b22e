"""`python -m engine health` and `screenshot`, in process, on the embedded simulator and on a dead server."""

from __future__ import annotations

import json

import cv2

from engine.__main__ import main


def test_health_json_on_the_embedded_simulator(capsys):
    assert main(["health", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["status"] == "healthy" and record["ok"] is True


def test_health_exits_non_zero_when_unhealthy(capsys, dead_port):
    assert main(["health", "--serial", "emulator-5554", "--adb-port", str(dead_port)]) == 1
    assert "adb_server_down" in capsys.readouterr().out


def test_screenshot_writes_a_frame(tmp_path, capsys):
    out = tmp_path / "shot.png"
    assert main(["screenshot", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["data"]["path"] == str(out)
    assert cv2.imread(str(out)).shape == (720, 1280, 3)


def test_screenshot_refuses_an_unknown_image_type(tmp_path):
    assert main(["screenshot", str(tmp_path / "shot.txt")]) == 2
