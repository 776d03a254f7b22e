"""`python -m engine sim serve|render`: the simulator from the command line."""

from __future__ import annotations

import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import adbutils
import cv2
import pytest

from engine.__main__ import main

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "tests" / "data" / "graphs" / "good"


def test_render_writes_a_png(tmp_path, capsys):
    out = tmp_path / "shop.png"
    assert main(["sim", "render", "--graph", str(DEMO), "page_main", str(out)]) == 0
    image = cv2.imread(str(out))
    assert image is not None and image.shape == (720, 1280, 3)
    assert capsys.readouterr().out.strip() == str(out)


def test_render_unknown_page_is_bad_input(tmp_path):
    assert main(["sim", "render", "--graph", str(DEMO), "page_nowhere", str(tmp_path / "x.png")]) == 2


def _read_serving_line(proc: subprocess.Popen, deadline: float) -> str:
    selector = selectors.DefaultSelector()
    selector.register(proc.stderr, selectors.EVENT_READ)
    buffer = b""
    while time.monotonic() < deadline:
        if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
            break
        chunk = os.read(proc.stderr.fileno(), 4096)
        if not chunk:
            break
        buffer += chunk
        m = re.search(rb"serving (\S+) on 127\.0\.0\.1:(\d+)", buffer)
        if m:
            return m.group(0).decode()
    raise AssertionError(f"no 'serving' line; stderr so far: {buffer.decode(errors='replace')}")


def test_serve_until_ctrl_c(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # Ctrl-C as a terminal sends it: a suite started from a script's background job inherits SIGINT ignored (bash
    # ignores it for `cmd &`), and Python then installs no KeyboardInterrupt handler in the child.
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "sim", "serve", "--graph", str(DEMO), "--port", "0", "--seed", "3"],
        stderr=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tmp_path, env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        line = _read_serving_line(proc, time.monotonic() + 30)
        serial, port = re.search(r"serving (\S+) on 127\.0\.0\.1:(\d+)", line).groups()
        device = adbutils.AdbClient(host="127.0.0.1", port=int(port), socket_timeout=5).device(serial)
        assert device.shell("echo up") == "up"
        assert device.window_size() == (1280, 720)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=15) == 0
        assert proc.stdout.read() == b""  # stdout carries command results only; serving has none
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
        proc.stdout.close()
        proc.stderr.close()


def test_serve_rejects_a_bad_scenario(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("nonsense_p: 1\n")
    assert main(["sim", "serve", "--graph", str(DEMO), "--scenario", str(bad), "--for", "0.1"]) == 2


@pytest.mark.parametrize("popup", ["popup_unknown_name"])
def test_render_unknown_popup_is_bad_input(tmp_path, popup):
    assert main(["sim", "render", "--graph", str(DEMO), "page_main", str(tmp_path / "x.png"), "--popup", popup]) == 2


def test_serve_adbd_refuses_options_it_would_ignore_and_a_taken_port(capsys):
    assert main(["sim", "serve", "--graph", str(DEMO), "--adbd", "0", "--port", "1", "--for", "0.1"]) == 2
    assert "--adbd" in capsys.readouterr().err
    assert main(["sim", "serve", "--graph", str(DEMO), "--model", "X", "--for", "0.1"]) == 2
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["sim", "serve", "--graph", str(DEMO), "--adbd", str(port), "--for", "0.1"]) == 2
        assert f"127.0.0.1:{port}" in capsys.readouterr().err


def test_serve_adbd_for_a_while_then_stops(capsys):
    assert main(["sim", "serve", "--graph", str(DEMO), "--adbd", "0", "--for", "0.2"]) == 0
    assert re.search(r"emulator sim-\d+ \(adbd\) on 127\.0\.0\.1:\d+", capsys.readouterr().err)
