"""The observer names every simulated Azur Lane page and popup as itself, and nothing else.

The simulator's synthetic templates are drawn once per asset name, so shared buttons look the same on every
page: this checks recognition is honest end to end (renderer, synthetic pack, compiled verifiers, observer).
"""

from __future__ import annotations

import pytest

from engine.config.loader import load_graph
from engine.observe.observer import Observer
from engine.sim import SimGame, SyntheticAssets

# The game shows these two together (labels.json lists POPUP_CANCEL as also_ok for POPUP_CONFIRM).
SHOWN_TOGETHER = {frozenset({"POPUP_CONFIRM", "POPUP_CANCEL"}), frozenset({"POPUP_CONFIRM_WHITE", "POPUP_CANCEL_WHITE"})}
# IDLE is matched by a 9x16 template: weak evidence, which never overrides a page seen on strong evidence.
WEAK_BY_DESIGN = {"IDLE"}


@pytest.fixture(scope="module")
def rig():
    graph = load_graph(server="en")
    assets = SyntheticAssets(graph)
    return graph, SimGame(graph, assets=assets), Observer(graph, assets)


def test_every_page_is_observed_as_itself(rig):
    graph, game, observer = rig
    wrong = []
    for page in graph.pages:
        if not page.signatures:
            continue
        game.goto(page.name)
        game.popups.clear()
        obs = observer.observe(game.frame())
        if obs.page != page.name or obs.popups or obs.ambiguous:
            wrong.append((page.name, obs.page, obs.popups, obs.ambiguous))
    assert wrong == []


def test_every_popup_is_observed_over_its_page(rig):
    graph, game, observer = rig
    wrong = []
    for popup in graph.popups:
        if popup.name in WEAK_BY_DESIGN:
            continue
        host = (popup.pages or ["page_main"])[0]
        game.goto(host)
        game.popups.clear()
        game.show_popup(popup.name)
        obs = observer.observe(game.frame())
        seen = frozenset(obs.popups)
        if popup.name not in seen or (len(seen) > 1 and seen not in SHOWN_TOGETHER):
            wrong.append((popup.name, host, obs.page, obs.popups))
    assert wrong == []
