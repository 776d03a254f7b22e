"""Fixtures of the explorer's tests: the simulator's game as a Device without the ADB hop (the phone is the one
thing faked; the explorer drives it through the same five calls it makes on a phone), and the test graphs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from engine.config.loader import load_graph
from engine.core.errors import BlackFrame
from engine.device.frames import frame_problem
from engine.sim import SimGame

sys.path.insert(0, str(Path(__file__).parent))  # the scorers beside the tests (truth.py, gotos.py)

GRAPHS = Path(__file__).parents[2] / "data" / "graphs"
GOOD = GRAPHS / "good"
PORTRAIT = GRAPHS / "explore_portrait"
PACE = 0.05
"""The simulator answers at once: settle 20 times faster than on a phone."""


class GameDevice:
    """A SimGame behind the Device protocol's calls the explorer uses, plus the restart it is given."""

    serial = "sim-test"

    def __init__(self, game: SimGame) -> None:
        self.game = game
        self.resolution = tuple(game.graph.resolution)
        self.restarts = 0

    def screenshot(self, *, allow_black: bool = False):
        frame = self.game.frame()
        if not allow_black and frame_problem(frame):
            raise BlackFrame("black frame")
        return frame

    def tap(self, x: int, y: int) -> None:
        self.game.tap(x, y)

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> None:
        self.game.swipe(x1, y1, x2, y2, duration_ms)

    def key(self, name) -> None:
        self.game.key(name)

    def restart(self) -> None:
        self.restarts += 1
        self.game.restart()

    def close(self) -> None:
        pass


def game_device(graph_dir: Path, **options) -> GameDevice:
    return GameDevice(SimGame(load_graph(graph_dir).resolve(None), **options))


@pytest.fixture
def good_device():
    return game_device(GOOD)


@pytest.fixture
def portrait_device():
    return game_device(PORTRAIT)
