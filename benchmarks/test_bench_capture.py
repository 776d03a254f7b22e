"""Capture methods through Debian's real adb server and the simulator's adbd, at a slow and a fast transport
profile (engine/sim/profiles/transport_avd.yaml, transport_mumu12.yaml), and a goto's wall time with the
benchmark's pick against raw on the slow one (issue 47 point 4; write-up: docs/benchmarks/capture.md).

The phone shows a real game screen (ALAS's 2020 screenshots, ../shared) for the per-method figures, so gzip meets
a real frame's compressibility (about 15x); the goto runs on the simulator's own drawings (they must be recognised),
which compress only 1.6x. Absolute figures are printed and written to the run's results JSON, never asserted. The one
speed assertion compares gzip with raw in the same run, timed in alternation, and asks for a margin wider than the
measured spread: the median pair's gain exceeds half the range of the pairs' ratios. CI runs the short form;
BENCH_CAPTURE_FRAMES=15 and BENCH_CAPTURE_GOTOS=4 give the write-up's numbers.
"""

from __future__ import annotations

import os
import shutil
import statistics
import time
from pathlib import Path

import cv2
import pytest

from engine.config.policies import load_policies
from engine.config.schema import Graph
from engine.device import bench
from engine.device.adb import AdbDevice
from engine.runtime.session import Session
from engine.sim import SimGame
from engine.sim.adbd import AdbdServer
from engine.sim.scenario import Scenario
from tests.adbserver import AdbServer

pytestmark = pytest.mark.timing  # a speed assertion: runs alone (the README's last pytest)

ADB = shutil.which("adb")
FRAMES = int(os.environ.get("BENCH_CAPTURE_FRAMES", "5"))
GOTOS = int(os.environ.get("BENCH_CAPTURE_GOTOS", "2"))
SHARED = Path(__file__).resolve().parents[2] / "shared"
GRAPH = Graph.model_validate(
    {
        "game": "bench",
        "resolution": [1280, 720],
        "servers": ["en"],
        "fallback_server": "en",
        "buttons": [{"name": "GO", "area": [600, 320, 680, 400], "color": [20, 160, 220], "text": "GO"}],
        "pages": [
            {"name": "page_main", "links": [{"to": "page_b", "action": {"type": "tap", "button": "GO"}}]},
            {"name": "page_b", "links": [{"to": "page_main", "action": {"type": "key", "key": "back"}}]},
        ],
    }
).resolve()


@pytest.fixture
def adb_port():
    """Debian's adb server on a port of its own (never 5037), killed at the end."""
    if ADB is None:
        pytest.skip("Debian's adb is not installed (scripts/install-system-deps.sh)")
    server = AdbServer().start()
    try:
        yield server.port, server
    finally:
        server.stop()


def _real_frame():
    found = sorted((SHARED / "screens" / "frames" / "alas_2020").glob("*.png"))
    if not found:
        pytest.skip("no real screenshots in ../shared/screens")
    return cv2.resize(cv2.imread(str(found[0])), (1280, 720))


@pytest.mark.parametrize("profile", ["transport_avd", "transport_mumu12"])
def test_capture_methods_per_profile(adb_port, profile, figures, monkeypatch):
    port, adb = adb_port
    frame = _real_frame()
    game = SimGame(GRAPH, seed=1, scenario=Scenario(profile=profile))
    monkeypatch.setattr(game, "frame", lambda: frame.copy())
    with AdbdServer(game) as emulator:
        serial = f"127.0.0.1:{emulator.port}"
        assert "connected" in adb("connect", serial).stdout
        with AdbDevice(serial, port=port) as device:
            report = bench.run(device, FRAMES, touch=False)
            print(f"\n{profile}, {FRAMES} frames a method\n{bench.table(report)}")
            for row in report.rows:
                if row.ok:
                    figures.add(f"{profile}.{row.method}.p50_ms", row.p50_ms)
                    figures.add(f"{profile}.{row.method}.p95_ms", row.p95_ms)
            figures.add(f"{profile}.pick_is_{report.picks['capture']}", 1, "", kind="count")
            assert all(r.ok and r.lossless for r in report.rows), bench.table(report)
            if profile != "transport_avd":
                return
            samples: dict[str, list[float]] = {"raw": [], "gzip": []}
            for _ in range(max(3, FRAMES)):  # in alternation: a busy machine slows both alike
                for method in samples:
                    start = time.perf_counter()
                    device.capture.once(method)
                    samples[method].append((time.perf_counter() - start) * 1000)
    raw, gz = samples["raw"], samples["gzip"]
    ratios = [r / g for r, g in zip(raw, gz)]  # each pair timed back to back
    ratio, spread = statistics.median(ratios), (max(ratios) - min(ratios)) / 2
    figures.add("avd.raw_p50_ms_paired", statistics.median(raw), kind="baseline")
    figures.add("avd.gzip_p50_ms_paired", statistics.median(gz))
    figures.add("avd.raw_over_gzip", ratio, "x", kind="ratio")
    figures.add("avd.raw_over_gzip_low", min(ratios), "x", kind="spread")
    figures.add("avd.raw_over_gzip_high", max(ratios), "x", kind="spread")
    print(f"in alternation: raw {min(raw):.0f}-{max(raw):.0f} ms, gzip {min(gz):.0f}-{max(gz):.0f} ms, raw/gzip "
          f"{ratio:.2f}x (pairs {min(ratios):.2f}-{max(ratios):.2f})")
    # gzip's gain over raw must be wider than half the pairs' own range: no pair's noise explains it away
    assert ratio - 1 > spread, f"raw/gzip {ratio:.2f}x with pairs {min(ratios):.2f}-{max(ratios):.2f}"


def test_goto_wall_time_pick_against_raw_on_the_slow_profile(adb_port, figures):
    """Gotos back and forth between the shipped graph's start page and its first neighbour, drawn by the
    simulator (its synthetic assets), on transport_avd: with raw frames, with what the benchmark picked, and with
    gzip (the pick on real frames there)."""
    from engine.config.loader import load_graph

    port, adb = adb_port
    graph = load_graph().resolve("en")
    game = SimGame(graph, seed=1, scenario=Scenario(profile="transport_avd"))
    pages = {p.name: p for p in graph.pages}
    home = "page_main"
    there = next(link.to for link in pages[home].links if any(back.to == home for back in pages[link.to].links))
    with AdbdServer(game) as emulator:
        serial = f"127.0.0.1:{emulator.port}"
        assert "connected" in adb("connect", serial).stdout
        device = AdbDevice(serial, port=port, resolution=tuple(graph.resolution))
        report = bench.run(device, 3, touch=False)
        pick = report.picks["capture"]
        print(f"\nthe simulator's own frames on transport_avd\n{bench.table(report)}")
        session = Session(device=device, graph=graph, policies=load_policies(), assets=game.renderer.assets)
        took: dict[str, list[float]] = {m: [] for m in dict.fromkeys(("raw", pick, "gzip"))}
        try:
            assert session.tools.call("alas_goto", {"page": home}).ok  # from the start page, untimed
            for _ in range(GOTOS):
                for method in took:
                    device.capture.prefer(method)
                    for page in (there, home):
                        start = time.perf_counter()
                        result = session.tools.call("alas_goto", {"page": page})
                        took[method].append((time.perf_counter() - start) * 1000)
                        assert result.ok, result.text
        finally:
            session.close()
            device.close()
    for method, values in took.items():
        figures.add(f"goto.{method}.p50_ms", statistics.median(values))
        print(f"goto {home} <-> {there} with {method}: p50 {statistics.median(values):.0f} ms over {len(values)}")
