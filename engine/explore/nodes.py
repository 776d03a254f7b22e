"""The atlas's records (engine.explore.atlas): a page as a cluster of frames, a popup over pages, and where the
explorer stands."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from engine.explore.sketch import Sketch

Area = tuple[int, int, int, int]


@dataclass
class PageNode:
    id: int
    sketches: list[Sketch] = field(default_factory=list)
    sketch_files: list[str | None] = field(default_factory=list)  # each sketch's frame file (engine.explore.words)
    members: list[str] = field(default_factory=list)
    visits: int = 0
    loading: bool = False
    """A loading screen: it changed into another screen by itself."""
    slow: bool = False
    """Reached through a loading screen at least once."""
    slow_s: float = 0.0
    """The longest an action took to reach this page through a loading screen (0: not measured, such as a page found
    slow only when what led to it turned out to be a loading screen): the draft's allowance is made from it."""
    actions: list[dict[str, Any]] = field(default_factory=list)
    """Candidate actions, in the order they are tried (set on the first visit)."""
    tried: Counter = field(default_factory=Counter)
    taken: dict[str, dict[str, Any]] = field(default_factory=dict)
    """action key -> the action as it was taken."""
    results: dict[str, Counter] = field(default_factory=dict)
    """action key -> Counter of outcomes: ('page', id) (a popup over that page included), ('same',), ('lost',)."""
    abandoned: bool = False
    """Given up: no route led back to it even right after a restart (its untried actions stay untried)."""
    swept: int = 0
    """Levels of grid taps added to its actions (engine.explore.explorer.grid_actions): 0 none, 1 coarse, 2 all."""
    name: str | None = None
    title: tuple[Area, str] | None = None
    moving: Any = None
    """(rows, cols) booleans: cells seen changing by themselves on it (engine.explore.effects.Settled.moving)."""
    folded: int | None = None
    """The popup this page turned out to be (another page under it, seen before that page was known): no longer a
    page, and frames are matched against the page under it instead."""


@dataclass
class PopupNode:
    id: int
    box: Area
    over: set[int] = field(default_factory=set)
    sketches: list[Sketch] = field(default_factory=list)
    members: list[str] = field(default_factory=list)
    dismiss: dict[str, Any] | None = None
    dimmed: bool = True
    """Found over a dimmed page (a modal panel); an undimmed box may be a page opened from the one it covers."""
    sketch_files: list[str | None] = field(default_factory=list)  # each sketch's frame file
    left_for: int | None = None
    """The page the back key last left it for, when that was not the page under it."""
    became: int | None = None
    """The page this turned out to be (engine.explore.atlas.Atlas.unfold): no longer a popup."""
    tried: Counter = field(default_factory=Counter)
    closed: Counter = field(default_factory=Counter)
    """Action keys that closed it (to the page under it), and how often: two dialogs that look one may each take
    another button (engine.explore.dismiss tries them all)."""
    opened_by: set[tuple[int, str]] = field(default_factory=set)
    failures: int = 0
    """Showings that ended in a restart, no way to close it found (engine.explore.explorer.Explorer._dismiss)."""


class Led(NamedTuple):
    """Where an action, taken where the explorer stands, led before (engine.explore.atlas.Atlas.led_to): the page
    (None: nowhere known), and whether it showed that page with nothing over it then."""

    page: int | None = None
    clean: bool = False


@dataclass(frozen=True)
class Here:
    """Where the explorer is: a page, a popup over a page, a loading screen, or nowhere known."""

    kind: str  # page | popup | loading | none
    page: int | None = None
    popup: int | None = None

    def outcome(self) -> tuple:
        """What an action that led here led to: a popup over a page is that page (the popup shows at random on
        arrival, or the action opened it over the page it was taken on: then it is that page, no link; who opens a
        popup is kept in ``PopupNode.opened_by``)."""
        if self.kind in ("page", "loading", "popup"):
            return ("page", self.page)
        return ("lost",)


NOWHERE = Here("none")


def best_of(outcomes: Counter) -> tuple:
    """The most frequent outcome; on a tie, one that led somewhere (a dropped tap leaves the screen as it was, so
    "the same" once and another page once is a link)."""
    return max(outcomes.items(), key=lambda item: (item[1], item[0] != ("same",)))[0]


def one_button(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether taps `a` and `b` press one button: the point of one inside the area of the other (a region and the
    pieces its words cut it into)."""
    def inside(point: Any, area: Any) -> bool:
        return bool(point and area) and area[0] <= point[0] <= area[2] and area[1] <= point[1] <= area[3]
    return a.get("type") == b.get("type") == "tap" and (inside(a.get("point"), b.get("area"))
                                                         or inside(b.get("point"), a.get("area")))


def pressed_with(page: PageNode, action: dict[str, Any]) -> set[str]:
    """The keys of taps taken on `page` that press the button `action` presses: one of it, its pieces or the region
    they cut, offered on the page (one_button)."""
    whole = [a for a in page.actions + [action] if one_button(action, a)]
    return {k for k, b in page.taken.items() if any(one_button(a, b) for a in whole)}


def recount(results: dict[str, Counter], key: str, was: tuple, now: tuple) -> None:
    """Move one count of action `key`'s outcome `was` to `now` (what it led to, learnt later: a loading screen's page,
    the page a dialog closed onto); nothing when it has none."""
    counter = results.get(key)
    if counter is None or counter[was] <= 0:
        return
    counter[was] -= 1
    if counter[was] <= 0:
        del counter[was]
    counter[now] += 1
