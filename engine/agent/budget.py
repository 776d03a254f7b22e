"""What an episode may still spend, and the one deadline its wall budget sets for everything it waits on.

The goal's budget (turns, tool calls, tokens, seconds) is checked before each model turn and each tool call; the
first that runs out stops the episode (``budget_*``, or ``false_claim`` right after a refuted final). The seconds
bound more than the loop: every model call gets at most the seconds left as its deadline (engine.llm cancels the
call there, however the server trickles), and every tool call and look is handed a ``BudgetEvent`` as its cancel
Event, which reads as set once the episode is cancelled or its wall budget is over, so a long goto or task stops
at its next checkpoint instead of running out its own, longer bound.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from engine.agent.checkpoint import Spend
from engine.core.errors import EpisodeEnded



class BudgetEvent(threading.Event):
    """Reads as set when `cancel` is set or `clock` has passed `deadline`: the cancel Event of the episode's calls.

    Tools and looks only ask ``is_set()`` (tenacity's stop_when_event_set and the run context's checkpoints), so
    the wall budget reaches them without a timer thread.
    """

    def __init__(self, cancel: threading.Event, deadline: float, clock: Callable[[], float]) -> None:
        super().__init__()
        self.cancel, self.deadline, self.clock = cancel, deadline, clock

    def is_set(self) -> bool:
        return super().is_set() or self.cancel.is_set() or self.clock() >= self.deadline

    @property
    def expired(self) -> bool:
        """Whether the wall budget (not a cancel) is what set it."""
        return not self.cancel.is_set() and self.clock() >= self.deadline


def check(spend: Spend, budget: Any, seconds_left: float, *, model: bool, cancel: threading.Event,
          after_false_claim: bool) -> None:
    """Raise Stop when the episode may not go on: cancelled, or a budget the next step needs has run out.

    Args:
        spend, budget: what was used and what the goal allows (engine.config.goals.Budget).
        seconds_left: wall seconds left of the budget.
        model: the next step is a model turn (turns and tokens count), else a tool call (tool calls count).
        after_false_claim: the last thing that happened was a final that did not hold.
    """
    if cancel.is_set():
        raise EpisodeEnded("cancelled", "cancelled")
    spent = None
    if seconds_left <= 0:
        spent = ("budget_time", f"{budget.seconds:g} s")
    elif not model and spend.tool_calls >= budget.tool_calls:
        spent = ("budget_tools", f"{budget.tool_calls} tool calls")
    elif model and spend.turns >= budget.turns:
        spent = ("budget_turns", f"{budget.turns} turns")
    elif model and spend.tokens >= budget.tokens:
        spent = ("budget_tokens", f"{budget.tokens} tokens")
    if spent is None:
        return
    reason, what = spent
    if after_false_claim:
        raise EpisodeEnded("false_claim", f"the budget ({what}) ran out after a final that did not hold")
    raise EpisodeEnded(reason, f"the budget of {what} ran out")


def left_words(spend: Spend, budget: Any, seconds_left: float) -> str:
    """The budget left, as the prompt says it."""
    return (f"this is turn {spend.turns} of {budget.turns}; {budget.tool_calls - spend.tool_calls} tool calls, "
            f"{seconds_left:.0f} s, {budget.tokens - spend.tokens} tokens")
