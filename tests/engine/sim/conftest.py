"""Fixtures for the simulator's tests: the tiny graph beside this file, a fake clock, a game, a served game."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from engine.config.schema import Graph
from engine.sim import FakeAdbServer, SimGame

HERE = Path(__file__).resolve().parent
SCENARIOS = HERE.parents[1] / "data" / "scenarios"


class FakeClock:
    """A clock the test moves by hand, so loading screens never need a real wait."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

    def sleep(self, seconds: float) -> None:
        """As a session's sleep: waiting moves the clock, so loading screens and settles cost no wall time."""
        self.advance(max(0.0, seconds))


@pytest.fixture(scope="session")
def tiny_graph_all_servers() -> Graph:
    """The tiny graph as written, with its per-server values (en and cn)."""
    return Graph.model_validate(yaml.safe_load((HERE / "tiny_graph.yaml").read_text()))


@pytest.fixture(scope="session")
def tiny_graph(tiny_graph_all_servers: Graph) -> Graph:
    """The tiny graph resolved for its first server (en), as a session resolves it."""
    return tiny_graph_all_servers.resolve()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def game(tiny_graph: Graph, clock: FakeClock) -> SimGame:
    return SimGame(tiny_graph, clock=clock)


@pytest.fixture
def served(game: SimGame):
    with FakeAdbServer({"sim-0": game}) as server:
        yield server


@pytest.fixture
def scenarios_dir() -> Path:
    return SCENARIOS
