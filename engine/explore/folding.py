"""A dialog the atlas placed over the wrong page, placed again when it closes onto the page it covered.

An undimmed or loosely told dialog that an action opened is taken for a popup over the page the action was taken on
(engine.explore.atlas.Atlas.classify: `on`). When the action in fact led to another page with a dialog over it (the
title screen's tap opens the main page under a notice, a chain of three), the dialogs close onto that other page,
and the link from the page the action was taken on to it was never drafted: generated game 13 under chaos, the
title screen's one link lost, the draft's start page a dead end and all 200 gotos `no_route`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from engine.explore.nodes import PopupNode
from engine.explore.sketch import dimmed_under


def closed_onto(atlas: Any, popup: PopupNode, page_id: int) -> bool:
    """Whether `popup`, closed by an action onto page `page_id` it was not placed over, covered that page: its frame
    is that page dimmed. Then it, and the dialogs of its chain placed over the same page, cover `page_id`, and what
    opened them leads there: an action on the page it was placed over (counted as leaving the screen as it was), or
    one on another page (counted as a link to the page it was placed over, unless it ever showed that page with
    nothing over it: generated game 8 under chaos, a dialog over a page never seen without it placed over a
    look-alike by its dimmed rest, and the link drafted to the look-alike). Never onto the start page: a crash shows
    it whatever covered what (a restart is no action on a popup: engine.explore.atlas.Atlas.absorb)."""
    page = atlas.pages[page_id]
    if page_id == atlas.start or page.loading or dimmed_under(popup.sketches, page.sketches) is None:
        return False
    placed = set(popup.over)
    for other in [atlas.popups[i] for i in atlas.chain if i != popup.id] + [popup]:
        if other.over != placed or dimmed_under(other.sketches, page.sketches) is None:
            continue
        for src, opener in other.opened_by:  # as "same" over its own page, else as a link to where it was placed
            counter = atlas.pages[src].results.get(opener, Counter())
            moved = (counter.pop(("same",), 0) if src in placed else 0) + sum(
                counter.pop(("page", p), 0) for p in placed if p != src and (src, opener, p) not in atlas.arrived)
            if moved:
                counter[("same",) if src == page_id else ("page", page_id)] += moved
        other.over = {page_id}
    atlas.changes += 1
    return True
