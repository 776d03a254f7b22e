"""ALAS's outcome read from what a run left: the driver's result line first, then ALAS's log, then the exit code.

TAKEOVER_TAIL is real ALAS output (its RichHandler console, captured from ALAS at d816310 running against the
simulator with its default screenshot method, whose uiautomator2 agent the simulated phone lacks): a device that
could not be opened ends in alas.py's "Request human takeover" line. CLICKS_TAIL is written in that format with the
messages of ALAS's device.py and alas.py; ``logger.error(e)`` writes ``<Class>: <message>`` (module/logger.py's
error_convert)."""

from __future__ import annotations

import pytest

from alas_wrapped.outcomes import read_outcome

TAKEOVER_TAIL = [
    "         ConnectionError: ('Connection aborted.', ConnectionResetError(104, 'Connection reset by peer'))",
    "CRITICAL 2026-11-25 00:26:04.856 │ Retry resolution_uiautomator2() failed",
    "CRITICAL 2026-11-25 00:26:04.857 │ Request human takeover",
    'ALAS_WRAPPED_RESULT {"ok": false, "task": "Reward", "exit": 1}',
]
CLICKS_TAIL = [
    "WARNING  2026-11-25 00:31:02.101 │ Too many click for a button: REWARD_GOTO_MAIN",
    "ERROR    2026-11-25 00:31:02.103 │ GameTooManyClickError: Too many click for a button: REWARD_GOTO_MAIN",
    "WARNING  2026-11-25 00:31:02.104 │ Game stuck, com.YoStarEN.AzurLane will be restarted in 10 seconds",
]


@pytest.mark.parametrize("verdict, lines, code, expected", [
    ({"ok": True}, [], 0, ("exited", None, None)),
    ({"ok": False, "exception": ["GameStuckError", "Exception"]}, CLICKS_TAIL, 1,
     ("game_stuck", "GameStuckError", "driver")),  # what left the task beats what the log says
    ({"ok": False, "exit": 1}, TAKEOVER_TAIL, 1, ("request_human_takeover", "RequestHumanTakeover", "log")),
    (None, CLICKS_TAIL, None, ("game_too_many_clicks", "GameTooManyClickError", "log")),  # killed before its line
    (None, ["INFO     │ Game page unknown"], 1, ("game_page_unknown", "GamePageUnknownError", "log")),
    ({"ok": False, "exit": 1}, ["Traceback ...", "ValueError: bad"], 1, ("alas_error", None, "exit_code")),
    ({"ok": False, "error": "cannot import ALAS"}, [], 4, ("worker_failed", None, "exit_code")),
])
def test_the_outcome_is_read_most_precise_first(verdict, lines, code, expected):
    outcome = read_outcome(verdict, lines, code)
    assert (outcome.status, outcome.exception, outcome.source) == expected


def test_every_alas_status_suggests_one_of_the_closed_set():
    from alas_wrapped.outcomes import FAILED, STATUSES, UNNAMED
    from engine.core.results import SUGGESTED_ACTIONS

    assert {s for _, s in [*STATUSES.values(), UNNAMED, FAILED]} <= set(SUGGESTED_ACTIONS)
