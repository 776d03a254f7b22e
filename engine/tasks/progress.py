"""What a routine (a task made of `run` steps, such as a daily) has done today, so a stopped run can be resumed.

A routine's progress is one small JSON file per task, ``<home>/<game>/progress/<task>.json``: the day it belongs
to and, for each called task that ended ok, its status, text and what it collected. It is written atomically after
every chore, so a run that is killed, times out or loses its device keeps what it finished. ``run TASK --resume``
skips the chores the file says were done today; a run without ``--resume`` starts the day's record afresh. A new
day (local calendar date) always starts afresh.

``chore_report`` turns a run's step log into the per-chore report a routine's result carries.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import tempfile
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger(__name__)


def today() -> str:
    return dt.date.today().isoformat()


class Progress:
    """The record of one routine on one day; every method is safe against a missing or broken file."""

    def __init__(self, folder: Path | None, task: str, resume: bool, day: Callable[[], str] = today) -> None:
        self.path = folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', task)}.json" if folder is not None else None
        self.day = day()
        self.done: dict[str, dict[str, Any]] = self._read() if resume else {}

    def _read(self) -> dict[str, dict[str, Any]]:
        if self.path is None or not self.path.is_file():
            return {}
        try:
            body = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.warning("ignoring the progress file %s: %s", self.path, exc)
            return {}
        if not isinstance(body, dict) or body.get("day") != self.day or not isinstance(body.get("done"), dict):
            return {}
        return {k: v for k, v in body["done"].items() if isinstance(v, dict)}

    def mark(self, chore: str, entry: dict[str, Any]) -> None:
        """Record `chore` as done today and write the file (atomically; a write failure is logged, not raised)."""
        self.done[chore] = {k: entry[k] for k in ("status", "why", "collected") if k in entry}
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".progress-")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"day": self.day, "done": self.done}, out, indent=1)
            os.replace(tmp, self.path)
        except OSError as exc:
            log.warning("cannot record progress in %s: %s", self.path, exc)


def chore_report(log_entries: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """The top-level `run` steps of a routine's log (one per chore) and a one-line summary of them."""
    chores = [e for e in log_entries if e.get("type") == "run" and "/" not in str(e.get("step"))]
    groups: dict[str, list[str]] = {}
    for e in chores:
        if e["outcome"] == "skipped":
            kind = "skipped"
        elif e["outcome"] == "failed":
            kind = "failed"
        elif e.get("nothing_to_collect"):
            kind = "nothing to collect"
        else:
            kind = "done"
        groups.setdefault(kind, []).append(e.get("task", "?"))
    total = sum(int(e.get("collected") or 0) for e in chores)
    parts = [f"{len(names)} {kind}" + (f" ({total} collected)" if kind == "done" else "")
             + (f": {', '.join(names)}" if kind != "done" else "") for kind, names in groups.items()]
    return chores, "; ".join(parts)
