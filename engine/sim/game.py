"""The simulated game: which screen shows now, and what taps, swipes and keys do to it.

``SimGame`` plays any graph: a tap inside a link's click area takes the link (through a loading screen when the
destination page or the scenario asks for one), popups cover the page until their own dismiss action is done, the
back key follows declared back links. A popup whose dismissal starts with ``wait`` steps only (a toast, a
banner that times out) goes by itself once those seconds have passed; a non-blocking popup belongs to the page it
showed on (it is not drawn over the pages the player goes on to, and shows again on return until dismissed).
``show_overlay`` draws a dialog no graph declares over everything (engine.sim.overlay). It always knows the truth
(``truth()``), so tests can check what the engine claims against what is really on screen.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Callable

import numpy as np

from engine.config.assets import AssetPack
from engine.config.schema import (
    Action,
    Graph,
    KeyAction,
    Link,
    Popup,
    SwipeAction,
    TapAction,
    WaitAction,
)
from engine.config.simstate import StateSpec
from engine.sim.compose import transition_frame
from engine.sim.overlay import Overlay, Overlays
from engine.sim.pagestate import SimState
from engine.sim.render import POINT_BOX, Renderer
from engine.sim.scenario import Faults, Scenario

log = logging.getLogger(__name__)

KEYCODES = {
    3: "home",
    4: "back",
    66: "enter",
    82: "menu",
    187: "app_switch",
    111: "back",  # KEYCODE_ESCAPE behaves like back in most games
}
KEYNAMES = {
    "KEYCODE_HOME": "home",
    "KEYCODE_BACK": "back",
    "KEYCODE_ENTER": "enter",
    "KEYCODE_MENU": "menu",
    "KEYCODE_APP_SWITCH": "app_switch",
    "KEYCODE_ESCAPE": "back",
}
SWIPE_COSINE = 0.7
"""How close in direction a swipe must be to a declared swipe link (cosine of the angle)."""


def key_name(key: str | int) -> str | None:
    """'back', 4, '4' or 'KEYCODE_BACK' -> 'back'; None for keys the game ignores."""
    if isinstance(key, int) or (isinstance(key, str) and key.isdigit()):
        return KEYCODES.get(int(key))
    key = str(key)
    if key.upper() in KEYNAMES:
        return KEYNAMES[key.upper()]
    return key.lower() if key.lower() in ("back", "home", "enter", "menu", "app_switch") else None


class SimGame:
    """The game state behind one simulated phone. Thread-safe: every public method takes the lock."""

    def __init__(
        self,
        graph: Graph,
        *,
        assets: AssetPack | None = None,
        scenario: Scenario | None = None,
        seed: int | None = 0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] | None = None,
        state: StateSpec | None = None,
    ) -> None:
        graph = graph.require_resolved()
        if not graph.pages:
            raise ValueError("a graph without pages cannot be simulated")
        self.graph = graph
        self.renderer = Renderer(graph, assets)
        self.faults = Faults(scenario, seed)
        self.scenario = self.faults.scenario
        self.clock = clock
        # Device costs pass on the game's clock: a virtual clock's own sleep (SharedClock.now -> .sleep), else real.
        self.sleep = sleep or getattr(getattr(clock, "__self__", None), "sleep", time.sleep)
        overrides = getattr(self.scenario, "state", None)  # a scenario's `state: {...}` replaces initial values
        self.state = SimState(state.with_overrides(overrides), graph, clock()) if state is not None else None
        """Counters, dots, lists and timers declared beside the graph (engine.config.simstate), or None."""
        self._any_tap = frozenset(state.closed_by_any_tap) if state is not None else frozenset()
        """Popups the game closes on a tap anywhere ('tap to continue'), whatever spot the graph names."""
        self._transition: tuple[np.ndarray, float, float] | None = None
        """A page change in progress: the screen it started from, when it started, when it ends."""
        self._lock = threading.RLock()
        self._buttons = {b.name: b for b in graph.buttons}
        self._popups = {p.name: p for p in graph.popups}
        self.start_page = graph.start_page or graph.pages[0].name
        self.page = self.start_page
        self.popups: list[str] = []
        self._dismiss_step: dict[str, int] = {}
        self._step_since: dict[str, float] = {}
        """When each shown popup's current dismiss step began (for timed waits)."""
        self._popup_page: dict[str, str] = {}
        self._loading_until: float | None = None
        self._loading_target: str | None = None
        self.unknown = False
        self._unknown_variant = 0
        self.crashed = False
        self.overlays = Overlays()
        """Dialogs no graph declares, drawn over everything (engine.sim.overlay)."""
        self.counters = {"taps": 0, "dropped_taps": 0, "hops": 0, "keys": 0, "swipes": 0, "frames": 0,
                         "black_frames": 0, "crashes": 0, "controls": 0}

    # ------------------------------------------------------------------ what is on screen

    def frame(self) -> np.ndarray:
        """The current screen as a fresh BGR uint8 array at the graph's resolution, after the scenario's cost of
        a raw screencap: the frame shows the screen as it is when the capture ends."""
        s = self.scenario
        self._cost(s.screencap_raw_ms)
        with self._lock:
            self._settle()
            self.counters["frames"] += 1
            if self.faults.black_frame():
                self.counters["black_frames"] += 1
                return self.renderer.black()
            screen = self._screen()
            if self._transition is not None:
                old, start, end = self._transition
                return transition_frame(old, screen, (self.clock() - start) / (end - start), s.transition)
            return screen

    def png_cost(self) -> None:
        """What a PNG screencap costs beyond the raw capture that frame() charged (compression on the device)."""
        self._cost(max(0.0, self.scenario.screencap_png_ms - self.scenario.screencap_raw_ms))

    def _cost(self, ms: float) -> None:
        """A device operation's cost from the scenario, spent outside the lock (other requests go on meanwhile)."""
        if ms > 0:
            self.sleep(ms / 1000.0)

    def _screen(self) -> np.ndarray:
        """What the screen shows once every change in progress is done (no faults drawn)."""
        if self._loading_until is not None:
            return self.renderer.loading()
        if self.unknown:
            return self.renderer.unknown(self._unknown_variant)
        page = self.renderer.page(self.page)
        if self.state is not None:
            page = self.state.draw(self.renderer, self.page, page, self.clock())
        if self.popups:
            page = self.renderer.with_popups(page, [self._popups[n] for n in self._shown_popups()])
        return self.overlays.draw(page) if self.overlays.shown else page.copy()

    def truth(self) -> dict:
        """What really shows: page, popups (top last), loading, unknown, crashed, and the counters."""
        with self._lock:
            self._settle()
            return {
                "page": self.page,
                "popups": list(self._shown_popups()),
                "overlays": self.overlays.names(),
                "loading": self._loading_until is not None,
                "loading_target": self._loading_target,
                "unknown": self.unknown,
                "crashed": self.crashed,
                "transition": self._transition is not None,
                **self.counters,
                **({"state": self.state.truth(self.clock())} if self.state is not None else {}),
            }

    # ------------------------------------------------------------------ input

    def tap(self, x: int, y: int, cost_ms: float | None = None) -> None:
        """A tap, after the scenario's `input tap` cost (`cost_ms`: another input path's own cost)."""
        self._cost(self.scenario.tap_ms if cost_ms is None else cost_ms)
        with self._lock:
            self._settle()
            self.counters["taps"] += 1
            if self.faults.drop_tap():
                self.counters["dropped_taps"] += 1
                log.debug("tap (%d, %d) dropped by the scenario", x, y)
                return
            if self._loading_until is not None or self.unknown or self._transition is not None:
                return
            if self.overlays.tap(x, y):
                return
            top = self._top_blocking_popup()
            candidates = [self._popups[n] for n in reversed(self._shown_popups())]
            for popup in candidates:
                action = self._next_dismiss(popup)
                if isinstance(action, TapAction) and (self._inside(action, x, y) or popup.name in self._any_tap):
                    self._advance_dismiss(popup)
                    return
                if popup is top:
                    return  # a blocking popup swallows every other tap
            page = self.graph.page(self.page)
            links = [link for link in page.links
                     if isinstance(link.action, TapAction) and self._inside(link.action, x, y)]
            if links:  # one spot, several links: the scenario's running event decides (else the first)
                self._hop(next((link for link in links if link.to == self.scenario.event), links[0]))
                return
            shows = self.state.tap(self.page, x, y, self.clock()) if self.state is not None else None
            if shows is not None:  # the state's taps (and list rows) come before the graph's plain controls
                self.counters["controls"] += 1
                for name in shows:
                    self._show_popup(name)
                return
            for control in page.controls:
                if self._inside(TapAction(type="tap", button=control.button), x, y):
                    self.counters["controls"] += 1
                    if control.shows is not None:
                        self._show_popup(control.shows)
                    return

    def key(self, key: str | int) -> None:
        self._cost(self.scenario.key_ms)
        with self._lock:
            self._settle()
            self.counters["keys"] += 1
            name = key_name(key)
            if name is None or self._loading_until is not None or self._transition is not None or \
                    self.overlays.key(name):
                return
            if self.unknown:
                if name == "back":
                    self.unknown = False
                return
            top = self._top_blocking_popup()
            for popup in [self._popups[n] for n in reversed(self._shown_popups())]:
                action = self._next_dismiss(popup)
                if isinstance(action, KeyAction) and action.key == name:
                    self._advance_dismiss(popup)
                    return
                if popup is top:
                    return
            for link in self.graph.page(self.page).links:
                if isinstance(link.action, KeyAction) and link.action.key == name:
                    self._hop(link)
                    return

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300, cost_ms: float | None = None) -> None:
        """A swipe, after its duration plus the scenario's `input swipe` overhead (`cost_ms`: another path's)."""
        overhead = self.scenario.swipe_ms if cost_ms is None else cost_ms
        self._cost(overhead + duration_ms if overhead > 0 else 0.0)
        with self._lock:
            self._settle()
            self.counters["swipes"] += 1
            if (self._loading_until is not None or self.unknown or self._transition is not None
                    or self._top_blocking_popup() is not None or self.overlays.shown):
                return
            for link in self.graph.page(self.page).links:
                if isinstance(link.action, SwipeAction) and _same_direction(link.action, (x1, y1, x2, y2)):
                    self._hop(link)
                    return

    def restart(self) -> None:
        """The app restarts (am start / monkey): back to the login screen, nothing on top."""
        with self._lock:
            self._to_start()

    # ------------------------------------------------------------------ internals

    def _shown_popups(self) -> list[str]:
        # Higher priority draws on top (last) and is dismissed first; ties keep arrival order.
        order = {name: i for i, name in enumerate(self.popups)}
        here = [n for n in self.popups if self._popups[n].blocking or self._popup_page.get(n) == self.page]
        return sorted(here, key=lambda n: (self._popups[n].priority, order[n]))

    def _top_blocking_popup(self) -> Popup | None:
        for name in reversed(self._shown_popups()):
            if self._popups[name].blocking:
                return self._popups[name]
        return None

    def _next_dismiss(self, popup: Popup) -> Action | None:
        step = self._dismiss_step.get(popup.name, 0)
        while step < len(popup.dismiss) and isinstance(popup.dismiss[step], WaitAction):
            step += 1  # a wait in a dismiss sequence is satisfied by the caller's pause, not by an input
        return popup.dismiss[step] if step < len(popup.dismiss) else None

    def _advance_dismiss(self, popup: Popup) -> None:
        step = self._dismiss_step.get(popup.name, 0) + 1
        while step < len(popup.dismiss) and isinstance(popup.dismiss[step], WaitAction):
            step += 1
        if step < len(popup.dismiss):
            self._dismiss_step[popup.name] = step
            self._step_since[popup.name] = self.clock()
            return
        self._close(popup)

    def _close(self, popup: Popup) -> None:
        self._dismiss_step.pop(popup.name, None)
        self._step_since.pop(popup.name, None)
        self._popup_page.pop(popup.name, None)
        self.popups.remove(popup.name)
        log.debug("popup %s dismissed", popup.name)
        # A chain is "a popup, then another": the one just closed does not come straight back.
        follow = self.faults.popup_after_dismiss([n for n in self._allowed_popups() if n != popup.name])
        if follow is not None:
            self._show_popup(follow)

    def _inside(self, action: TapAction, x: int, y: int) -> bool:
        if action.button is not None:
            button = self._buttons.get(action.button)
            if button is None:
                return False
            x1, y1, x2, y2 = button.click_area
        else:
            px, py = action.point
            x1, y1, x2, y2 = px - POINT_BOX, py - POINT_BOX, px + POINT_BOX, py + POINT_BOX
        return x1 <= x < x2 and y1 <= y < y2

    def _hop(self, link: Link) -> None:
        self.counters["hops"] += 1
        target = link.to
        log.debug("hop %s -> %s", self.page, target)
        # Only a page's own allowance makes the simulator load (graph defaults are the engine's patience).
        seconds = self.faults.loading_seconds(self.graph.page(target).loading or 0.0)
        if seconds > 0:
            self._loading_until = self.clock() + seconds
            self._loading_target = target
            return
        self._arrive(target, self._changing_from())

    def _changing_from(self) -> np.ndarray | None:
        """The screen a page change starts from, when the scenario draws page changes (else None)."""
        return self._screen() if self.scenario.transition_s > 0 else None

    def _settle(self) -> None:
        if self._transition is not None and self.clock() >= self._transition[2]:
            self._transition = None
        if self._loading_until is not None and self.clock() >= self._loading_until:
            target, changing_from = self._loading_target, self._changing_from()  # from the loading screen
            self._loading_until = self._loading_target = None
            self._arrive(target, changing_from)
        for name in self._shown_popups():
            popup = self._popups[name]
            rest = popup.dismiss[self._dismiss_step.get(name, 0):]
            # Only waits left: the popup times out by itself (after input steps, waits are the caller's pause).
            if rest and all(isinstance(a, WaitAction) for a in rest) and name in self.popups:
                if self.clock() >= self._step_since.get(name, 0.0) + sum(a.seconds for a in rest):
                    log.debug("popup %s timed out", name)
                    self._close(popup)

    def _arrive(self, target: str, changing_from: np.ndarray | None = None) -> None:
        if changing_from is not None:
            now = self.clock()
            self._transition = (changing_from, now, now + self.scenario.transition_s)
        self.page = target
        self.crashed = False
        self.overlays.arrived()
        fate = self.faults.after_hop()
        if fate == "crash":
            log.debug("scenario crash on arrival at %s", target)
            self.counters["crashes"] += 1
            self._to_start()
            self.crashed = True
            return
        if fate == "unknown":
            self.unknown = True
            self._unknown_variant += 1
            return
        popup = self.faults.popup_after_hop(self._allowed_popups())
        if popup is not None:
            self._show_popup(popup)

    def _to_start(self) -> None:
        self.page = self.start_page
        self.popups.clear()
        self._dismiss_step.clear()
        self._step_since.clear()
        self._popup_page.clear()
        self._loading_until = self._loading_target = None
        self._transition = None
        self.unknown = False
        self.overlays.clear()

    def _allowed_popups(self) -> list[str]:
        return [
            p.name
            for p in self.graph.popups
            if p.name not in self.popups and (p.pages is None or self.page in p.pages)
        ]

    def _show_popup(self, name: str) -> None:
        if name not in self.popups:
            log.debug("popup %s shows on %s", name, self.page)
            self.popups.append(name)
            self._popup_page[name] = self.page
            self._step_since[name] = self.clock()

    def show_popup(self, name: str) -> None:
        """Put a popup on screen now (tests and scripted scenarios)."""
        with self._lock:
            self.graph.popup(name)
            self._show_popup(name)

    def show_overlay(self, overlay: Overlay) -> None:
        """Draw a dialog no graph declares over the screen now (engine.sim.overlay)."""
        with self._lock:
            self.overlays.show(overlay)

    def goto(self, page: str) -> None:
        """Teleport to `page` (tests): no hop, no faults."""
        with self._lock:
            self.graph.page(page)
            self._to_start()
            self.page = page


def _same_direction(action: SwipeAction, swipe: tuple[int, int, int, int]) -> bool:
    ax, ay = action.end[0] - action.start[0], action.end[1] - action.start[1]
    bx, by = swipe[2] - swipe[0], swipe[3] - swipe[1]
    na, nb = math.hypot(ax, ay), math.hypot(bx, by)
    if na == 0 or nb == 0:
        return False
    return (ax * bx + ay * by) / (na * nb) >= SWIPE_COSINE
