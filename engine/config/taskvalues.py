"""Values read with OCR, as tasks compare them: numbers, ``N/M`` counters and ``HH:MM:SS`` durations.

``number_of`` turns a field's text into one number: a duration (``01:23:45``, ``23:45``) counts in seconds, a
counter ``N/M`` gives N (``part: current``, the default) or M (``part: total``), anything else its first number
(thousands separators ignored). ``compare`` applies eq, ne, lt, le, gt, ge to numbers, eq/ne to stripped text,
and ``matches`` searches a regular expression. It is the one comparison of OCR values: tasks' value conditions and
goals' field criteria (engine.config.goals) both use it.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable

OPS: dict[str, Callable[[float, float], bool]] = {
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
}
_DURATION = re.compile(r"(?<![\d:])(\d{1,3}):(\d{2})(?::(\d{2}))?(?![\d:])")
_NUMBERS = re.compile(r"(-?\d+(?:\.\d+)?)(?:\s*/\s*(-?\d+(?:\.\d+)?))?")


def number_of(text: str | None, part: str | None = None) -> float | None:
    """The number a field's text holds (see the module docstring); None when it holds none."""
    if text is None:
        return None
    if part is None:
        duration = _DURATION.search(text)
        if duration:
            h, m, s = duration.groups()
            return float(int(h) * 3600 + int(m) * 60 + int(s)) if s is not None else float(int(h) * 60 + int(m))
    match = _NUMBERS.search(text.replace(",", ""))
    if not match:
        return None
    number = match.group(1) if (part or "current") == "current" else match.group(2)
    return float(number) if number is not None else None


def compare(op: str, left: str | None, right: str | float | None, part: str | None = None) -> tuple[bool, str]:
    """`left` (a field's text) `op` `right` (a constant, or another field's text): (held, why in words)."""
    if left is None:
        return False, "could not be read"
    if op == "matches":
        held = re.search(str(right), left) is not None
        return held, f"{left!r} {'matches' if held else 'does not match'} {right!r}"
    if isinstance(right, str) and op in ("eq", "ne") and number_of(right, part) is None:
        held = (left.strip() == right.strip()) == (op == "eq")
        return held, f"{left!r} {'' if held else 'not '}{op} {right!r}"
    a = number_of(left, part)
    b = number_of(right, part) if isinstance(right, str) else (None if right is None else float(right))
    if a is None:
        return False, f"no {part or ''} number in {left!r}".replace("  ", " ")
    if b is None:
        return False, f"no {part or ''} number in {right!r}".replace("  ", " ")
    held = OPS[op](a, b)
    return held, f"{left!r} ({a:g}) {'' if held else 'not '}{op} {b:g}"
