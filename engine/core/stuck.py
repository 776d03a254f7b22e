"""Stuck detection for the navigator: a click record, a repeat detector and a no-progress watchdog, and the
watch over a hop while it settles (so that a page change in progress is waited out, not tapped again).

Each check answers with a reason string when the navigation should abort (None otherwise); none of them raises.
They replace ALAS's habit of hiding stuck timers inside `appear()`.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

log = logging.getLogger(__name__)


class ClickRecord:
    """Aborts when one button was tapped 12 times in the last 15 clicks, or two buttons alternate 6 times each."""

    def __init__(self, window: int = 15, same_limit: int = 12, pair_limit: int = 6) -> None:
        self.window, self.same_limit, self.pair_limit = window, same_limit, pair_limit
        self.clicks: deque[str] = deque(maxlen=window)

    def add(self, button: str) -> str | None:
        self.clicks.append(button)
        counts = Counter(self.clicks)
        top = counts.most_common(2)
        if top[0][1] >= self.same_limit:
            return f"button {top[0][0]} was tapped {top[0][1]} times in the last {len(self.clicks)} clicks"
        if len(top) == 2 and top[1][1] >= self.pair_limit and self._alternating(top[0][0], top[1][0]):
            return f"buttons {top[0][0]} and {top[1][0]} alternate ({top[0][1]} and {top[1][1]} times)"
        return None

    def _alternating(self, a: str, b: str) -> bool:
        pair = [c for c in self.clicks if c in (a, b)]
        flips = sum(1 for x, y in zip(pair, pair[1:]) if x != y)
        return flips >= 2 * self.pair_limit - 1

    def clear(self) -> None:
        self.clicks.clear()


class RepeatDetector:
    """Hashes (action, arguments, result); warns at 3 repeats of one hash in the last 8, aborts at 5."""

    def __init__(self, window: int = 8, warn_at: int = 3, abort_at: int = 5) -> None:
        self.window, self.warn_at, self.abort_at = window, warn_at, abort_at
        self.hashes: deque[str] = deque(maxlen=window)

    @staticmethod
    def key(action: str, arguments: Any, result: Any) -> str:
        blob = json.dumps([action, arguments, result], sort_keys=True, default=str)
        return hashlib.blake2b(blob.encode(), digest_size=8).hexdigest()

    def add(self, action: str, arguments: Any, result: Any) -> tuple[str, int]:
        """Returns ("ok" | "warn" | "abort", repeats of this entry in the window)."""
        digest = self.key(action, arguments, result)
        self.hashes.append(digest)
        repeats = sum(1 for h in self.hashes if h == digest)
        if repeats >= self.abort_at:
            return "abort", repeats
        if repeats >= self.warn_at:
            return "warn", repeats
        return "ok", repeats

    def forgive(self) -> None:
        """Forget the repeats so far: what made them has been dealt with (a dialog that swallowed them closed)."""
        self.hashes.clear()


class ProgressWatchdog:
    """Aborts when `limit` steps pass without reaching a page not seen before in this navigation."""

    def __init__(self, limit: int = 40) -> None:
        self.limit = limit
        self.seen: set[str] = set()
        self.idle = 0

    def step(self, page: str | None) -> str | None:
        if page is not None and page not in self.seen:
            self.seen.add(page)
            self.idle = 0
            return None
        self.idle += 1
        if self.idle >= self.limit:
            return f"no new page reached in {self.idle} steps"
        return None


@dataclass
class Detectors:
    """The stuck detectors of one run, with what they need to remember: shared by every goto inside a task."""

    clicks: ClickRecord = field(default_factory=ClickRecord)
    repeats: RepeatDetector = field(default_factory=RepeatDetector)
    watchdog: ProgressWatchdog = field(default_factory=ProgressWatchdog)
    dismissed: dict[str, int] = field(default_factory=dict)
    """Dismissals per popup."""
    last_tap: dict[str, float] = field(default_factory=dict)
    """When each action key was last performed (for debouncing)."""

    def hop(self, key: str, source: str | None, to: str) -> str | None:
        """Record a hop about to be taken; the reason to abort instead, if any (a repeat warns in the log)."""
        reason = self.clicks.add(key)
        if reason:
            return reason
        verdict, repeats = self.repeats.add("link", [source, to, key], source)
        if verdict == "warn":
            log.warning("hop %s -> %s repeated %d times", source, to, repeats)
        return f"the same hop {source} -> {to} repeated {repeats} times" if verdict == "abort" else None

    def too_soon(self, key: str, now: float, settle_s: float) -> float:
        """Seconds still to wait before the action `key` may be performed again (0: go)."""
        last = self.last_tap.get(key)
        return 0.0 if last is None else max(0.0, last + settle_s - now)


UNKNOWN_S = 2.0
"""How long a screen nobody names is looked at, after a hop through a link that led to one before, before the hop's
wait ends (Settling.unknown_s): the explorer writes allowances of 15 s for links through loading screens, and two
such waits on a page the draft never drew spent a goto's 30 s before the ladder was reached."""


