"""The belief: which page the engine thinks the game shows, held as a `transitions` state machine.

States are the graph's pages plus the unknown page; triggers are the links (``link_<destination>``, one trigger
per destination, valid from every page that links there). The belief only moves when the observer has confirmed
a page: ``arrive`` takes a verified link, ``relocalise`` jumps to whatever was seen. Observation corrects the
belief, never the other way round.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from transitions import Machine, MachineError

from engine.schema import Graph


def trigger_name(destination: str) -> str:
    return f"link_{destination}"


@dataclass
class Belief:
    """What the engine believes about the game, and how sure it is.

    `state` is owned by the transitions Machine (it is the believed page).
    """

    believed_task: str | None = None
    last_action_success: bool | None = None
    screenshot_verified: bool = False
    confidence: float = 0.0
    verified_at: float | None = None
    state: str = ""

    @property
    def believed_page(self) -> str:
        return self.state

    def to_dict(self, now: float | None = None) -> dict[str, Any]:
        age = None if self.verified_at is None or now is None else round(now - self.verified_at, 3)
        return {
            "believed_page": self.state,
            "believed_task": self.believed_task,
            "last_action_success": self.last_action_success,
            "screenshot_verified": self.screenshot_verified,
            "confidence": round(self.confidence, 4),
            "verified_age_s": age,
        }


class BeliefMachine:
    """A transitions Machine compiled from a graph, driving a Belief."""

    def __init__(self, graph: Graph, clock: Callable[[], float] = time.monotonic) -> None:
        self.graph = graph
        self.clock = clock
        self.unknown = graph.unknown_page
        states = list(dict.fromkeys([*graph.page_names, self.unknown]))
        self.belief = Belief()
        self.machine = Machine(
            model=self.belief,
            states=states,
            initial=self.unknown,
            auto_transitions=False,
            ignore_invalid_triggers=False,
        )
        for page in graph.pages:
            for link in page.links:
                self.machine.add_transition(trigger_name(link.to), source=page.name, dest=link.to)

    @property
    def page(self) -> str:
        return self.belief.state

    def is_stale(self, max_age: float) -> bool:
        """True when the belief is unknown or was last verified more than `max_age` seconds ago."""
        b = self.belief
        return b.state == self.unknown or b.verified_at is None or self.clock() - b.verified_at > max_age

    def can_take(self, destination: str) -> bool:
        return bool(self.machine.get_transitions(trigger=trigger_name(destination), source=self.belief.state))

    def arrive(self, destination: str, confidence: float) -> None:
        """The observer verified `destination` after taking its link from the believed page."""
        try:
            self.belief.trigger(trigger_name(destination))
        except (MachineError, AttributeError):
            # The link was not from the believed page (the belief was wrong): what was seen wins.
            self.machine.set_state(destination)
        self._verified(confidence)

    def relocalise(self, page: str | None, confidence: float) -> None:
        """Move the belief to what was observed (None = the unknown page)."""
        self.machine.set_state(page or self.unknown)
        if page is None:
            self.belief.screenshot_verified = False
            self.belief.confidence = confidence
        else:
            self._verified(confidence)

    def mark_action(self, success: bool) -> None:
        self.belief.last_action_success = success

    def _verified(self, confidence: float) -> None:
        self.belief.screenshot_verified = True
        self.belief.confidence = confidence
        self.belief.verified_at = self.clock()
