"""How an ALAS task ended, as a short status word: ALAS's own exception classes, read from what its run left behind.

The classes are those of ALAS's ``module/exception.py`` (at d816310; ``TaskEnd`` lives in module/config/config.py
and means the task ended well). ``AzurLaneAutoScript.run`` in its alas.py catches them: GameNotRunningError,
GameStuckError, GameTooManyClickError and GameBugError make it log, schedule a ``Restart`` and return False;
GamePageUnknownError (when the server is up), ScriptError, RequestHumanTakeover and anything else make it log and
``exit(1)``. The class is read, most precise first, from:

1. the driver's result line (it sees the exception leave the task's function, before ALAS's run catches it);
2. ALAS's log: ``logger.error(e)`` writes ``<Class>: <message>`` (its ``error_convert``), ``logger.exception``
   ends with the class's name, and alas.py's fixed lines ("Request human takeover", "Game page unknown");
3. the exit code (1: ALAS ended the task with an error it did not name).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

STATUSES: dict[str, tuple[str, str]] = {
    "GameStuckError": ("game_stuck", "restart_app"),
    "GameTooManyClickError": ("game_too_many_clicks", "restart_app"),
    "GameNotRunningError": ("game_not_running", "restart_app"),
    "GameBugError": ("game_bug", "restart_app"),
    "GamePageUnknownError": ("game_page_unknown", "human"),  # ALAS: server maintenance or a broken network
    "EmulatorNotRunningError": ("emulator_not_running", "reconnect"),
    "HardNotSatisfied": ("hard_not_satisfied", "human"),  # a RequestHumanTakeover: hard mode's requirements
    "RequestHumanTakeover": ("request_human_takeover", "human"),
    "ScriptError": ("script_error", "human"),
    "ScriptEnd": ("script_end", "human"),
    "CampaignEnd": ("campaign_end", "human"),
    "CampaignNameError": ("campaign_name_error", "human"),
    "OilExhausted": ("oil_exhausted", "human"),
    "OilMaxed": ("oil_maxed", "human"),
    "MapDetectionError": ("map_detection_error", "human"),
    "MapWalkError": ("map_walk_error", "human"),
    "MapEnemyMoved": ("map_enemy_moved", "human"),
}
"""ALAS's exception class -> (status word, suggested action). Subclasses come before their bases."""
UNNAMED = ("alas_error", "human")
"""ALAS ended the task with exit 1 and no class of its own (a bug, or an error of a package it uses)."""
FAILED = ("worker_failed", "human")
"""The worker ended another way (the driver could not start ALAS, or a signal ended it)."""
LOG_LINES = {
    "Request human takeover": "RequestHumanTakeover",
    "Game page unknown": "GamePageUnknownError",
    "An error has occurred in Azur Lane game client": "GameBugError",
    "Game stuck, ": "GameStuckError",
}
"""alas.py's own lines in run() and its config/device properties, and the class each stands for."""
_CLASS = re.compile(r"\b(" + "|".join(STATUSES) + r")\b")


@dataclass(frozen=True)
class AlasOutcome:
    status: str
    """``exited`` when ALAS says the task succeeded, else a word of STATUSES, alas_error or worker_failed."""
    suggested: str | None = None
    exception: str | None = None
    """ALAS's exception class, when one was read."""
    source: str | None = None
    """Where the class was read: driver, log or exit_code."""

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "exception": self.exception, "source": self.source}


def read_outcome(verdict: dict[str, Any] | None, lines: list[str], exit_code: int | None) -> AlasOutcome:
    """The outcome of one finished driver run: its result line (`verdict`), its output `lines`, its exit code."""
    if exit_code == 0 and verdict is not None and verdict.get("ok") is True:
        return AlasOutcome("exited")
    caught = verdict.get("exception") if verdict is not None else None
    if isinstance(caught, list):  # the class and its bases, most derived first
        name = next((c for c in caught if c in STATUSES), None)
        if name is not None:
            return _named(name, "driver")
    name = _from_log(lines)
    if name is not None:
        return _named(name, "log")
    status, suggested = UNNAMED if exit_code == 1 else FAILED
    return AlasOutcome(status, suggested, None, "exit_code")


def _named(name: str, source: str) -> AlasOutcome:
    status, suggested = STATUSES[name]
    return AlasOutcome(status, suggested, name, source)


def _from_log(lines: list[str]) -> str | None:
    """The last ALAS exception class its log names, else the class of the last of alas.py's own fixed lines."""
    for line in reversed(lines):
        found = _CLASS.findall(line)
        if found:
            return found[-1]
    for line in reversed(lines):
        for text, name in LOG_LINES.items():
            if text in line:
                return name
    return None
