"""The explorer against the ground truth (issue 37, point 5; see docs/benchmarks/explore.md).

Each case explores a simulator of a known graph through ``python -m engine explore`` (a process of its own, over the
simulator's ADB server, so it sees nothing but pixels), then scores the draft with benchmarks.explore_score: pages,
links and popups against the truth, random gotos with the draft graph confirmed by the truth's observer, taps and
minutes per page found. Cases: tests/data/graphs/good (the simulator's synthetic pack) and pages/azurlane with ALAS's
own assets (../shared/alas), each quiet and under tests/data/scenarios/chaos.yaml.

The CI form gives each explore a short budget and asserts what holds at any budget: the draft validates, no goto
the draft calls verified is wrong, the pages found quiet are right (precision). EXPLORE_BENCH_FULL=1 runs the long
form (the issue's budget: 20 minutes a game, 200 gotos) and asserts the issue's targets; beside each draft's gotos
it runs the same gotos (same seed, same simulator) with the truth's own graph and pack, the ceiling a draft can
reach under that scenario. EXPLORE_BENCH_KEEP=DIR keeps the drafts there; EXPLORE_BENCH_CASES=good-quiet,...
runs some cases only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks.explore_gotos import pack_folder, run_gotos
from benchmarks.explore_score import load_truth, score_draft
from engine.core.paths import builtin_graph_dir as default_graph
from engine.sim import Scenario, start_embedded
from engine.sim.shell import app_names

ROOT = Path(__file__).resolve().parents[1]
GOOD = ROOT / "tests" / "data" / "graphs" / "good"
# ALAS's data beside the project (tests/conftest.py's ../shared); EXPLORE_BENCH_ALAS points elsewhere (a worktree).
ALAS = Path(os.environ.get("EXPLORE_BENCH_ALAS") or ROOT.parent / "shared" / "alas")
CHAOS = ROOT / "tests" / "data" / "scenarios" / "chaos.yaml"
FULL = os.environ.get("EXPLORE_BENCH_FULL") == "1"

# (minutes, taps, gotos) per game: the CI form keeps the whole file to a few minutes on 2 shared cores.
BUDGETS = {
    "good": (20.0, 4000, 200) if FULL else (0.4, 60, 15),
    "azurlane": (20.0, 4000, 200) if FULL else (0.5, 120, 15),
}
CASES = [(game, scenario) for game in ("good", "azurlane") for scenario in ("quiet", "chaos")
         if not os.environ.get("EXPLORE_BENCH_CASES") or f"{game}-{scenario}" in os.environ["EXPLORE_BENCH_CASES"]]
KEEP = os.environ.get("EXPLORE_BENCH_KEEP")
# adbutils starts a real adb server on 5037 when it cannot connect: never from here (nor from the explore process).
os.environ.setdefault("ADBUTILS_ADB_PATH", "/bin/false")


def truth_of(game: str):
    if game == "good":
        return load_truth("good", GOOD, "en")
    if not (ALAS / "assets").is_dir():
        pytest.skip("../shared/alas (ALAS's assets) is not beside the project")
    return load_truth("azurlane", None, "en", ALAS / "assets")


def explore(sim, out: Path, minutes: float, taps: int) -> subprocess.CompletedProcess:
    """`python -m engine explore` on the simulator's ADB server, as on a phone: the user names the game's app (so it
    can be restarted), nothing else. Bounded by its budget with room to write."""
    package, activity = app_names(sim.game.graph)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "engine", "explore", "--out", str(out), "--serial", sim.serial,
               "--adb-host", sim.host, "--adb-port", str(sim.port), "--minutes", str(minutes), "--taps", str(taps),
               "--server", "en", "--package", package, "--activity", activity]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=minutes * 60 * 1.5 + 120)


def validate(folder: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "engine", "validate", str(folder), "--json"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module", params=CASES, ids=[f"{g}-{s}" for g, s in CASES])
def run(request, tmp_path_factory):
    """Explore one case, score the draft and run its gotos; returns (case, figures dict, the explore process)."""
    game, mode = request.param
    truth = truth_of(game)
    scenario = Scenario.from_file(CHAOS) if mode == "chaos" else None
    minutes, taps, gotos = BUDGETS[game]
    out = (Path(KEEP) if KEEP else tmp_path_factory.mktemp("explore")) / f"{game}-{mode}"
    started = time.perf_counter()
    with start_embedded(truth.graph, assets=truth.assets, scenario=scenario, seed=11, state=truth.state) as sim:
        done = explore(sim, out, minutes, taps)
    wall = time.perf_counter() - started
    checked = validate(out)
    figures = {"game": game, "mode": mode, "budget": {"minutes": minutes, "taps": taps}, "explore_exit": done.returncode,
               "explore_wall_s": round(wall, 1), "validate_exit": checked.returncode, "explore": last_json(done.stdout)}
    if (out / "draft.yaml").is_file():
        score = score_draft(out, truth, scenario=scenario)
        figures.update(score.as_dict())
        figures["gotos"] = run_gotos(out, truth, score.page_of, n=gotos, seed=5, scenario=scenario)
        if FULL:  # the ceiling: the same gotos with the truth's own graph and pack
            assets = ALAS / "assets" if game == "azurlane" else pack_folder(truth.assets, out.parent / f"{game}-pack")
            figures["gotos_truth_graph"] = run_gotos(out, truth, {p: p for p in truth.reachable}, n=gotos, seed=5,
                                                     scenario=scenario, graph_dir=truth.graph_dir or default_graph(),
                                                     assets_dir=assets)
    return (game, mode), figures, done, checked


def last_json(stdout: str) -> dict | None:
    """The explore command's summary (its last stdout line, JSON), or None."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return None


