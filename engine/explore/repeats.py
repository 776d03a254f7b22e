"""The explorer's anti-repeat rule: the same action, on the same screen, with the same outcome, is given up.

The agent loop has it for model calls (engine.agent.repeat: a call repeated with the same result is refused); the
explorer needs it for its own choices. Whatever picked an action (a rule for frozen games that takes tries back, a
popup search, a loading screen that is really a page with a clock), one action that leaves the screen where it was
REPEAT_LIMIT times in a row is not taken there again. Issue 45 saw the loop this stops: one tap on an empty spot
beside a page's title, on an unchanged frame, 1770 times of 1788.

A place is where the atlas says the explorer stands (engine.explore.atlas.Here: a page, a popup over a page, a
loading screen), so a ticking clock or swaying art on the page does not make it a new screen. A place where every
action was given up swallows input: it is recorded, left by the back key or a restart, and named in the review.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from engine.explore.atlas import Here, action_key

REPEAT_LIMIT = 3
"""Times in a row one action may leave the screen as it was before it is given up on that screen."""
CYCLE_LIMIT = 6
"""Times one action may be taken at one place with nothing learnt anywhere since (the atlas's `changes` count):
a cycle of actions that each change the screen is a loop too. Generated game 1 showed it: a page drawn darker
than its hub was taken for a dialog over the hub, so one tap was believed to lead to the hub; the route to the hub
took it, the back key came back, and the pair ate 100 of 351 actions. Not counted on a popup: one shown again and
again over a page (under chaos, three arrivals in ten) is closed the same way each time with nothing new learnt,
and is no loop of the explorer's (the dismissal search bounds its tries on each showing). Counted, the cross of
generated game 6's commonest dialog was given up after its sixth showing over the main page, and each showing
after ended in a restart."""
WATCHED = frozenset({"tap", "swipe", "key", "restart"})
"""Action types the rule counts (a screenshot only looks)."""


def place(here: Here) -> tuple:
    return here.kind, here.page, here.popup


class RepeatGuard:
    """Counts one action's unchanged outcomes in a row and remembers what was given up where."""

    def __init__(self, limit: int = REPEAT_LIMIT) -> None:
        self.limit = limit
        self._last: tuple | None = None
        self._streak = 0
        self.given_up: dict[tuple, list[str]] = defaultdict(list)
        """place -> the action keys given up there, in order."""
        self.longest = 0
        """The longest run of one action on an unchanged screen seen (never more than `limit`)."""
        self._taken: dict[tuple, int] = defaultdict(int)
        self._progress: Any = None
        self._still: tuple[str, int] = ("", 0)
        self.refused: set[str] = set()
        """Actions refused until the frame changes (`still`), wherever the atlas places the screen."""

    def allowed(self, here: Here, action: dict[str, Any]) -> bool:
        key = action_key(action)
        return key not in self.refused and key not in self.given_up.get(place(here), ())

    def still(self, action: dict[str, Any], unchanged: bool, here: Here) -> None:
        """Count `action` (taken at `here`) having left the frame as it was (`unchanged`: the recording's own test):
        one action that did so `limit` times in a row is refused until the frame changes, wherever the atlas places
        the screen, and given up at `here` (the review names it). The places' rule (`saw`)
        needs the atlas to place the screen alike each time; a dialog the atlas placed now as one popup, now as
        another (their drawings alike) reset its count at every step: generated game 6 under chaos pressed the back
        key 51 times on one unchanged frame, a dialog only its OK button closed (b90c7fe)."""
        if action.get("type") not in WATCHED:
            return
        if not unchanged:
            self._still = ("", 0)
            self.refused.clear()
            return
        key = action_key(action)
        self._still = (key, self._still[1] + 1 if self._still[0] == key else 1)
        self.longest = max(self.longest, self._still[1])
        if self._still[1] >= self.limit and key not in self.refused:
            self.refused.add(key)
            if key not in self.given_up[place(here)]:
                self.given_up[place(here)].append(key)

    def saw(self, before: Here, action: dict[str, Any], after: Here, progress: Any = None) -> bool:
        """Count `action` taken at `before` having led to `after` (`progress`: what was learnt so far, anything
        that changes when something is); True when it is given up there now."""
        if action.get("type") not in WATCHED:
            return False
        step = (place(before), action_key(action))
        if progress != self._progress:
            self._progress, self._taken = progress, defaultdict(int)
        self._taken[step] += before.kind != "popup"  # (not on a popup: CYCLE_LIMIT)
        if self._taken[step] > CYCLE_LIMIT and action.get("type") != "restart":
            self.given_up[step[0]].append(step[1])
            self._taken[step] = 0
            return True
        if after != before:
            self._last, self._streak = None, 0
            return False
        self._streak = self._streak + 1 if step == self._last else 1
        self._last = step
        self.longest = max(self.longest, self._streak)
        if self._streak < self.limit:
            return False
        self.given_up[step[0]].append(step[1])
        self._last, self._streak = None, 0
        return True

    def swallowing(self) -> list[tuple[tuple, list[str]]]:
        """Places where actions were given up, with them."""
        return [(p, keys) for p, keys in self.given_up.items() if keys]


class FruitlessRestarts:
    """The explorer's other loop guard: restarts in a row after which nothing was learnt (the same progress mark)."""

    def __init__(self) -> None:
        self.marks: list[tuple[int, int]] = []

    def count(self, progress: tuple[int, int]) -> int:
        """Mark `progress` at a restart; how many marks just before it are the same (restarts that learnt nothing)."""
        self.marks.append(progress)
        same = 0
        for earlier in reversed(self.marks[:-1]):
            if earlier != progress:
                break
            same += 1
        return same

    def clear(self) -> None:
        self.marks.clear()


SWALLOWED = 4
"""Taps on a page, each leaving the screen as it was, with nothing tried there ever changing it, after which its back
key comes next. A screen that swallows its first taps is a dialog or an event's splash more often than a page: under
chaos one hop in twenty shows a screen only the back key leaves, and generated game 4 tapped each one's regions
4 to 12 times before the back key (63 of its 451 actions). A page whose first taps hit nothing leaves by the back key
it would have tried anyway, a little earlier."""


def swallowing_back(page: Any, start: int | None) -> dict[str, Any] | None:
    """The back key of `page` when it should come next (SWALLOWED), else None; never on the start page (the back
    key may leave the game there) nor on a loading screen. On a first visit where the back key swallowed too, the
    first tap tried comes again, once: a dropped tap (on a page first reached under a dialog, that tap is the
    dialog's own, engine.explore.dismiss.panel_first; generated game 6 under chaos: its cross tap dropped, the back
    key swallowed, 36 more taps on the page under it before a restart). Restarting the game there instead was
    measured and undone: generated game 4 under chaos drafted four dialogs over its hub as pages of their own (52
    pages drafted for 38, at e9e10f6), never folded into popups by a tap that closed them."""
    if page.id == start or page.loading:
        return None
    tried = [key for key, n in page.tried.items() if n]
    if len(tried) < SWALLOWED or any(set(page.results.get(key, {})) != {("same",)} for key in tried):
        return None
    if not page.tried["key:back"]:
        return next((a for a in page.actions if action_key(a) == "key:back"), None)
    if page.visits <= 1 and tried[0] != "key:back" and page.tried[tried[0]] == 1 and tried[0] in page.taken:
        return dict(page.taken[tried[0]])
    return None
