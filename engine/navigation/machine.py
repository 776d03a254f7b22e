"""The belief: which page the engine thinks the game shows, held as a `transitions` state machine.

States are the graph's pages plus the unknown page. Every change of the believed page is a trigger, so it runs
through transitions' order of work (prepare -> conditions -> before -> state change -> after):

    link_<page>   an arrival along a declared link: only from pages that link to <page>, and only when the
                  observation is confident enough (condition ``confident``); it says the graph held
    see_<page>    the belief jumps to whatever was observed, from anywhere: a mismatch, a re-localisation,
                  an arrival the graph did not predict, or (see_<unknown page>) an unrecognised screen

``prepare`` notes the page the belief leaves, the condition only answers yes or no, and ``after`` records the
verification (when, how sure, and whether it came by a link or a jump). The machine earns its place by refusing
what the graph does not declare: a ``link_`` trigger from a page without that link raises MachineError, so an
arrival is counted as the graph's only when the graph allows it. Observation corrects the belief, never the
other way round: ``arrive`` falls back to a ``see_`` jump when the link does not apply.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from transitions import EventData, Machine

from engine.config.schema import Graph

MIN_LINK_CONFIDENCE = 0.5
"""Least observation confidence for an arrival to count as taking a declared link (less is a jump)."""


def trigger_name(destination: str) -> str:
    return f"link_{destination}"


def jump_name(page: str) -> str:
    return f"see_{page}"


@dataclass
class Belief:
    """What the engine believes about the game, and how sure it is (the transitions model).

    `state` is owned by the transitions Machine (it is the believed page).
    """

    believed_task: str | None = None
    last_action_success: bool | None = None
    screenshot_verified: bool = False
    confidence: float = 0.0
    verified_at: float | None = None
    previous_page: str | None = None
    last_change: str | None = None
    """``link`` (an arrival the graph declared), ``jump`` (to whatever was seen) or ``lost`` (unknown screen)."""
    state: str = ""
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

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
            "previous_page": self.previous_page,
            "last_change": self.last_change,
        }

    # ---- transitions callbacks (send_event=True: each gets the EventData)

    def note_source(self, event: EventData) -> None:
        """prepare: remember the page the belief is about to leave."""
        self.previous_page = event.state.name

    @staticmethod
    def confident(event: EventData) -> bool:
        """condition (pure): the observation behind a link arrival is confident enough."""
        return float(event.kwargs.get("confidence", 0.0)) >= MIN_LINK_CONFIDENCE

    def verified(self, event: EventData) -> None:
        """after: the new page was seen on this frame."""
        self.screenshot_verified = True
        self.confidence = float(event.kwargs.get("confidence", 0.0))
        self.verified_at = self.clock()
        self.last_change = "link" if event.event.name.startswith("link_") else "jump"

    def lost(self, event: EventData) -> None:
        """after: the screen is not a known page."""
        self.screenshot_verified = False
        self.confidence = float(event.kwargs.get("confidence", 0.0))
        self.last_change = "lost"


class BeliefMachine:
    """A transitions Machine compiled from a graph, driving a Belief."""

    def __init__(self, graph: Graph, clock: Callable[[], float] = time.monotonic) -> None:
        self.graph = graph
        self.clock = clock
        self.unknown = graph.unknown_page
        pages = list(dict.fromkeys([*graph.page_names, self.unknown]))
        self.belief = Belief(clock=clock)
        self.machine = Machine(
            model=self.belief,
            states=pages,
            initial=self.unknown,
            auto_transitions=False,
            ignore_invalid_triggers=False,
            send_event=True,
        )
        for page in graph.pages:
            for link in page.links:
                self.machine.add_transition(trigger_name(link.to), source=page.name, dest=link.to,
                                            prepare="note_source", conditions="confident", after="verified")
        for page in pages:
            self.machine.add_transition(jump_name(page), source="*", dest=page, prepare="note_source",
                                        after="lost" if page == self.unknown else "verified")

    @property
    def page(self) -> str:
        return self.belief.state

    def is_stale(self, max_age: float) -> bool:
        """True when the belief is unknown or was last verified more than `max_age` seconds ago."""
        b = self.belief
        return b.state == self.unknown or b.verified_at is None or self.clock() - b.verified_at > max_age

    def can_take(self, destination: str) -> bool:
        """Whether the graph declares a link from the believed page to `destination`."""
        return bool(self.machine.get_transitions(trigger=trigger_name(destination), source=self.belief.state))

    def arrive(self, destination: str, confidence: float) -> None:
        """The observer verified `destination` after a link was taken: by that link if the graph declares it from
        the believed page and the observation is confident, else by a jump (what was seen wins)."""
        if self.can_take(destination) and self.belief.trigger(trigger_name(destination), confidence=confidence):
            return
        self.belief.trigger(jump_name(destination), confidence=confidence)

    def relocalise(self, page: str | None, confidence: float) -> None:
        """Move the belief to what was observed (None = the unknown page)."""
        self.belief.trigger(jump_name(page or self.unknown), confidence=confidence)

    def mark_action(self, success: bool) -> None:
        """Whether the last device action went through (not a change of page: no trigger)."""
        self.belief.last_action_success = success
