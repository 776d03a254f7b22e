"""The simulated game and its fake ADB server: the embedded default device, the test bed and the benchmark bed.
It can also stand as an emulator (``AdbdServer``: the device side of ADB, for a real adb server to connect to).

``start_embedded()`` builds a game from a graph and serves it on a free loopback port, so the code under test
drives it exactly as it drives a phone (adbutils over the ADB host protocol).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Callable

from engine.config.assets import AssetPack
from engine.config.schema import Graph
from engine.config.simstate import StateSpec
from engine.sim.adb_server import FakeAdbServer
from engine.sim.adbd import AdbdServer
from engine.sim.game import SimGame
from engine.sim.overlay import Overlay
from engine.sim.render import Renderer, SyntheticAssets
from engine.sim.scenario import Faults, Scenario
from engine.sim.style import Style, style_beside

__all__ = [
    "AdbdServer",
    "EmbeddedSim",
    "FakeAdbServer",
    "Faults",
    "Overlay",
    "Renderer",
    "Scenario",
    "SimGame",
    "Style",
    "SyntheticAssets",
    "start_embedded",
    "style_beside",
]

log = logging.getLogger(__name__)


@dataclass
class EmbeddedSim:
    """A running in-process simulator: connect adbutils to (host, port) and use `serial`."""

    host: str
    port: int
    serial: str
    game: SimGame
    server: FakeAdbServer

    @property
    def assets(self) -> AssetPack:
        """The pack the simulator draws from (its synthetic pack unless real assets were given)."""
        return self.game.renderer.assets

    def stop(self) -> None:
        self.server.stop()

    def __enter__(self) -> EmbeddedSim:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start_embedded(
    graph: Graph | None = None,
    *,
    assets: AssetPack | None = None,
    scenario: Scenario | None = None,
    seed: int = 0,
    serial: str = "sim-0",
    clock: Callable[[], float] = time.monotonic,
    state: StateSpec | None = None,
    style: Style | None = None,
) -> EmbeddedSim:
    """Build a SimGame and serve it on a free loopback port in this process (daemon threads).

    Args:
        graph: the game to simulate; None loads the shipped default graph (engine.config.loader.load_graph()).
        assets: template pixels to paste; None draws the simulator's synthetic pack.
        state: the page state the game holds (engine.config.simstate.state_beside), or None for none.
        style: the graph's drawing style (engine.sim.style.style_beside), or None to draw as the simulator always
            did.
    """
    if graph is None:
        from engine.config.loader import (
            load_graph,  # the loader is only needed for the shipped default
        )

        graph = load_graph().resolve()
    if style is not None:
        from engine.sim.styledgame import StyledGame

        game: SimGame = StyledGame(graph, style, assets=assets, scenario=scenario, seed=seed, clock=clock,
                                   state=state)
    else:
        game = SimGame(graph, assets=assets, scenario=scenario, seed=seed, clock=clock, state=state)
    fake = FakeAdbServer({serial: game}).start()
    log.info("embedded simulator serving %s on 127.0.0.1:%d", serial, fake.port)
    return EmbeddedSim(host=fake.host, port=fake.port, serial=serial, game=game, server=fake)
