"""The engine's core on generated games (issue 45, point 5): each game's TRUE graph, its gotos and its cover check.

For each seed, engine.sim.generate writes a game; the engine's own goto tool drives a simulator of it over ADB with
the game's true graph and the templates cut from its drawings (benchmarks.explore_gotos.run_gotos), quiet and under
tests/data/scenarios/chaos.yaml; each arrival is confirmed by the truth's observer on the frame the game then shows.
Beside the gotos, every page is drawn at several moments (its art swayed, its timers ticked, its sparks moved) and
observed against a clean reference of itself: none may be reported covered, and each must be named.

The CI form runs two seeds that change with every run (printed; GEN_SEEDS=1,2 replays them) with a few gotos each
and asserts what holds at any length: no false success, nearly every goto arrives, no clean frame covered.
GEN_BENCH_FULL=1 runs the long form: the twelve fixed seeds (engine.sim.generate.LONG_SEEDS), 200 gotos each quiet
and under chaos (GEN_BENCH_GOTOS overrides the count), asserting >= 99 % arrived and 0 false successes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from benchmarks.explore_gotos import pack_folder, run_gotos
from benchmarks.explore_score import load_truth
from engine.sim import Scenario
from engine.sim.generate import LONG_SEEDS, generate, short_seeds
from engine.sim.styledgame import StyledGame

ROOT = Path(__file__).resolve().parents[1]
CHAOS = ROOT / "tests" / "data" / "scenarios" / "chaos.yaml"
FULL = os.environ.get("GEN_BENCH_FULL") == "1"
SEEDS = list(LONG_SEEDS) if FULL and not os.environ.get("GEN_SEEDS") else short_seeds(2, salt=__name__)
GOTOS = int(os.environ.get("GEN_BENCH_GOTOS") or (200 if FULL else 12))
MOMENTS = (0.0, 0.45, 1.3, 2.2, 3.7)
"""Seconds into a page's life at which it is drawn for the cover check (every moving part has moved by then)."""
os.environ.setdefault("ADBUTILS_ADB_PATH", "/bin/false")  # never start a real adb server from here
print(f"\ngenerated games: seeds {','.join(map(str, SEEDS))} (replay with GEN_SEEDS={','.join(map(str, SEEDS))})")


@pytest.fixture(scope="module")
def games(tmp_path_factory):
    """seed -> (game folder, truth, the truth's pack as a folder)."""
    root = tmp_path_factory.mktemp("generated")
    out = {}
    for seed in SEEDS:
        folder = generate(seed, root / f"game{seed}")
        truth = load_truth(f"generated_{seed}", folder, "en")
        out[seed] = (folder, truth, pack_folder(truth.assets, root / f"pack{seed}"))
    return out


@pytest.mark.parametrize("mode", ["quiet", "chaos"])
@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed{s}" for s in SEEDS])
def test_gotos_with_the_true_graph(games, figures, seed, mode):
    folder, truth, pack = games[seed]
    scenario = Scenario.from_file(CHAOS) if mode == "chaos" else None
    found = run_gotos(folder, truth, {p: p for p in truth.reachable}, n=GOTOS, seed=seed, scenario=scenario,
                      graph_dir=folder, assets_dir=pack)
    print(f"\nseed {seed} {mode} ({truth.graph.resolution[0]}x{truth.graph.resolution[1]}, "
          f"{len(truth.graph.pages) - 1} pages): {found['arrived']}/{found['gotos']} arrived, "
          f"{found['false_successes']} false successes, {found['wall_s']} s wall; failures {found['failures'][:3]}")
    figures.add(f"seed{seed}_{mode}_arrival", found["arrival_rate"], unit="", kind="ratio")
    figures.add(f"seed{seed}_{mode}_false_successes", found["false_successes"], unit="", kind="count")
    figures.add(f"seed{seed}_{mode}_wall", found["wall_s"], unit="s")
    assert found["false_successes"] == 0, found["false_success_examples"]
    assert found["arrival_rate"] >= (0.99 if FULL else 0.9 if mode == "quiet" else 0.8), found["failures"]


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed{s}" for s in SEEDS])
def test_no_clean_frame_covered(games, seed):
    """Every page, remembered clean at its first moment, is named and not covered at every later one."""
    folder, truth, _ = games[seed]
    observer = truth.observer
    now = [0.0]
    game = StyledGame(truth.graph, truth.style, assets=truth.assets, clock=lambda: now[0])
    wrong = []
    for page in sorted(truth.reachable):
        game.goto(page)
        for i, moment in enumerate(MOMENTS):
            now[0] = moment
            frame = game.frame()
            if i == 0:
                observer.remember(page, frame)
            seen = observer.observe(frame, expected=page)
            if seen.page != page or seen.cover is not None:
                wrong.append((page, moment, seen.page, seen.cover.to_dict() if seen.cover else None))
    assert not wrong, wrong
