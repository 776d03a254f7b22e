"""When a task is due next, from its schedule entry (engine.config.schedule) and what its last run said.

Times are epoch seconds (the scheduler's clock, virtual in tests). Server times of day are turned into instants in
the server's zone with zoneinfo, so a zone with daylight saving time gets its reset at the right instant on both
sides of a change (a reset time that does not exist that day, inside a spring-forward gap, moves later by the gap;
one that exists twice is its first showing).
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta, tzinfo

from engine.config.schedule import Entry, Retry, Schedule

_CLOCK = re.compile(r"(?<![\d:])(?:(\d{1,3})\s*:\s*)?(\d{1,2})\s*:\s*(\d{2})(?![\d:])")


def duration_s(value: object) -> float | None:
    """Seconds from a number, or from a text read by OCR holding one or more clock times (``3:42:10``,
    ``42:10``; several running timers read at once: the soonest); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if math.isfinite(value) and value >= 0 else None
    if not isinstance(value, str) or len(value) > 2000:
        return None
    text = value.replace("O", "0").replace("o", "0")
    found = [int(h or 0) * 3600 + int(m) * 60 + int(s) for h, m, s in _CLOCK.findall(text)
             if int(m) < 60 and int(s) < 60]
    if found:
        return float(min(found))
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def next_reset(now: float, times: tuple[str, ...] | list[str], zone: tzinfo) -> float:
    """The first instant after `now` at which the server's clock shows one of `times` (HH:MM)."""
    return min(t for t in _resets_near(now, times, zone, (0, 1, 2)) if t > now)


def last_reset(now: float, times: tuple[str, ...] | list[str], zone: tzinfo) -> float:
    """The last instant at or before `now` at which the server's clock showed one of `times`."""
    return max(t for t in _resets_near(now, times, zone, (0, -1, -2)) if t <= now)


def _resets_near(now: float, times: tuple[str, ...] | list[str], zone: tzinfo, days: tuple[int, ...]):
    """The instants of `times` on the server's dates `days` away from `now`'s (two days cover any offset)."""
    local = datetime.fromtimestamp(now, zone)
    for day in days:
        date = (local + timedelta(days=day)).date()
        for text in times:
            hour, minute = (int(p) for p in text.split(":"))
            yield _instant(date.year, date.month, date.day, hour, minute, zone)


def _instant(year: int, month: int, day: int, hour: int, minute: int, zone: tzinfo) -> float:
    # fold=0: a wall time shown twice (autumn) is its first showing; one never shown (a spring-forward gap) is
    # read with the offset before the change, so it lands the gap's length later (PEP 495)
    return datetime(year, month, day, hour, minute, tzinfo=zone, fold=0).timestamp()


def after_success(entry: Entry, schedule: Schedule, now: float, values: dict | None = None) -> tuple[float, str]:
    """(when the task is due next after a verified run at `now`, which rule said so)."""
    candidates: list[tuple[float, str]] = []
    reported = duration_s((values or {}).get(entry.due.reported)) if entry.due.reported else None
    if reported is not None:
        candidates.append((now + max(reported, 1.0), f"reported {entry.due.reported}"))
    elif entry.due.every is not None:
        candidates.append((now + entry.due.every, "every"))
    if entry.due.reset:
        times = tuple(entry.due.reset) if isinstance(entry.due.reset, list) else schedule.reset_times
        candidates.append((next_reset(now, times, schedule.zone), "reset"))
    if not candidates:  # reported only, and the run read nothing: the next reset
        candidates.append((next_reset(now, schedule.reset_times, schedule.zone), "reset (nothing reported)"))
    return min(candidates)


def after_failure(rules: Retry, failures: int, now: float) -> tuple[float, str]:
    """(when to try again after the `failures`-th failure in a row, what to do first): ``retry``, ``restart``
    (restart the game, then retry) or ``put_off`` (the task waits put_off_s; the count starts again)."""
    if failures >= rules.give_up_after:
        return now + rules.put_off_s, "put_off"
    delay = min(rules.backoff_s * 2 ** (failures - 1), rules.max_backoff_s)
    return now + delay, "restart" if failures >= rules.restart_after else "retry"
