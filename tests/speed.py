"""Speed assertions in tests/ (issue 49): each checks a measured time against its bound and, when SPEED_RECORD
names a file, appends what it measured there, so that scripts/timing-spread.py (and a flake hunt run with the
variable set) can report how much of each bound the runs used, idle and beside busy loops.

    from tests.speed import within
    within(took, RATIO * baseline, "health, no server (s)")

One JSON line per check: the test (pytest's PYTEST_CURRENT_TEST), the name given, the value, the bound and the kind
(at_most, at_least); timing-spread.py works out the share of the bound used. A line is written before the assertion,
so a failing check is recorded too."""

from __future__ import annotations

import json
import os

RECORD_ENV = "SPEED_RECORD"


def _record(what: str, value: float, bound: float, kind: str) -> None:
    path = os.environ.get(RECORD_ENV)
    if not path:
        return
    test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]
    line = json.dumps({"test": test, "what": what, "value": round(float(value), 6), "bound": round(float(bound), 6),
                       "kind": kind})
    # One short line per write with O_APPEND: xdist's workers append to the same file without mixing lines.
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def within(value: float, bound: float, what: str) -> None:
    """Assert `value` <= `bound` (a time, a CPU share, a ratio to a same-run baseline), recording both."""
    _record(what, value, bound, "at_most")
    assert value <= bound, f"{what}: {value:.4g} > bound {bound:.4g}"


def at_least(value: float, bound: float, what: str) -> None:
    """Assert `value` >= `bound` (a speed-up that must hold), recording both."""
    _record(what, value, bound, "at_least")
    assert value >= bound, f"{what}: {value:.4g} < bound {bound:.4g}"
