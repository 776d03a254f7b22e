"""The simulated game of a graph with a style (engine.sim.style): drawn by StyledRenderer, alive, and with the style's
play (a dialog on arriving at a page, chains of popups).

``SimGame`` plays it; this subclass only changes what it shows (moving parts at the game's clock, the loading
screen's bar, the style's page transition when the scenario draws none) and adds the style's two rules of play.
"""

from __future__ import annotations

import numpy as np

from engine.config.schema import Graph, Popup
from engine.sim.game import SimGame
from engine.sim.scenario import Scenario
from engine.sim.style import Style
from engine.sim.styled import StyledRenderer, _NoAssets


class StyledGame(SimGame):
    """A SimGame drawn in `style` (same arguments as SimGame, and the style)."""

    def __init__(self, graph: Graph, style: Style, *, scenario: Scenario | None = None, **options) -> None:
        scenario = scenario or Scenario()
        if scenario.transition_s == 0 and style.transition != "none" and style.transition_s > 0:
            scenario = scenario.model_copy(update={"transition_s": style.transition_s,
                                                   "transition": style.transition})
        assets = options.pop("assets", None)
        super().__init__(graph, scenario=scenario, assets=_NoAssets(graph.server), **options)  # drawn below
        self.style = style
        self.renderer = StyledRenderer(self.graph, style, assets)
        self._arrivals = {}
        for arrival in style.arrivals:
            self._arrivals.setdefault(arrival.page, []).append(arrival)
        self._arrived: set[str] = set()
        """Pages arrived at since the game started (a first-only dialog shows once)."""
        self._born = self.clock()
        """The moving parts and the loading bar run on the game's own age, not the clock's origin: a countdown
        counts down from its start in every run (on time.monotonic a timer stood at 00:00:00 when the machine had
        been up longer than its start, and ticked on a virtual clock from 1000: the explorer and its gotos saw two
        games)."""

    def _screen(self) -> np.ndarray:
        if self._loading_until is not None:
            return self.renderer.loading(self.clock() - self._born)
        if self.unknown:
            return self.renderer.unknown(self._unknown_variant)
        now = self.clock()
        page = self.renderer.animate(self.page, self.renderer.page(self.page), now - self._born)
        if self.state is not None:
            page = self.state.draw(self.renderer, self.page, page, now)
        if self.popups:
            page = self.renderer.with_popups(page, [self._popups[n] for n in self._shown_popups()])
        return self.overlays.draw(page) if self.overlays.shown else page.copy()

    def _arrive(self, target: str, changing_from: np.ndarray | None = None) -> None:
        super()._arrive(target, changing_from)
        if self.crashed or self.unknown or self.page != target:
            return
        for arrival in self._arrivals.get(target, ()):
            if not (arrival.first_only and target in self._arrived):
                self._show_popup(arrival.popup)
        self._arrived.add(target)

    def _close(self, popup: Popup) -> None:
        super()._close(popup)
        follow = self.style.chains.get(popup.name)
        if follow is not None and follow in self._popups:
            self._show_popup(follow)

    def _to_start(self) -> None:
        super()._to_start()
        if getattr(self, "_arrived", None) is not None and self.crashed:
            self._arrived.clear()  # a restarted game greets the player again
