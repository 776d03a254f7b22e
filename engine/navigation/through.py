"""Which frames show a page clean: one on which a declared link of the page was tapped and went through.

A page's clean frame is what the cover check compares later frames of the page with (the observer's reference,
engine.observe.cover) and what a learned popup's crop must not match (the learner's known frames). A dialog over a
page swallows the page's taps, so a frame is known clean when the next action was a link of its page and the next
look named where that link leads. "An action, then another page" is not enough: a crash, a restart of the game or
a search tap on a dialog also leads elsewhere from a frame that had a dialog over it, and a page whose signatures
give the cover check nothing to go on before it has a reference (OCR or colour only: no template brightness to
measure a dimming by) then got that covered frame as its reference, after which every frame with the same dialog
over the page looked clean (generated game 6, no key: 12 of 15 pages' frames the learner kept as clean showed a
dialog, and no dialog could be learned because its crop "fired on known pages").
"""

from __future__ import annotations

from typing import Callable


class Through:
    """The last hop taken: its source page, the pages its link leads to, and the action count right after it
    (`performed`: the count of actions performed so far, the navigator's actuator's)."""

    def __init__(self, performed: Callable[[], int]) -> None:
        self.performed = performed
        self.last: tuple[str | None, frozenset[str], int] = (None, frozenset(), -1)

    def tapped(self, source: str | None, to: tuple[str, ...]) -> None:
        """A link of `source` leading to `to` was just performed."""
        self.last = (source, frozenset(to), self.performed())

    def went(self, source: str | None, here: str | None) -> bool:
        """Whether the last action was a link of `source` and `here` is where it leads: the frame of `source` it was
        tapped on had nothing over it."""
        return source is not None and self.last[0] == source and here in self.last[1] and \
            self.last[2] == self.performed()
