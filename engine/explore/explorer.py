"""The explore loop: play a game through screenshots, taps, swipes, the back key and app restarts only, within a
budget of actions and time, learning its pages, links, popups and loading screens (engine.explore.atlas).

Each turn stands somewhere and picks one action: on a popup, the next way to close it (engine.explore.dismiss: what
closed it or popups like it, the back key, the regions inside its box, a tap outside it, then a grid of taps over its
box); on a page, the next action never tried there (taps on tappable regions and on the holes in bars of them, the
back key, four swipes, taps in the order engine.explore.priority gives; a promising one anywhere in reach first; on a
screen never seen, what closed a known popup it shows comes first, and the back key first on a detour), else one
taken once to confirm where it leads, else the first hop of the shortest route to a page with work; with nowhere to
go, the app is restarted. Every action and the frame it settled on is recorded before it is learnt from, so a
recording replays into the same atlas (``--resume``).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from engine.core.errors import DeviceError
from engine.explore import dismiss
from engine.explore.atlas import Atlas, Here, Led, PageNode, action_key
from engine.explore.effects import LONGEST, Settled, settle
from engine.explore.priority import Priority, first_order
from engine.explore.recording import Recording, pack_cells, unpack_cells
from engine.explore.regions import grid_actions, page_actions
from engine.explore.routes import early_sweep, first_action, next_sweep
from engine.explore.repeats import FruitlessRestarts, RepeatGuard, swallowing_back
from engine.explore.sketch import changed, sketch
from engine.explore.words import Reader, Words

log = logging.getLogger(__name__)

RESTARTS_IN_A_ROW = 3  # restarts without learning anything in between before the explorer gives up early
CONFIRM_TRIES = 4
"""Tries of an action that led to another page, until it leads to one page twice: a popup over the page it led to,
a crash or a dropped tap each make an outcome of their own (under chaos, about four tries in ten)."""


@dataclass
class Budget:
    taps: int | None = None  # actions at most (None: no cap; the time budget ends the run)
    seconds: float = 20 * 60.0
    reserve: float = 0.0  # seconds kept back for writing the draft after the last action


class Explorer:
    """Explore `device` (engine.device.base.Device) into `folder`; `restart` force-stops and launches the game;
    `reader` reads text (pages alike but for their words are told apart by it: engine.explore.words)."""

    def __init__(self, device: Any, folder: str | Path, *, budget: Budget | None = None,
                 restart: Callable[[], None] | None = None, progress: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], object] = time.sleep,
                 pace: float = 1.0, reader: Reader | None = None) -> None:
        self.device = device
        self.pace = pace
        self.folder = Path(folder)
        self.budget = budget or Budget()
        self.restart_app = restart
        self.progress = progress or (lambda line: None)
        self.clock, self.sleep = clock, sleep
        self.atlas = Atlas(Words(reader, lambda rel: self.recording.read(rel) if self.recording is not None else None))
        self.recording: Recording | None = None
        self.taps, self.restarts, self.stopped_because = 0, 0, ""
        self._started = clock()
        self._restart_marks = FruitlessRestarts()
        self._last: tuple[Any, str] | None = None
        """The sketch and file of the last frame written."""
        self._showing, self._frame = dismiss.Showing(), None
        """The popup shown now: tries since it showed (engine.explore.dismiss.Showing); the last frame (its chains)."""
        self._panels = dismiss.Panels(lambda rel: self.recording.read(rel) if self.recording is not None else None)
        self.repeats = RepeatGuard()
        """The anti-repeat rule (engine.explore.repeats); what it gave up reaches the review."""
        self.atlas.swallowed = self.repeats.given_up
        self.sweeping: int | None = None
        self.sweep_round = 0
        """The page whose grid of taps is being tried once no visible work is left anywhere."""
        self.second_round = False
        """Set once all work is done: what did nothing once is tried once more on every page."""
        self.priority = Priority()  # which untried tap first, which wait for the thorough pass (explore.priority)
        self.atlas.siblings = lambda page, key: self.priority.plates.get((page, key), ())

    # ------------------------------------------------------------------ budget

    def time_left(self) -> float:
        return self.budget.seconds - self.budget.reserve - (self.clock() - self._started)

    def taps_left(self) -> float:
        return float("inf") if self.budget.taps is None else self.budget.taps - self.taps

    def _tell(self) -> None:
        a = self.atlas
        self.progress(f"explore: {len(a.live_pages())} pages, {len(a.links())} links, {len(a.popups)} popups, "
                      f"{sum(p.loading for p in a.pages)} loading screens; {self.taps_left():g} taps and "
                      f"{max(0.0, self.time_left()):.0f} s left")

    # ------------------------------------------------------------------ running

    def run(self) -> Atlas:
        self.recording = Recording(self.folder)
        try:
            self._replay()
            self._do({"type": "screenshot"})  # the first look
            while True:
                if self.taps_left() <= 0:
                    self.stopped_because = "the tap budget is spent"
                    break
                if self.time_left() <= 0:
                    self.stopped_because = "the time budget is spent"
                    break
                before = self.atlas.here
                action = self._unrepeated(self._choose())
                if action is None:
                    break
                if self.repeats.saw(before, action, self._do(action), self.atlas.changes):
                    self.progress(f"explore: {action_key(action)} repeated with nothing learnt; given up there")
                self._tell()
        finally:
            self.recording.close()
        return self.atlas

    def _unrepeated(self, action: dict[str, Any] | None) -> dict[str, Any] | None:
        """`action`, unless the anti-repeat rule gave it up here: then the back key, else a restart, else None (the
        screen swallows every action: the run stops and says so)."""
        here = self.atlas.here
        for candidate in (action, {"type": "key", "key": "back"},
                          {"type": "restart"} if self.restart_app is not None else None):
            if candidate is None or self.repeats.allowed(here, candidate):
                if candidate is not action:
                    self.progress(f"explore: {action_key(action)} was given up here; trying {action_key(candidate)}")
                return candidate
        self.stopped_because = "a screen swallows every action (tapped, back key and restart each changed nothing)"
        return None

    def _replay(self) -> None:
        """Learn again from a recording left by an earlier run in the same folder (resume)."""
        assert self.recording is not None
        entries = list(self.recording.entries)
        last = None
        for entry in entries:  # (the time since the entry before: the action's time to settle, as _do measures it)
            now = entry.get("time") if isinstance(entry.get("time"), (int, float)) else None
            elapsed, last = (now - last if now and last else None), now
            frame = self.recording.frame(entry)
            if frame is None:
                continue
            transients = []
            for rel in entry.get("transients") or []:
                t = self.recording.read(rel)
                if t is not None:
                    transients.append((sketch(t), rel))
            came_by, sk = self._came_by(entry["action"]), sketch(frame)
            self._absorb(entry["action"], sk, entry["frame"], transients, unpack_cells(entry.get("moving"), sk),
                         elapsed)
            self._prepare(frame, came_by)
            if entry["action"].get("type") in ("tap", "swipe", "key"):
                self.taps += 1
        for page in self.atlas.pages:  # grids tried before: offer their levels again
            coarse = [a for a in page.taken.values() if a.get("grid")]
            if coarse:
                self._sweep(page)
                if any(a not in page.actions for a in coarse):
                    self._sweep(page)
        if entries:
            self.progress(f"explore: resumed from {len(entries)} recorded actions")

    def _came_by(self, action: dict[str, Any]) -> tuple[int, str] | None:
        """The page an action is taken on and its key (None off a page)."""
        return (self.atlas.here.page, action_key(action)) if self.atlas.here.kind == "page" else None

    def _prepare(self, frame: np.ndarray | None, came_by: tuple[int, str] | None = None, page_id: int | None = None
                 ) -> None:
        here = self.atlas.here
        if frame is not None and (page_id is not None or here.kind == "page"):
            page = self.atlas.pages[here.page if page_id is None else page_id]
            if not page.actions:
                page.actions = page_actions(frame, page.moving)
                self.priority.describe(page.id, frame, page.actions)
                detour = came_by is not None and any(o[0] == "page" and o[1] != page.id for o in
                                                     self.atlas.pages[came_by[0]].results.get(came_by[1], ()))
                page.actions = first_order(page.actions, came_by[1] if came_by else None, detour)
                popup = self._panels.showing(self.atlas.popups, self.atlas.pages, frame)
                page.actions = dismiss.first_tries(popup, frame, page.actions)  # a popup over a page never seen?

    def _do(self, action: dict[str, Any]) -> Here:
        """Act, wait for the screen to settle, record, learn."""
        before = self.atlas.here
        before_sketch = None
        if before.kind in ("page", "loading") and self.atlas.pages[before.page].sketches:
            before_sketch = self.atlas.pages[before.page].sketches[-1]
        kind = action["type"]
        started = self.clock()
        try:
            if kind == "tap":
                self.device.tap(*action["point"])
            elif kind == "swipe":
                self.device.swipe(*action["start"], *action["end"])
            elif kind == "key":
                self.device.key(action["key"])
            elif kind == "restart":
                self.restarts += 1
                if self.restart_app is not None:
                    self.restart_app()
        except DeviceError as exc:
            log.warning("%s failed: %s", kind, exc)
        if kind in ("tap", "swipe", "key"):
            self.taps += 1
        settled = self._settle(None if kind in ("screenshot", "restart") else before_sketch, action)
        if settled.frame is None:
            self.stopped_because = "the device sends no usable frame"
            raise DeviceError("no usable frame from the device while exploring")
        assert self.recording is not None
        # An unchanged screen points at the frame already written (PNG encoding is most of an action's cost).
        same = self._last is not None and not settled.transients and not changed(settled.sketch, self._last[0])
        entry = self.recording.add(action, settled.frame, None, "timed out" if settled.timed_out else "",
                                   transients=[f for f, _ in settled.transients],
                                   same_as=self._last[1] if same and self._last else None,
                                   moving=pack_cells(settled.moving))
        self._last = (settled.sketch, entry["frame"])
        self.repeats.still(action, same, before)  # (engine.explore.repeats.RepeatGuard.still: one frame, one action)
        transients = [(sk, rel) for (_, sk), rel in zip(settled.transients, entry.get("transients", ()))]
        came_by = self._came_by(action)
        here = self._absorb(action, settled.sketch, entry["frame"], transients, settled.moving, self.clock() - started)
        if here.kind == "popup" and before.kind == "popup" and before.popup == here.popup:
            popup = self.atlas.popups[here.popup]
            self._showing.stayed(popup, action, self._frame, settled.frame, self._panels.box(popup, self.atlas.pages))
        else:
            self._showing = self._showing.ended(self.atlas.popups, before, here)  # a new showing
        self._frame = settled.frame
        self._prepare(settled.frame, came_by)
        return here

    def _absorb(self, action: dict, sk: Any, rel: str, transients: list, moving: Any, elapsed: float | None) -> Here:
        """The atlas learns where `action` led (and how long it took); the priority, whether a tap changed it."""
        before = self.atlas.here
        here = self.atlas.absorb(action, sk, rel, transients, moving=moving, elapsed=elapsed)
        while self.atlas.unfolded:  # popups found to be pages (Atlas.unfold): their actions offered from a frame
            page_id, member = self.atlas.unfolded.pop()
            self._prepare(self.recording.read(member) if member and self.recording else None, page_id=page_id)
        if before.kind == "page" and before.page is not None:
            self.priority.saw(before.page, action, here != before)
        return here

    def _settle(self, before, action: dict[str, Any] | None = None) -> Settled:
        atlas, led, seen = self.atlas, self.atlas.led_to(action) if action else Led(), {}
        on = atlas.here.page if atlas.here.kind in ("page", "popup") else None  # as absorb will ask

        def place(sk) -> tuple:  # one look at the atlas per frame (settle asks three questions of each)
            if seen.get("sk") is not sk:
                seen.update(sk=sk, at=atlas.classify(sk, on=on, led=led))
            return seen["at"]

        def moving_of(sk) -> np.ndarray | None:  # the cells known to move on the page it shows
            kind, page, _ = place(sk)
            return atlas.pages[page].moving if kind in ("page", "loading") else None

        longest = max(1.0, min(LONGEST, self.time_left() + self.budget.reserve))
        return settle(self.device.screenshot, before=before, known=lambda sk: place(sk)[0] != "new",
                      loading=lambda sk: place(sk)[0] == "loading", moving_of=moving_of, sleep=self.sleep,
                      clock=self.clock, pace=self.pace, longest=longest)

    # ------------------------------------------------------------------ choosing

    def _choose(self) -> dict[str, Any] | None:
        here = self.atlas.here
        if self.atlas.frozen and self.restart_app is not None:
            return {"type": "restart"}  # the game stopped taking input (engine.explore.atlas.FROZEN_AFTER)
        if here.kind == "popup":
            return self._dismiss(here)
        if here.kind == "loading":
            return {"type": "screenshot"}
        if here.kind != "page":
            return self._restart_or_stop()
        page = self.atlas.pages[here.page]
        spent = (self.clock() - self._started) / max(1.0, self.budget.seconds - self.budget.reserve)
        for promising in (True, False):  # taps of kinds that led somewhere first, here or a route away, then the rest
            action, hub = None, None if promising else early_sweep(self.atlas, spent, self.sweeping)
            if hub is not None:  # a hub's grid before the low-rated rest (engine.explore.routes.early_sweep)
                self.sweeping, self.sweep_round = hub, max(self.sweep_round, 1)
                action = self._grid_tap(page) if hub == page.id else self._route_to(hub)
            action = action or self._work(page, promising) or self._route(page.id, promising)
            if action is not None:
                return action
        return self._restart_or_stop()

    def _sweep(self, page: PageNode) -> None:
        """Add the next level of grid taps to the page's actions."""
        if page.swept < 2 and page.actions:
            page.swept += 1
            page.actions = page.actions + grid_actions(self.device.resolution, page.actions, page.swept)

    def _grid_tap(self, page: PageNode) -> dict[str, Any] | None:
        """An early sweep's next tap on a hub (routes.early_sweep): its untried taps, those put off too (a grid leaves
        out what they cover: on one game's hub such a tap was the only way to four pages), then its coarse grid."""
        left = [a for a in page.actions if a.get("type") == "tap" and not page.tried[action_key(a)]]
        visible = [a for a in left if not a.get("grid")]
        if visible or page.swept:
            return self.priority.order(page.id, visible)[0] if visible else next(iter(left), None)
        if (again := self.priority.second_try(page, self.atlas.drops_taps())) is not None:
            return again  # (before any grid: engine.explore.priority.Priority.second_try)
        self._sweep(page)
        return next((a for a in page.actions if a.get("grid") and not page.tried[action_key(a)]), None)

    def _work(self, page: PageNode, promising: bool = False) -> dict[str, Any] | None:
        """`promising`: only an untried action the priority calls promising (engine.explore.priority). Else an action
        never tried on `page`, else one that led elsewhere but never twice to the same page (tried again up to
        CONFIRM_TRIES times), else, if the game drops taps, one that did nothing once. A grid of taps is tried on the
        start page when nothing visible led away from it (until one tap does), and, once no visible work is left
        anywhere, on the page with the most ways out (a hub hides the most: a faint button)."""
        if (back := swallowing_back(page, self.atlas.start)) is not None:  # (engine.explore.repeats.SWALLOWED)
            return back
        exits = self.atlas.leaves(page.id)
        # A dead end is swept only where the game starts (a title screen that starts on a tap anywhere); anywhere
        # else it may be outside the game (a home screen, where a grid of taps would open other apps).
        grid_ok = (not exits and page.id == self.atlas.start) or self.sweeping == page.id
        untried = [a for a in page.actions if page.tried[action_key(a)] == 0 and (grid_ok or not a.get("grid"))
                   and not self.priority.put_off(page.id, a) and (not promising or self.priority.promising(page.id, a))]
        if untried or promising:
            return self.priority.order(page.id, untried)[0] if untried else None
        if grid_ok and page.swept < self.sweep_level(page) and not page.loading and page.actions:
            if (again := self.priority.second_try(page, self.atlas.drops_taps())) is not None:
                return again
            self._sweep(page)
            return self._work(page)
        for action in page.actions:
            key = action_key(action)
            moves = [n for o, n in page.results.get(key, {}).items() if o[0] == "page" and o[1] != page.id]
            if moves and max(moves) == 1 and page.tried[key] < CONFIRM_TRIES:
                return action
        if self.second_round or len(self.atlas.exits(page.id)) >= 2:  # (once all else is done)
            return self.priority.second_try(page, self.second_round or self.atlas.drops_taps())
        return None

    def sweep_level(self, page: PageNode) -> int:
        """How far the page may be swept now: the start page as a dead end fully, the page swept, the round's."""
        if not self.atlas.leaves(page.id) and page.id == self.atlas.start:
            return 2
        return self.sweep_round if self.sweeping == page.id else 0

    def _next_sweep(self) -> bool | None:
        """Choose the next page to sweep (routes.next_sweep): False, every page swept; None, none left in reach."""
        found = next_sweep(self.atlas, lambda target: self._route_to(target) is not None)
        if not found:
            return found
        self.sweeping, self.sweep_round = found
        self.progress(f"explore: no visible work left; tapping a grid on page {self.sweeping}")
        return True

    def _has_work(self, page: PageNode, promising: bool = False, reached: bool = False) -> bool:
        """Whether `page` has work; one given up for want of a route has it again once `reached` by one."""
        return not page.loading and (reached or not page.abandoned) and self._work(page, promising) is not None

    def _just_restarted(self) -> bool:
        entries = self.recording.entries if self.recording is not None else []
        return bool(entries) and entries[-1]["action"].get("type") == "restart" and self.atlas.here.kind == "page"

    def _route(self, start: int, promising: bool = False) -> dict[str, Any] | None:
        """The first action of the shortest known route from `start` to a page with (`promising`) work left."""
        return first_action(self.atlas, self.repeats.allowed, start,
                            lambda at: at != start and self._has_work(self.atlas.pages[at], promising, reached=True))

    def _route_to(self, target: int) -> dict[str, Any] | None:
        """The first action of the shortest known route from here to `target` (None: here already, or no route)."""
        here = self.atlas.here
        return None if here.kind != "page" or here.page == target else first_action(
            self.atlas, self.repeats.allowed, here.page, lambda at: at == target)

    def _restart_or_stop(self) -> dict[str, Any] | None:
        if self._just_restarted():
            # Fresh from a restart and still no route to them: pages seen once off a glitch or a crash, or behind
            # a one-way door. They are given up (named in the review) instead of restarting for them forever.
            for page in self.atlas.pages:
                if self._has_work(page) and self._route_to(page.id) is None and page.id != self.atlas.here.page:
                    page.abandoned = True
            route = self._route(self.atlas.here.page) if self.atlas.here.kind == "page" else None
            if route is not None:
                return route
        idle = not any(self._has_work(p) for p in self.atlas.pages)
        if idle and not self.priority.thorough:  # the taps put off (engine.explore.priority) are work now
            self.priority.thorough = True
            return self._choose()
        if idle and self.atlas.link_stays and not self.second_round:
            # Every visible action tried in a game seen dropping a tap (a known link that once did nothing): one
            # dropped tap hides a page and all behind it, so before grids of taps, what did nothing once is tried
            # once more everywhere, pages given up for want of a route too. A game that never drops one is spared.
            self.second_round = True
            for page in self.atlas.pages:
                page.abandoned = False
            return self._choose()
        if idle and (sweep := self._next_sweep()) is False:
            self.stopped_because = "every page's actions were tried"
            return None
        if idle and sweep:
            here = self.atlas.here
            if here.kind == "page" and here.page == self.sweeping:
                return self._work(self.atlas.pages[here.page])
            if (route := self._route_to(self.sweeping)) is not None:
                return route
        if self.restart_app is None:
            self.stopped_because = "nowhere left to go and no way to restart the game"
            return None
        if self._restart_marks.count(self._progress()) >= RESTARTS_IN_A_ROW:
            entries = self.recording.entries if self.recording is not None else []
            if entries and entries[-1]["action"].get("type") != "restart":
                # Judged from where the game starts, never from a dead end (from one nothing is in reach).
                return {"type": "restart"}
            if self.sweeping is not None and self.atlas.pages[self.sweeping].swept < 2:
                # The page being swept cannot be got back to: give up its grid, go on with the next page's.
                self.atlas.pages[self.sweeping].swept = 2
                self.atlas.pages[self.sweeping].abandoned = True
                self._restart_marks.clear()
                return {"type": "restart"}
            # Whatever still has work is out of reach even from the start: give it up, and sweep what is left.
            for page in self.atlas.pages:
                if self._has_work(page) and self._route_to(page.id) is None:
                    page.abandoned = True
            self._restart_marks.clear()
            if self.atlas.here.kind == "page":
                action = self._work(self.atlas.pages[self.atlas.here.page]) or self._route(self.atlas.here.page)
                if action is not None:
                    return action
            if self._next_sweep():
                here = self.atlas.here
                action = self._work(self.atlas.pages[here.page]) if here.kind == "page" and \
                    here.page == self.sweeping else self._route_to(self.sweeping)
                if action is not None:
                    return action
            self.stopped_because = f"{RESTARTS_IN_A_ROW} restarts in a row found nothing new"
            return None
        return {"type": "restart"}

    def _progress(self) -> tuple[int, int]:
        """What was learnt so far: new outcomes, actions taken twice (a link confirmed behind a dead end too)."""
        return self.atlas.changes, sum(1 for p in self.atlas.pages for n in p.tried.values() if n >= 2)

    def _dismiss(self, here: Here) -> dict[str, Any] | None:
        """The next way to close the popup shown now (engine.explore.dismiss), else a restart."""
        popup = self.atlas.popups[here.popup]
        action = self._showing.next(self.atlas.popups, popup, lambda: self._popup_frame(popup),
                                    lambda p: self._panels.box(p, self.atlas.pages))
        if action is not None:
            return action
        popup.failures += 1
        return self._restart_or_stop()

    def _popup_frame(self, popup: Any) -> np.ndarray | None:
        return self.recording.read(popup.members[-1]) if popup.members and self.recording is not None else None
