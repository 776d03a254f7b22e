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


def early_sweep(atlas: Atlas, spent: float, current: int | None = None) -> int | None:
    """The hub to sweep with a coarse grid of taps before the low-rated work left (swipes and taps of kinds that
    rarely changed the screen, on every page): the page with the most ways out among those with HUB_EXITS or more,
    never swept, once `spent` (the share of the time budget used) reaches EARLY_SWEEP_AFTER; else None. A grid is
    the only way to a page no detector offers a tap for (a button drawn faintly, or not a button at all), and a
    hub hides the most; on a game whose visible work fills the budget, grids waiting for all of it never came (the
    20-minute run of a 44-page game: four pages behind two hubs' grids, never found). `current`: the page
    being swept, kept while its grid has taps left."""
    if spent < EARLY_SWEEP_AFTER:
        return None
    sweeping = atlas.pages[current] if current is not None else None
    if sweeping is not None and not sweeping.abandoned and any(a.get("grid") and not sweeping.tried[action_key(a)]
                                                               for a in sweeping.actions):
        return current  # the sweep under way is finished first
    hubs = [(len(atlas.exits(p.id)), -p.id) for p in atlas.live_pages()
            if not p.swept and p.actions and not p.abandoned and len(atlas.exits(p.id)) >= HUB_EXITS]
    return -max(hubs)[1] if hubs else None
