"""The episode's wall budget reaches the tools it waits on, and its result stays small whatever it did."""

from __future__ import annotations

import json
import threading
import time

from engine.agent.budget import BudgetEvent, check
from engine.agent.checkpoint import EpisodeState, Spend
from engine.agent.outcome import MAX_CALLS_SHOWN, MAX_TEXT_CHARS, episode_result
from engine.config.goals import Budget, Goal
from engine.core.bounded import Bounded
from engine.core.errors import EpisodeEnded
from tests.engine.sim.conftest import FakeClock
from tests.speed import within


def test_the_budget_event_stops_a_bounded_call_at_the_episodes_deadline():
    """A tool's own bound (here 60 s) gives way to the episode's: the call answers when the budget ends."""
    clock = FakeClock()
    cancel = threading.Event()
    event = BudgetEvent(cancel, deadline=clock() + 2.0, clock=clock)
    assert not event.is_set()
    stopped = threading.Event()

    def work(stop: threading.Event, deadline: float) -> str:
        clock.advance(2.5)  # the work outlives the episode's budget...
        if stop.wait(30):  # ...and would run on until its own bound, were it not told to stop
            stopped.set()
        return "done"

    began = time.monotonic()
    answer = Bounded(clock).run("alas_goto", work, deadline=clock() + 60.0, cancel=event)
    assert getattr(answer, "cancelled", False) and event.expired
    assert stopped.wait(5)
    within(time.monotonic() - began, 5, "bounded call stopped by the budget, wall (s)")  # upper bound, far from 30 s
    cancel.set()
    assert event.is_set() and not event.expired  # a cancel is told apart from the budget's end


def test_checks_say_which_budget_ran_out():
    budget = Budget(turns=2, tool_calls=3, seconds=10, tokens=100)
    for spend, model, left, reason in [(Spend(turns=2), True, 5, "budget_turns"), (Spend(tool_calls=3), False, 5,
                                       "budget_tools"), (Spend(tokens=100), True, 5, "budget_tokens"),
                                       (Spend(), True, 0, "budget_time")]:
        try:
            check(spend, budget, left, model=model, cancel=threading.Event(), after_false_claim=False)
        except EpisodeEnded as stop:
            assert stop.reason == reason
        else:
            raise AssertionError(reason)
    check(Spend(turns=2), budget, 5, model=False, cancel=threading.Event(), after_false_claim=False)


def test_the_result_stays_small_and_says_how_many_calls_there_were():
    goal = Goal(name="g", description="d", success=[{"page": "page_main"}])
    state = EpisodeState(episode="e", goal=goal.model_dump(mode="json"))
    state.calls = [{"tool": "adb_tap", "arguments": {"x": i, "note": "n" * 5000}, "ok": True, "status": "ok",
                    "turn": i} for i in range(300)]
    result = episode_result(goal, state, EpisodeEnded("blocked", "x" * 100_000, reasons=["r" * 9000] * 50), None, None, None)
    assert len(result.data["calls"]) == MAX_CALLS_SHOWN and result.data["calls_total"] == 300
    assert result.data["calls"][-1]["turn"] == 299 and len(result.data["reasons"]) == MAX_CALLS_SHOWN
    assert len(result.text) < MAX_TEXT_CHARS + 200
    assert len(json.dumps(result.to_dict())) < 40_000