RESPOND_S = 5.0
"""How long a hop waits while every look still names its source page, nothing passing between (a tap the game
dropped, on a page whose frames change by themselves), before the hop counts as done where it started and is taken
again: ALAS's ui_goto clicks a route's button again while its page still shows, at most every 5 s
(module/ui/ui.py: `self.appear(page.check_button, offset=offset, interval=5)`). A link's longer allowance (a draft's
15 s through a loading screen) is for the screen that follows, not for a page that never left: generated game 1's
draft under chaos lost 14 of its first 30 gotos that way (a dropped tap cost 15 s of a goto's 30)."""


def same_pixels(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two frames are identical: a sparse sample first (changed frames differ there at once), then all
    pixels (0.15 ms, against 1-10 ms for the scan it saves)."""
    return a.shape == b.shape and np.array_equal(a[::16, ::16], b[::16, ::16]) and np.array_equal(a, b)


MOVING_SHARE = 0.08
"""Share of a sparse sample of pixels that must change (by more than MOVING_LEVELS) between two looks for the screen
to be still drawing a change (a slide or a fade under way). A page's own swaying art, ticking timers and sparks
change less."""
MOVING_LEVELS = 16
"""Levels (0-255, the largest of B, G, R) a pixel must change by to count: a dark page sliding in over a dark loading
screen changes by 20 to 40 (generated game 1 under chaos: slides 0.21-0.23 of the sample at 16 levels, 0.01-0.08 at
40; a page's own moving parts 0.013 in the median)."""


def changed_share(a: np.ndarray, b: np.ndarray, step: int, levels: int) -> float:
    """The share of every `step`-th pixel (each way) of two same-shaped images that changed by more than `levels`
    (the largest of its channels); 0.0 for empty images."""
    diff = np.abs(a[::step, ::step].astype(np.int16) - b[::step, ::step].astype(np.int16))
    changed = diff.max(axis=2) if diff.ndim == 3 else diff
    return float(np.mean(changed > levels)) if changed.size else 0.0


def moving(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether the screen changed over much of itself from frame `a` to frame `b` (see MOVING_SHARE)."""
    return a.shape != b.shape or changed_share(a, b, 8, MOVING_LEVELS) > MOVING_SHARE


MOVING_S = 1.0
"""Longest a screen nobody names is waited on, from the first look at it, while it changes over much of itself (a
slide or fade under way) before the ladder acts on it; a screen nobody names is always looked at twice, a poll
apart. A back key or a lesson taken on a page change half drawn acts on nothing there (generated game 1: the back
key on slides out of loading screens, 13 in 30 gotos with the true graph, and popups learned from them)."""
STILL_LOOKS = 3
"""Looks, a poll apart, that a page named while its frame still changes over much of itself may be waited on before
its hop's tap (a game takes no input while a page slides or fades in: the simulator, as the games it stands for), or
before it is called reached: a page sliding in may look a moment like its sister (generated game 12: a tab page's lit
tab passing where the other tab page's lit tab sits, 7 false successes in 200 gotos with a draft)."""


@dataclass
class Settling:
    """The looks after one hop's action, judged together.

    A look that shows the hop's effect (a page other than the source, or a popup, or the source again after a
    loading screen: the game bounced back or restarted there, and the rest of a 15 s allowance would be waited on a
    page that stays) ends the wait: on a quiet device a hop is verified from one look. While frames keep changing
    with nothing of the effect recognised (a fade or a slide in progress), the page change is still drawing
    (`changing`): the navigator waits it out, it does not tap again. (A fade half done may already show the
    destination; the next tap's own latency, ~250 ms for `input tap`, covers the rest of it, and a tap the game
    ignored is seen and taken again: after RESPOND_S of the source and nothing else.)
    """

    source: str | None
    unknown_s: float | None = None
    """When set (a hop through a link that led to a screen nobody names before), such a screen seen this long after
    the frame moved ends the wait too, still or moving (a page the graph never drew may sway; a link through a
    loading screen the graph does not know arrives after it, which clears the link's count)."""
    changing: bool = False  # the last look's frame differed from the look before it
    done: bool = False
    moved: bool = False
    """A look's frame differed from the one before it since the action. Until then another page named is no effect:
    the same pixels are the same screen, whatever a look with other candidates calls them (generated game 4: the
    first look after a tap got the very pixels of a cross-fade half done and named them a third page)."""

    unknown_since: float | None = None  # the first look of the unknown screens seen in a row since the frame moved
    respond_s: float | None = RESPOND_S
    started: float | None = None  # the first look's time
    left: bool = False  # a look named something other than the source (another page, nothing, a passing screen)
    passed: bool = False
    """A passing screen (loading, black) was seen since the frame moved: the source page seen after it is where the
    hop ended (the game bounced back, or crashed and started again on it), not a page yet to change."""
    expected: str | None = None
    """The page the hop should reach. Another page ends the wait only once two looks in a row name it: a look in the
    middle of a fade may name a page that shares a drawing with the blend (generated game 12's draft: a fade into
    one tab named its sister tab, the goto's target, and the goto was called verified on the wrong tab, 4 of 200)."""
    named: str | None = None  # the page the last look named

    def see(self, page: str | None, popups: bool, passing: bool, changed: bool, now: float = 0.0) -> bool:
        """One look: its page, whether it shows popups, whether it is a passing screen (loading or black), whether
        its frame differs from the previous look's, and when it was taken. True when the hop has settled."""
        self.changing = changed
        self.moved = self.moved or changed
        self.passed = self.passed or self.moved and passing
        self.started = now if self.started is None else self.started
        self.left = self.left or passing or popups or page != self.source
        agreed, self.named = page == self.named or self.expected in (None, page), page
        self.done = not passing and (popups or self.moved and page is not None and (page != self.source or self.passed)
                                     and agreed)
        if not self.left and self.respond_s is not None and now - self.started >= self.respond_s:
            self.done = True  # the source all along: the game did not take the action (RESPOND_S)
        if not (self.moved and page is None and not (passing or popups)):
            self.unknown_since = None
        elif self.unknown_since is None:
            self.unknown_since = now
        if self.unknown_s is not None and self.unknown_since is not None:
            self.done = now - self.unknown_since >= self.unknown_s
        return self.done

    def wait(self, ctx: Any, look: Callable[[], tuple[Any, bool]], *, within: float, first: float, most: float,
             change_s: float) -> Any:
        """Poll `look` (an observation, and whether its frame differs from the previous look's) through the run
        context until the hop settles or `within` seconds pass; a change still drawing then is waited out for up
        to `change_s` more seconds. Returns the last observation."""

        def attempt() -> Any:
            obs, changed = look()
            self.see(obs.page, bool(obs.popups), obs.loading or obs.black_frame, changed, ctx.clock())
            return obs

        obs = ctx.poll(attempt, until=lambda _: self.done, first=first, most=most, within=within)
        if not self.done and self.changing:
            ctx.record("changing", source=self.source)
            obs = ctx.poll(attempt, until=lambda _: self.done or not self.changing, first=first, most=most,
                           within=change_s)
        return obs
