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