def record(figures_sink, case: tuple[str, str], figures: dict) -> None:
    """Into the run's benchmark results file (benchmarks/conftest.py); with EXPLORE_BENCH_KEEP, the whole score too
    (missed pages, wrong links, failed gotos) as score.json beside the kept draft."""
    name = "-".join(case)
    flat = {
        "page_recall": (figures["pages"]["recall"], "ratio"), "page_precision": (figures["pages"]["precision"], "ratio"),
        "page_f1": (figures["pages"]["f1"], "ratio"),
        "link_recall": (figures["links"]["recall"], "ratio"), "link_precision": (figures["links"]["precision"], "ratio"),
        "popup_recall": (figures["popups"]["recall"], "ratio"),
        "goto_arrival": (figures["gotos"]["arrival_rate"], "ratio"),
        "false_successes": (figures["gotos"]["false_successes"], "count"),
        "taps": (figures["cost"]["taps"], "count"),
        "taps_per_page": (figures["cost"]["taps_per_page"], "absolute"),
        "minutes": (figures["cost"]["minutes"], "absolute"),
        "minutes_per_page": (figures["cost"]["minutes_per_page"], "absolute"),
    }
    if "gotos_truth_graph" in figures:
        flat["goto_arrival_truth_graph"] = (figures["gotos_truth_graph"]["arrival_rate"], "baseline")
    for key, (value, kind) in flat.items():
        figures_sink.add(f"{name}_{key}", value, unit="min" if "minutes" in key else "", kind=kind)
    if KEEP:
        (Path(KEEP) / f"{name}.score.json").write_text(json.dumps(figures, indent=1, default=str) + "\n")


def summary(figures: dict) -> str:
    p, lk, pp, g, c = (figures[k] for k in ("pages", "links", "popups", "gotos", "cost"))
    return (f"{figures['game']}/{figures['mode']}: pages {p['matched']}/{p['true']} found of {p['draft']} drafted "
            f"(recall {p['recall']:.0%}, precision {p['precision']:.0%}); links recall {lk['recall']:.0%} precision "
            f"{lk['precision']:.0%}; popups recall {pp['recall']:.0%} ({pp['matched']}/{pp['true']}); gotos "
            f"{g.get('arrived', 0)}/{g['gotos']} arrived, {g['false_successes']} false successes; "
            f"{c['taps']} taps, {c['minutes']} min ({c['taps_per_page'] or 0:.1f} taps, "
            f"{c['minutes_per_page'] or 0:.2f} min per page found)"
            + (f"; the truth's own graph: {t['arrived']}/{t['gotos']} arrived"
               if (t := figures.get("gotos_truth_graph")) else ""))


def test_explore_case(run, figures):
    case, found, done, checked = run
    assert done.returncode in (0, 1), f"explore failed ({done.returncode}): {done.stderr[-2000:]}"
    assert found.get("pages"), f"no draft.yaml written: {done.stderr[-2000:]}"
    print("\n" + summary(found))
    record(figures, case, found)
    # At any budget: the draft is a graph the engine accepts, and what it verifies is true.
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    assert found["gotos"]["false_successes"] == 0, found["gotos"]
    assert found["cost"]["minutes"] <= BUDGETS[case[0]][0] * 1.1 + 0.5
    if case[1] == "quiet":
        assert found["pages"]["precision"] >= 0.9, found["pages"]
    if not FULL:
        return
    pages, links, popups, gotos = (found[k] for k in ("pages", "links", "popups", "gotos"))
    if case[1] == "quiet":
        assert pages["recall"] >= 0.9 and pages["precision"] >= 0.9, pages
        assert links["recall"] >= 0.8, links
        assert popups["recall"] >= 0.8, popups
        assert gotos["arrival_rate"] >= 0.95, gotos
        assert found["cost"]["minutes"] < 20
    else:
        assert pages["recall"] >= 0.85, pages
