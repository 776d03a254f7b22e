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
    opened them leads there (and opened_onto, for the action that opened this showing), from the page it was taken on
    or, when the dialog was placed over a look-alike of its dimmed rest, to that look-alike no more (generated game 7
    under chaos: a tap on the hub opened a page under a dialog only the back key closes, placed over a look-alike;
    the tap stayed a link to the look-alike, the page was never reached again, and the four pages and two tabs
    behind it were never found). Never onto the start page:
    a crash shows it whatever covered what (a restart is no action on a popup: engine.explore.atlas.Atlas.absorb)."""
    page = atlas.pages[page_id]
    if page_id == atlas.start or page.loading or dimmed_under(popup.sketches, page.sketches) is None:
        return False
    placed = set(popup.over)
    for other in [atlas.popups[i] for i in atlas.chain if i != popup.id] + [popup]:
        if other.over != placed or dimmed_under(other.sketches, page.sketches) is None:
            continue
        for src, opener in other.opened_by:
            counter = atlas.pages[src].results.get(opener)
            if counter is not None and src in placed and counter.pop(("same",), 0):
                counter[("page", page_id)] += 1
            elif counter is not None and src not in placed:  # placed over a look-alike of its dimmed rest, a guess
                for guess in [o for o in counter if o[0] == "page" and o[1] in placed]:
                    if (src, opener, guess[1]) not in atlas.arrived:  # (never shown that page clean: all the dialog's)
                        counter[("page", page_id)] += counter.pop(guess)
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
