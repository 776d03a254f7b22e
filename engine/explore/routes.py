"""Routes over what the explorer has learnt: the first action of the shortest known way from one page to another
(engine.explore.atlas's links; loading screens are passed through, never aimed at)."""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

from engine.explore.atlas import Atlas, Here, action_key


def first_action(atlas: Atlas, allowed: Callable[[Here, dict[str, Any]], bool], start: int,
                 reached: Callable[[int], bool]) -> dict[str, Any] | None:
    """Breadth first over the links known to lead to a page (loading screens excluded), skipping actions `allowed`
    refuses (the anti-repeat rule's given-up ones: a route through them loops): the first action of the shortest
    route from `start` to a page `reached` accepts, or None."""
    firsts: dict[int, dict[str, Any] | None] = {start: None}
    queue = deque([start])
    while queue:
        at = queue.popleft()
        if reached(at):
            return firsts[at]
        for action in atlas.pages[at].taken.values():
            if not allowed(Here("page", at), action):
                continue
            best = atlas.outcome(at, action_key(action))
            if best is None or best[0] != "page" or best[1] in firsts or atlas.pages[best[1]].loading:
                continue
            firsts[best[1]] = firsts[at] or action
            queue.append(best[1])
    return None


EARLY_SWEEP_AFTER = 0.5
"""The share of the time budget after which hubs are swept before the taps the priority rates low (below)."""
HUB_EXITS = 3
"""The ways out (distinct pages reached) that make a page a hub for an early sweep."""


def next_sweep(atlas: Atlas, reachable: Callable[[int], bool]) -> tuple[int, int] | bool | None:
    """The next page to sweep with a grid of taps and the grid's level, once no visible work is left: every page
    coarsely first (the one with the most distinct ways out first), then finely; False when every page has been
    swept, None when none left is in reach from here (a dead end: a run stopped there at 15.6 of 20 minutes, four
    pages never found; a restart brings them in reach)."""
    here = atlas.here
    for level in (1, 2):
        left = [p for p in atlas.live_pages() if p.swept < level and p.actions and atlas.leaves(p.id)
                and not p.abandoned]
        candidates = [p for p in left if here.kind == "page" and here.page == p.id or reachable(p.id)]
        if candidates:
            break
        if left:
            return None
    else:
        return False
    exits = {p.id: len(atlas.exits(p.id)) for p in candidates}
    return max(candidates, key=lambda p: (exits[p.id], -p.id)).id, level


def early_sweep(atlas: Atlas, spent: float, current: int | None = None, turn: bool = True) -> int | None:
    """The hub to sweep with a coarse grid of taps before the low-rated work left (swipes and taps of kinds that
    rarely changed the screen, on every page): the page with the most ways out among those with HUB_EXITS or more,
    never swept, once `spent` (the share of the time budget used) reaches EARLY_SWEEP_AFTER; else None. A grid is
    the only way to a page no detector offers a tap for (a button drawn faintly, or not a button at all), and a
    hub hides the most; on a game whose visible work fills the budget, grids waiting for all of it never came (the
    20-minute run of a 44-page game: four pages behind two hubs' grids, never found). `current`: the page
    being swept, kept while its grid has taps left; `turn`: whether a new hub's grid may start now (SweepShare)."""
    if spent < EARLY_SWEEP_AFTER:
        return None
    sweeping = atlas.pages[current] if current is not None else None
    if sweeping is not None and not sweeping.abandoned and any(a.get("grid") and not sweeping.tried[action_key(a)]
                                                               for a in sweeping.actions):
        return current  # the sweep under way is finished first
    if not turn:
        return None
    hubs = [(len(atlas.exits(p.id)), -p.id) for p in atlas.live_pages()
            if not p.swept and p.actions and not p.abandoned and len(atlas.exits(p.id)) >= HUB_EXITS]
    return -max(hubs)[1] if hubs else None


class SweepShare:
    """The early sweeps' share: once the first hub's grid started (early_sweep), the hubs' grids and the low-rated
    rest take turns, action for action; a new hub's grid starts only when the rest has had as many actions since as
    the grids had. The rest is the visible work no priority rated (its swipes, the taps of kinds that rarely changed
    the screen) on every page but the hubs; the grids find buttons no detector offers. Grids of every hub first left
    the rest no time: generated game 1 (quiet) spent the second half of its 10 minutes on six hubs' grids (156 taps,
    no page) while a tab page's swipes, the way to its two sister tabs, were never tried; game 9 ten hubs' grids."""

    def __init__(self) -> None:
        self.started = False
        self.grid = 0
        self.rest = 0

    def count(self, action: dict[str, Any]) -> None:
        """An action taken (or replayed): a grid's tap, or the rest's (routes to a hub count as the rest's)."""
        if self.started and action.get("type") in ("tap", "swipe", "key", "restart"):
            if action.get("grid"):
                self.grid += 1
            else:
                self.rest += 1

    def hub(self, atlas: Atlas, spent: float, current: int | None) -> int | None:
        """early_sweep's hub, given the turns."""
        found = early_sweep(atlas, spent, current, turn=not self.started or self.grid <= self.rest)
        self.started = self.started or found is not None
        return found
