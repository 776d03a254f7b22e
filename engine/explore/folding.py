"""A dialog the atlas placed over the wrong page, placed again when it closes onto the page it covered.

An undimmed or loosely told dialog that an action opened is taken for a popup over the page the action was taken on
(engine.explore.atlas.Atlas.classify: `on`). When the action in fact led to another page with a dialog over it (the
title screen's tap opens the main page under a notice, a chain of three), the dialogs close onto that other page,
and the link from the page the action was taken on to it was never drafted: generated game 13 under chaos, the
title screen's one link lost, the draft's start page a dead end and all 200 gotos `no_route`.
"""

from __future__ import annotations

from typing import Any

from engine.explore.nodes import PopupNode, recount
from engine.explore.sketch import dimmed_under


def closed_onto(atlas: Any, popup: PopupNode, page_id: int) -> bool:
    """Whether `popup`, closed by an action onto page `page_id` it was not placed over, covered that page: its frame
    is that page dimmed. Then it, and the dialogs of its chain placed over the same page, cover `page_id`, and what
    opened them leads there (and opened_onto, for the action that opened this showing). Never onto the start page:
    a crash shows it whatever covered what (a restart is no action on a popup: engine.explore.atlas.Atlas.absorb)."""
    page = atlas.pages[page_id]
    if page_id == atlas.start or page.loading or dimmed_under(popup.sketches, page.sketches) is None:
        return False
    placed = set(popup.over)
    for other in [atlas.popups[i] for i in atlas.chain if i != popup.id] + [popup]:
        if other.over != placed or dimmed_under(other.sketches, page.sketches) is None:
            continue
        for src, opener in other.opened_by:
            counter = atlas.pages[src].results.get(opener) if src in placed else None
            if counter is not None and counter.pop(("same",), 0):
                counter[("page", page_id)] += 1
        other.over = {page_id}
    atlas.changes += 1
    return True


def opened_onto(atlas: Any, action: dict[str, Any], placed: int, to: int) -> None:
    """The dialogs that the last action on a page opened, placed over page `placed`, closed by `action` onto page
    `to`: that action led to `to` (counted once, as it was counted as leading to `placed`). Generated game 8 under
    chaos: a dialog over a page never seen without it was placed over a look-alike page by its dimmed rest, and the
    tap that opened it was drafted as a link to the look-alike (two false successes); dialogs shown on arrival at
    the hub's neighbour were placed over the hub, and the hub's buttons counted as doing nothing. Not after the back
    key (it may have left the page too) nor onto the start page (a crash shows it whatever covered what), nor when
    the action showed `placed` with nothing over it before (then both are what it does: chaos)."""
    if atlas._last is None or to == placed or to == atlas.start or action.get("type") != "tap":
        return
    src, opener = atlas._last
    if placed == src or (src, opener, placed) not in atlas.arrived:
        recount(atlas.pages[src].results, opener, ("same",) if placed == src else ("page", placed),
                ("same",) if to == src else ("page", to))
