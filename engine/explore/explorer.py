"""The explore loop: play a game through screenshots, taps, swipes, the back key and app restarts only, within a
budget of actions and time, learning its pages, links, popups and loading screens (engine.explore.atlas).

Each turn stands somewhere and picks one action: on a popup, the next way to dismiss it (the back key, a tap on a
region inside its box, a tap outside it); on a page, the next action never tried there (taps on tappable regions,
the back key, four swipes), else one taken once to confirm where it leads, else the first hop of the shortest known
route to a page with work left; with nowhere to go, the app is restarted. Every action and the frame it settled on
is recorded before it is learnt from, so a recording replays into the same atlas (``--resume``).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from engine.core.errors import DeviceError
from engine.explore import regions
from engine.explore.atlas import Atlas, Here, PageNode, action_key
from engine.explore.effects import LONGEST, Settled, settle
from engine.explore.recording import Recording
from engine.explore.sketch import SAME_PAGE, cell_size, sketch

log = logging.getLogger(__name__)

RESTARTS_IN_A_ROW = 3
"""Restarts without learning anything in between before the explorer gives up early."""
POPUP_TRIES = 8


@dataclass
class Budget:
    taps: int = 400
    seconds: float = 20 * 60.0
    reserve: float = 0.0
    """Seconds kept back for writing the draft after the last action."""


def _swipes(size: tuple[int, int]) -> list[dict[str, Any]]:
    w, h = size
    cx, cy = w // 2, h // 2
    dx, dy = int(w * 0.3), int(h * 0.3)
    return [{"type": "swipe", "start": [cx + dx, cy], "end": [cx - dx, cy]},
            {"type": "swipe", "start": [cx - dx, cy], "end": [cx + dx, cy]},
            {"type": "swipe", "start": [cx, cy + dy], "end": [cx, cy - dy]},
            {"type": "swipe", "start": [cx, cy - dy], "end": [cx, cy + dy]}]


def grid_actions(size: tuple[int, int], taken: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Taps at the centre of every sketch cell no tried region covers: for a page nothing visible led away from
    (a title screen that starts on a tap anywhere, a button drawn too faintly to stand out)."""
    w, h = size
    cell = cell_size(size)
    areas = [a["area"] for a in taken if a.get("area")]
    out = []
    for y in range(cell // 2, h, cell):
        for x in range(cell // 2, w, cell):
            if not any(a[0] <= x < a[2] and a[1] <= y < a[3] for a in areas):
                out.append({"type": "tap", "point": [x, y], "grid": True})
    return out


def page_actions(frame: np.ndarray) -> list[dict[str, Any]]:
    """What to try on a page first seen as `frame`: its tappable regions, the back key, four swipes."""
    h, w = frame.shape[:2]
    taps = [{"type": "tap", "point": list(regions.centre(a)), "area": list(a)} for a in regions.tappable(frame)]
    return taps + [{"type": "key", "key": "back"}] + _swipes((w, h))


class Explorer:
    """Explore `device` (engine.device.base.Device) into `folder`; `restart` force-stops and launches the game."""

    def __init__(self, device: Any, folder: str | Path, *, budget: Budget | None = None,
                 restart: Callable[[], None] | None = None, progress: Callable[[str], None] | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], object] = time.sleep,
                 pace: float = 1.0) -> None:
        self.device = device
        self.pace = pace
        self.folder = Path(folder)
        self.budget = budget or Budget()
        self.restart_app = restart
        self.progress = progress or (lambda line: None)
        self.clock, self.sleep = clock, sleep
        self.atlas = Atlas()
        self.recording: Recording | None = None
        self.taps = 0
        self.restarts = 0
        self.stopped_because = ""
        self._started = clock()
        self._restart_marks: list[int] = []

    # ------------------------------------------------------------------ budget

    def time_left(self) -> float:
        return self.budget.seconds - self.budget.reserve - (self.clock() - self._started)

    def taps_left(self) -> int:
        return self.budget.taps - self.taps

    def _tell(self) -> None:
        a = self.atlas
        self.progress(f"explore: {len(a.live_pages())} pages, {len(a.links())} links, {len(a.popups)} popups, "
                      f"{sum(p.loading for p in a.pages)} loading screens; {self.taps_left()} taps and "
                      f"{max(0.0, self.time_left()):.0f} s left")

    # ------------------------------------------------------------------ running

    def run(self) -> Atlas:
        self.recording = Recording(self.folder)
        try:
            self._replay()
            self._look_first()
            while True:
                if self.taps_left() <= 0:
                    self.stopped_because = "the tap budget is spent"
                    break
                if self.time_left() <= 0:
                    self.stopped_because = "the time budget is spent"
                    break
                action = self._choose()
                if action is None:
                    break
                self._do(action)
                self._tell()
        finally:
            self.recording.close()
        return self.atlas

    def _replay(self) -> None:
        """Learn again from a recording left by an earlier run in the same folder (resume)."""
        assert self.recording is not None
        entries = list(self.recording.entries)
        for entry in entries:
            frame = self.recording.frame(entry)
            if frame is None:
                continue
            transients = []
            for rel in entry.get("transients") or []:
                t = self.recording.read(rel)
                if t is not None:
                    transients.append((sketch(t), rel))
            self.atlas.absorb(entry["action"], sketch(frame), entry["frame"], transients)
            self._prepare(frame)
            if entry["action"].get("type") in ("tap", "swipe", "key"):
                self.taps += 1
        for page in self.atlas.pages:
            if any(a.get("grid") for a in page.taken.values()):
                self._sweep(page)
        if entries:
            self.progress(f"explore: resumed from {len(entries)} recorded actions")

    def _look_first(self) -> None:
        self._do({"type": "screenshot"})

    def _prepare(self, frame: np.ndarray) -> None:
        here = self.atlas.here
        if here.kind == "page":
            page = self.atlas.pages[here.page]
            if not page.actions:
                page.actions = page_actions(frame)

    def _do(self, action: dict[str, Any]) -> Here:
        """Act, wait for the screen to settle, record, learn."""
        before = self.atlas.here
        before_sketch = None
        if before.kind in ("page", "loading") and self.atlas.pages[before.page].sketches:
            before_sketch = self.atlas.pages[before.page].sketches[-1]
        kind = action["type"]
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
        settled = self._settle(None if kind in ("screenshot", "restart") else before_sketch)
        if settled.frame is None:
            self.stopped_because = "the device sends no usable frame"
            raise DeviceError("no usable frame from the device while exploring")
        assert self.recording is not None
        entry = self.recording.add(action, settled.frame, None, "timed out" if settled.timed_out else "",
                                   transients=[f for f, _ in settled.transients])
        transients = [(sk, rel) for (_, sk), rel in zip(settled.transients, entry.get("transients", ()))]
        here = self.atlas.absorb(action, settled.sketch, entry["frame"], transients)
        self._prepare(settled.frame)
        return here

    def _settle(self, before) -> Settled:
        atlas = self.atlas

        def known(sk) -> bool:
            page, score = atlas.best_page(sk)
            return page is not None and score >= SAME_PAGE

        def loading(sk) -> bool:
            page, score = atlas.best_page(sk)
            return page is not None and score >= SAME_PAGE and atlas.pages[page].loading

        def look() -> np.ndarray:
            return self.device.screenshot()

        longest = max(1.0, min(LONGEST, self.time_left() + self.budget.reserve))
        return settle(look, before=before, known=known, loading=loading, sleep=self.sleep, clock=self.clock,
                      pace=self.pace, longest=longest)

    # ------------------------------------------------------------------ choosing

    def _choose(self) -> dict[str, Any] | None:
        here = self.atlas.here
        if here.kind == "popup":
            return self._dismiss(here)
        if here.kind == "loading":
            return {"type": "screenshot"}
        if here.kind != "page":
            return self._restart_or_stop()
        page = self.atlas.pages[here.page]
        action = self._work(page)
        if action is not None:
            return action
        route = self._route(page.id)
        if route is not None:
            return route
        return self._restart_or_stop()

    def _sweep(self, page: PageNode) -> None:
        if not page.swept and page.actions:
            page.swept = True
            page.actions = page.actions + grid_actions(self.device.resolution, page.actions)

    def _work(self, page: PageNode) -> dict[str, Any] | None:
        """An action never tried on `page`, else one that led elsewhere once and was not confirmed yet; on a page
        nothing led away from, a grid of taps (until one of them does)."""
        exits = self.atlas.leaves(page.id)
        for action in page.actions:
            if page.tried[action_key(action)] == 0 and not (exits and action.get("grid")):
                return action
        if not exits and not page.swept and not page.loading and page.actions:
            self._sweep(page)
            return self._work(page)
        for action in page.actions:
            key = action_key(action)
            best = self.atlas.outcome(page.id, key)
            if best is not None and best[0] == "page" and best[1] != page.id and page.tried[key] == 1:
                return action
        return None

    def _has_work(self, page: PageNode) -> bool:
        return not page.loading and self._work(page) is not None

    def _route(self, start: int) -> dict[str, Any] | None:
        """The first action of the shortest known route from `start` to a page with work left."""
        firsts: dict[int, dict[str, Any] | None] = {start: None}
        queue = deque([start])
        while queue:
            at = queue.popleft()
            node = self.atlas.pages[at]
            if at != start and self._has_work(node):
                return firsts[at]
            for action in node.taken.values():
                best = self.atlas.outcome(at, action_key(action))
                if best is None or best[0] != "page" or best[1] in firsts or self.atlas.pages[best[1]].loading:
                    continue
                firsts[best[1]] = firsts[at] or action
                queue.append(best[1])
        return None

    def _restart_or_stop(self) -> dict[str, Any] | None:
        if not any(self._has_work(p) for p in self.atlas.pages):
            self.stopped_because = "every page's actions were tried"
            return None
        if self.restart_app is None:
            self.stopped_because = "nowhere left to go and no way to restart the game"
            return None
        if self._no_progress_restarts() >= RESTARTS_IN_A_ROW:
            self.stopped_because = f"{RESTARTS_IN_A_ROW} restarts in a row found nothing new"
            return None
        return {"type": "restart"}

    def _no_progress_restarts(self) -> int:
        count = 0
        marker = self._restart_marks
        marker.append(self.atlas.changes)
        for earlier in reversed(marker[:-1]):
            if earlier != marker[-1]:
                break
            count += 1
        return count

    def _dismiss(self, here: Here) -> dict[str, Any] | None:
        popup = self.atlas.popups[here.popup]
        if popup.dismiss is not None and popup.tried[action_key(popup.dismiss)] < POPUP_TRIES:
            return dict(popup.dismiss)
        assert self.recording is not None
        frame = self.recording.read(popup.members[-1]) if popup.members else None
        options: list[dict[str, Any]] = [{"type": "key", "key": "back"}]
        if frame is not None:
            w, h = frame.shape[1], frame.shape[0]
            for area in regions.tappable(frame, within=popup.box, limit=6):
                options.append({"type": "tap", "point": list(regions.centre(area)), "area": list(area)})
            options.append({"type": "tap", "point": list(regions.outside(popup.box, (w, h)))})
        for option in options:
            if popup.tried[action_key(option)] == 0:
                return option
        if sum(popup.tried.values()) >= POPUP_TRIES + len(options):
            return self._restart_or_stop()
        return options[sum(popup.tried.values()) % len(options)]

