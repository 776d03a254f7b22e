"""The dismissal search: the next try at closing a dialog nobody named, with no model (the explorer's and the
navigator's alike: engine.explore.explorer, engine.navigation.search).

In order: its own dismissal; what else closed it, then dialogs with a like box, then any dialog, when it lies inside
this one's box (games reuse a dialog's layout; two dialogs that look one may take different buttons); the back key,
the regions inside its box and a tap outside it; then a grid of taps over its box. Dialogs with a like box are one
family: a grid point that failed on one is not tried again on the next showing, so the search goes on where it left
off (a dialog closed by a spot nothing marks), and a visible option that failed VISIBLE_FAILS times on the family is
left out (a dropped tap hides one failure, seldom two) until the grid is spent (a lookalike may take it); a caller
that knows what each dialog looks like narrows the family to those alike (`kin`: a game draws many dialogs on one
panel, and a spot tapped in vain on one may be another's button). A showing
gets CLOSER_TRIES tries of known closers and SHOWING_TRIES of its own search (FAILED_TRIES once its family failed
FAMILY_FAILURES showings), then the caller gives up on it (the explorer restarts the app, the navigator climbs to
the next rung): every action spent on a dialog is one not spent elsewhere.

With a `guard` (engine.observe.guard.Guard, the navigator's), the regions are judged first: one whose words say it
spends or commits is never tapped (nor a known closer or a grid point inside it), and close crosses, back arrows and
"close", "cancel", "later", "skip" come right after the back key, then the box's top corners (a cross too faint to
stand out), the tap outside, then the other regions.
Where regions are found is `spots` (engine.observe.spots, or the explorer's engine.explore.regions).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from engine.core.stuck import changed_share

from engine.observe import spots as default_spots

Area = tuple[int, int, int, int]

SHOWING_TRIES = 10
"""Actions of the search on one showing of a dialog whose dismissal is not known yet before the caller gives up."""
FAMILY_FAILURES = 3
FAILED_TRIES = 6
"""After FAMILY_FAILURES showings of dialogs with a like box ended unclosed, a showing's search gets FAILED_TRIES
actions: it goes on, slower (the family shows again and again; the spot found once closes every showing after)."""
DISMISS_TRIES = 2
"""Tries of a dialog's known dismissal on one showing (a tap may be dropped)."""
CLOSER_TRIES = 3
"""Closers tried on one showing (what closed this dialog or others before, each once), counted apart from the search
and from its own dismissal's DISMISS_TRIES. Those retries once counted here: generated game 7 under chaos, three
dialogs on one panel taken for one popup (the back key, one cross, another), spent the back key twice and the other
cross once, never reached its own cross, and restarted the game on half of its showings."""
OWN_CLOSERS = 5
"""Up to this many of what closed this very dialog before are tried, each once, when it has more than CLOSER_TRIES
of them: a game draws many dialogs on one panel, and what the explorer takes for one popup may be four, each closed
by its own cross or button (generated game 6 under chaos: four crosses and an OK on one panel, the three closers
seen most often tried on every showing, the fourth and fifth never: a restart on most showings)."""
VISIBLE_FAILS = 2
"""Tries of a visible option (the back key, a region) on a family that left it open before it is left out."""
CORNER_INSET = 12
SCREEN_INSET = 24
"""With a guard, the top corners of a dialog's box are tried right after the closers found, this share of the box's
shorter side in (1/12: about 26 pixels on a 720p dialog), at most this share of the screen's shorter side (1/24: 30
pixels at 720p; a cross or back arrow is drawn to the screen's scale, not the dialog's: on a dialog as tall as the
screen a twelfth would tap beside it): where a close cross or back arrow too faint to stand out sits."""
SAME_BOX = 0.6
"""Overlap (intersection over union) of two dialogs' boxes from which they may be one dialog."""


@dataclass
class Dialog:
    """What is known of one dialog (the explorer's engine.explore.atlas.PopupNode has the same fields)."""

    id: int
    box: Area
    dismiss: dict[str, Any] | None = None
    tried: Counter = field(default_factory=Counter)
    closed: Counter = field(default_factory=Counter)
    """Action keys that closed it, and how often."""
    failures: int = 0
    """Showings it outlasted (no way to close it found)."""
    look: Any = None
    """What it looked like when first seen (the navigator's: engine.navigation.search.Dialogs), else None."""


def action_key(action: dict[str, Any]) -> str:
    """A stable name for an action, the key of what it led to."""
    kind = action.get("type")
    if kind == "tap":
        return f"tap:{action['point'][0]},{action['point'][1]}"
    if kind == "swipe":
        return f"swipe:{action['start'][0]},{action['start'][1]}>{action['end'][0]},{action['end'][1]}"
    if kind == "key":
        return f"key:{action['key']}"
    return str(kind)


