"""A screen nobody names is looked at again before the ladder acts on it: a page change half drawn is no screen.

Generated game 1 (engine.sim.generate, seed 1: portrait, pages that slide in, loading screens) played with its own
true graph, quiet: nothing unknown is ever on its screen, yet the first look after a loading screen ended could
catch the next page sliding in over it; the navigator called that an unknown screen and pressed the back key there
(13 times in 30 gotos), and with learning on, the half-drawn frames were proposed, accepted and demoted as popups
(the no-key benchmark of issue 46). Now an unknown screen is looked at twice, POLL_S apart, and waited on while it
changes over much of itself (navigator.MOVING_S).
"""

from __future__ import annotations

import random

from benchmarks.explore_gotos import pack_folder
from benchmarks.explore_score import load_truth
from engine.navigation.navigator import MOVING_S
from engine.runtime.session import open_session
from engine.sim import start_embedded
from engine.sim.generate import generate
from engine.sim.generate.features import features
from engine.sim.process import SharedClock


def test_a_page_sliding_in_after_a_loading_screen_is_waited_on_not_backed_out_of(tmp_path):
    game = generate(1, tmp_path / "game")
    truth = load_truth("generated_1", game, "en")
    assert {"transition:slide", "loading:varied"} <= features(game) and truth.style.transition_s < MOVING_S
    pages = [p.name for p in truth.graph.pages if p.name != truth.graph.unknown_page]
    clock, rng, rungs, arrived = SharedClock(), random.Random(1), [], 0
    with start_embedded(truth.graph, assets=truth.assets, seed=1, clock=clock.now, state=truth.state,
                        style=truth.style) as sim:
        session = open_session(sim.serial, graph_dir=game, assets=pack_folder(truth.assets, tmp_path / "pack"),
                               adb_host=sim.host, adb_port=sim.port, clock=clock.now, sleep=clock.sleep)
        try:
            for _ in range(12):
                arrived += session.tools.alas_goto(rng.choice(pages)).ok
                rungs += [s["rung"] for s in session.tools.last_run.steps if s["kind"] == "recover"]
        finally:
            session.close()
    assert arrived == 12
    assert rungs == []  # (before: the back key 5 times in these 12 gotos)


def test_a_dark_page_sliding_over_a_dark_screen_is_moving_and_a_page_s_own_sway_is_not():
    import numpy as np

    from engine.core.stuck import moving

    loading, page = (40, 52, 46), (22, 14, 26)  # generated game 1's loading screen and a page, both dark (BGR)
    before = np.full((1280, 720, 3), loading, np.uint8)
    before[:, 500:] = page  # the page has slid in over 220 of 720 columns
    after = before.copy()
    after[:, 360:500] = page  # a tenth of a second later: 140 columns more
    assert moving(before, after)
    swaying = before.copy()
    swaying[600:700, 560:660] = (200, 120, 90)  # a figure on the page, and where it swayed to
    swayed = before.copy()
    swayed[610:710, 570:670] = (200, 120, 90)
    assert not moving(swaying, swayed)
