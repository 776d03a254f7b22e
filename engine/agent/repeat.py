"""Anti-repeat: notice a model that makes the same call with the same result over and over, and escalate.

An *entry* is one call as the loop saw it: a hash of the tool's name, the canonical JSON of its arguments (keys
sorted, so ``{"a": 1, "b": 2}`` and ``{"b": 2, "a": 1}`` are the same call) and the result's status. The guard
keeps the last ``window`` entries (policies/default.yaml, ``agent.repeat``: 8).

Who counts what:

- :meth:`RepeatGuard.check` counts nothing and changes nothing. It answers for a call *about to be made*: the call
  would be occurrence ``n = m + 1``, where ``m`` is the number of entries in the window with the same hash.
  ``n >= stop`` gives ``"stop"``, else ``n >= refuse`` gives ``"refuse"``, else ``n >= warn`` gives ``"warn"``,
  else ``"ok"``. With the shipped limits the 3rd identical call in a row is warned about, the 5th is refused and
  the 8th stops the episode.
- Before a call runs its status is unknown, so ``check(tool, arguments)`` (no status) assumes the status of the
  most recent entry of the same tool and arguments: the call would end as it did last time. Pass a status to ask
  about an exact (tool, arguments, status).
- :meth:`RepeatGuard.record` adds exactly one entry (the oldest falls out of the window). The loop records every
  call it was asked for: an executed call with its result's status, and a refused call (``"refuse"``: not
  executed) with status :data:`REFUSED`. A refused entry takes the status of the most recent entry of the same
  tool and arguments, so refusals keep counting as repeats and a model that insists reaches ``"stop"``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import deque
from collections.abc import Mapping
from typing import Any, Literal

from engine.config.policies import RepeatLimits

log = logging.getLogger(__name__)

RepeatVerdict = Literal["ok", "warn", "refuse", "stop"]
REFUSED = "refused"
"""The status a refused (not executed) call is recorded with."""
_UNKNOWN = "?"


def canonical_arguments(arguments: Mapping[str, Any] | None) -> str:
    """The arguments as canonical JSON: keys sorted, no spaces; values JSON cannot hold are written as strings."""
    return json.dumps(dict(arguments or {}), sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)


def action_key(tool: str, arguments: Mapping[str, Any] | None) -> str:
    """A short hash of (tool, canonical arguments)."""
    return hashlib.sha256(f"{tool}\x00{canonical_arguments(arguments)}".encode()).hexdigest()[:16]


def entry_key(tool: str, arguments: Mapping[str, Any] | None, status: str) -> str:
    """A short hash of (tool, canonical arguments, result status): what the guard compares."""
    return hashlib.sha256(f"{action_key(tool, arguments)}\x00{status}".encode()).hexdigest()[:16]


class RepeatGuard:
    """The last ``limits.window`` calls of an episode and the verdict on the next one (see the module docstring).

    Args:
        limits: ``window``, ``warn``, ``refuse`` and ``stop`` (``load_policies().get("agent").repeat``).
    """

    def __init__(self, limits: RepeatLimits) -> None:
        self.limits = limits
        self._entries: deque[tuple[str, str]] = deque(maxlen=limits.window)  # (action key, status)

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()

    def entries(self) -> list[list[str]]:
        """The window as ``[action hash, status]`` pairs, oldest first (for a checkpoint)."""
        return [[key, status] for key, status in self._entries]

    def restore(self, entries: list[list[str]]) -> None:
        """Refill the window from :meth:`entries` (a resumed episode keeps counting repeats)."""
        self._entries.clear()
        for item in entries[-self.limits.window:]:
            if isinstance(item, (list, tuple)) and len(item) == 2 and all(isinstance(v, str) for v in item):
                self._entries.append((item[0], item[1]))

    def _status(self, action: str, status: str | None) -> str:
        """`status`, or for None and REFUSED the status of the newest entry of `action` (``"?"`` when none)."""
        if status is not None and status != REFUSED:
            return status
        for key, seen in reversed(self._entries):
            if key == action:
                return seen
        return status or _UNKNOWN

    def repeats(self, tool: str, arguments: Mapping[str, Any] | None, status: str | None = None) -> int:
        """How many entries in the window have the same hash as this call (the call itself not included)."""
        action = action_key(tool, arguments)
        wanted = self._status(action, status)
        return sum(1 for key, seen in self._entries if key == action and seen == wanted)

    def check(self, tool: str, arguments: Mapping[str, Any] | None, status: str | None = None) -> RepeatVerdict:
        """The verdict on making this call now: ``ok``, ``warn``, ``refuse`` or ``stop`` (nothing is recorded)."""
        n = self.repeats(tool, arguments, status) + 1
        limits = self.limits
        verdict: RepeatVerdict = (
            "stop" if n >= limits.stop else "refuse" if n >= limits.refuse else "warn" if n >= limits.warn else "ok"
        )
        if verdict != "ok":
            log.info("repeat guard: %s called %d times among the last %d: %s", tool, n, limits.window, verdict)
        return verdict

    def record(self, tool: str, arguments: Mapping[str, Any] | None, status: str) -> None:
        """Add one entry: an executed call with its result's status, or a refused one with :data:`REFUSED`."""
        action = action_key(tool, arguments)
        self._entries.append((action, self._status(action, status)))

    def message(self, tool: str, verdict: RepeatVerdict, n: int | None = None) -> str:
        """One line for the prompt explaining a ``warn``, ``refuse`` or ``stop`` verdict."""
        times = f"{n} times" if n is not None else "repeatedly"
        window = self.limits.window
        if verdict == "warn":
            return (f"you have made the same {tool} call with the same result {times} among the last {window}; "
                    "it is not working, try something else")
        if verdict == "refuse":
            return (f"refused: the same {tool} call with the same result {times} among the last {window}; "
                    "it was not executed, make another plan")
        if verdict == "stop":
            return f"stopped: the same {tool} call {times} among the last {window}"
        return ""