def key_action(key: str) -> dict[str, Any] | None:
    """The tap or key an action key names (action_key's inverse for those two), else None."""
    if key.startswith("key:"):
        return {"type": "key", "key": key[4:]}
    if not key.startswith("tap:"):
        return None
    x, _, y = key[4:].partition(",")
    return {"type": "tap", "point": [int(x), int(y)]} if x.lstrip("-").isdigit() and y.lstrip("-").isdigit() \
        else None


def box_match(a: Area, b: Area) -> float:
    """Intersection over union of two boxes."""
    ix = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else 0.0


def inside(action: dict[str, Any], box: Area) -> bool:
    """Whether `action` acts on `box`: a key does, a tap when its point lies inside."""
    if action.get("type") != "tap":
        return action.get("type") == "key"
    x, y = action["point"]
    return box[0] <= x < box[2] and box[1] <= y < box[3]


def _tap(area: Area, spots: Any) -> dict[str, Any]:
    return {"type": "tap", "point": list(spots.centre(area)), "area": list(area)}


def options(popup: Any, frame: np.ndarray | None, box: Area | None = None, *, spots: Any = default_spots,
            guard: Any = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The back key, a tap on each region inside the dialog's `box` (its own panel where known, else the box a
    cover found) and one outside it; and the grid over the box. With a `guard`: none inside a region that spends,
    closers before the tap outside, the tap outside before the other regions."""
    box = box or popup.box
    visible: list[dict[str, Any]] = [{"type": "key", "key": "back"}]
    if frame is None:
        return visible, []
    w, h = frame.shape[1], frame.shape[0]
    areas = spots.within_box(frame, box, limit=6)
    out = {"type": "tap", "point": list(spots.outside(box, (w, h)))}
    if guard is None:
        visible += [_tap(area, spots) for area in areas] + [out]
        return visible, spots.box_grid(box, (w, h), visible)
    # The guard judges whole buttons too (a big one is split into pieces inside the box, or left out of its six).
    judged = guard.judge(frame, box, areas + [a for a in spots.tappable(frame, within=box, limit=12) if a not in areas])
    banned = [{"area": list(a)} for a in judged.forbidden]  # (as if tried: the grid leaves points in them out)
    visible += [_tap(a, spots) for a in judged.closers]
    inset = max(8, min(min(box[2] - box[0], box[3] - box[1]) // CORNER_INSET, min(w, h) // SCREEN_INSET))
    corners = [{"type": "tap", "point": [box[2] - inset, box[1] + inset]},
               {"type": "tap", "point": [box[0] + inset, box[1] + inset]}]
    near = [spots.centre(a) for a in judged.closers]  # (a closer tapped there already; a big one is not a cross)
    visible += [c for c in corners if not any(inside(c, a) for a in judged.forbidden)
                and not any(abs(c["point"][0] - x) < 12 and abs(c["point"][1] - y) < 12 for x, y in near)]
    visible += [out] if not any(inside(out, a) for a in judged.forbidden) else []
    visible += [_tap(a, spots) for a in judged.others[:len(areas)]]
    grid = spots.box_grid(box, (w, h), visible + banned)
    return visible, [p for p in grid if not any(inside(p, a) for a in judged.forbidden)]


def spot_failures(family: list[Any], option: dict[str, Any]) -> int:
    """How often the family was tried at `option`'s spot (the same key, or a tap inside the option's area) and stayed
    open."""
    area = option.get("area")
    count = 0
    for popup in family:
        for key, n in popup.tried.items():
            if area and option.get("type") == "tap":
                action = key_action(key)
                if action is None or action["type"] != "tap" or not inside(action, area):
                    continue
            elif key != action_key(option):
                continue
            count += n - popup.closed[key]
    return count


def next_try(popups: list[Any], popup: Any, tries: Counter, frame: Callable[[], np.ndarray | None],
             box_of: Callable[[Any], Area] = lambda p: p.box, *, spots: Any = default_spots,
             guard: Any = None, kin: Callable[[Any], bool] | None = None) -> dict[str, Any] | None:
    """The next action on `popup`, given this showing's `tries` (action key -> count), its latest frame and each
    dialog's own panel (`box_of`, else the box a cover found); None when the showing's budget is spent. `kin`: which
    dialogs share its failures (default: those with a like box)."""
    own = box_of(popup)
    found: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []

    def opts() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        if not found:
            found.append(options(popup, frame(), own, spots=spots, guard=guard))
        return found[0]

    def allowed(action: dict[str, Any]) -> bool:  # (a guard's verdict on what closed it before too)
        if guard is None or action["type"] != "tap":
            return True
        opts()  # (the guard judges the frame shown now)
        return guard.allows(frame(), action["point"])

    if popup.dismiss is not None and tries[action_key(popup.dismiss)] < DISMISS_TRIES and allowed(popup.dismiss):
        return dict(popup.dismiss)
    alike = [p for p in popups if box_match(p.box, popup.box) >= SAME_BOX or box_match(box_of(p), own) >= SAME_BOX]
    family = alike if kin is None else [p for p in alike if p is popup or kin(p)]
    closing: Counter = Counter()
    like: Counter = Counter()
    for other in popups:
        closing.update(other.closed)
        if other in alike:
            like.update(other.closed)
    own_key = action_key(popup.dismiss) if popup.dismiss is not None else None
    limit = max(CLOSER_TRIES, min(OWN_CLOSERS, sum(1 for k in popup.closed if k != own_key)))
    if sum(1 for k in closing if tries[k] and k != own_key) < limit:  # its own, then a like box's, then any
        for key in [k for counter in (popup.closed, like, closing) for k, _ in counter.most_common()]:
            action = key_action(key)
            if action is not None and tries[key] == 0 and inside(action, popup.box) and allowed(action):
                return action
    failed = sum(p.failures for p in family) >= FAMILY_FAILURES
    searched = sum(n for k, n in tries.items() if k not in closing)
    if searched >= (FAILED_TRIES if failed else SHOWING_TRIES):
        return None
    visible, grid = opts()
    for option in visible:  # again on each showing (a fault may have hidden that it worked), up to a point
        if tries[action_key(option)] == 0 and spot_failures(family, option) < VISIBLE_FAILS:
            return option
    for point in grid:
        if not any(p.tried[action_key(point)] for p in family):
            return point
    for option in visible:  # the search is spent: what failed on the family may work on this one (a lookalike)
        if tries[action_key(option)] == 0:
            return option
    return None


# ------------------------------------------------------------------ a dialog replaced by another (a chain)

LOOK_STEP = 4
"""A dialog's look is every LOOK_STEP-th pixel of its box, each way (a 940x670 panel: 120 KB)."""
LOOK_LEVELS = 40
LOOK_SHARE = 0.002
"""Share of a dialog's look (by more than LOOK_LEVELS) that may differ for a frame to show the same dialog. Two dialogs
on one panel differ by their title and buttons: 1.8 % for "Notice" with DETAILS against "Daily login" with OK
(tests/engine/new_dialog.py's 500x300 panel), 0.45 % for one title word against another on the same panel and
buttons; one dialog shown again, over whatever page, differs by nothing but what moves on it. Dialogs taken for one
share their failures (a button of one left out); one dialog taken for two only searches afresh."""

