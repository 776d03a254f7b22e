"""Stuck detection for the navigator: a click record, a repeat detector and a no-progress watchdog.

Each check answers with a reason string when the navigation should abort (None otherwise); none of them raises.
They replace ALAS's habit of hiding stuck timers inside `appear()`.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any


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