CHAIN_MAX = 2
"""Dialogs of one chain after the first, in one showing (the generated games chain two or three). Bounded: a page
whose own art moves inside the box must not make every try look like a closing. Only over a cover or an unknown
screen: where a page stays recognised and swallows the taps (the navigator's `panel`), the box is what differs from
the page, moving art included (generated game 1: every try there counted as a closing and the showing's budget never
ran out, 7 gotos of 88 timed out)."""
CHAIN_LEVELS, CHAIN_SHARE = 40, 0.03
"""A try after which this share of a dialog's box changed by more than CHAIN_LEVELS closed it, another dialog in its
place (a chain: a cross, then a dialog only the back key closes). A title, a text and a button redrawn on a panel of
its own colour change this much; a tap on nothing changes nothing. Not told: the next dialog on a panel of a colour
under CHAIN_LEVELS apart with another title and no cross (generated game 7: 0.6 % of its box): a more sensitive
rule (a fifth of a percent at 40 levels, or 3 % at 16) mended game 7 and broke game 8 (page changes and stacked
dialogs taken for chains, their tries reset and the wrong tap kept as the dismissal: 2 or 3 of its first 17 gotos
blocked, bisected on 2026-12-06). That change is the quiet chain's: more than LOOK_SHARE of the box changed, the
back key is pressed next, once a showing, and the try is credited only if the showing then closes (the navigator's
engine.navigation.search.QUIET_CHAIN, the explorer's engine.explore.dismiss.Showing)."""


def moved(before: Any, after: Any, box: tuple[int, int, int, int]) -> float:
    """The share of `box` that changed by more than CHAIN_LEVELS between frames `before` and `after` (0.0 when
    either is missing or they differ in size): above CHAIN_SHARE another dialog came in its place, above LOOK_SHARE
    it no longer looks as it did."""
    if before is None or after is None or before.shape != after.shape:
        return 0.0
    x1, y1, x2, y2 = box
    return changed_share(before[y1:y2, x1:x2], after[y1:y2, x1:x2], LOOK_STEP, CHAIN_LEVELS)


def another(before: Any, after: Any, box: tuple[int, int, int, int], share: float = CHAIN_SHARE) -> bool:
    """Whether the dialog in `box` was replaced by another between frames `before` and `after` (more than `share`
    of it changed by CHAIN_LEVELS)."""
    return moved(before, after, box) > share


def plain(action: dict[str, Any]) -> dict[str, Any]:
    """`action` as a dialog's dismissal is kept and recorded: its type, key and point (not the area or kind a
    search option carries)."""
    return {k: v for k, v in action.items() if k in ("type", "key", "point")}
