"""Compiled checks of the observer: a page, popup or loading screen (``Target``) and checks combined from several
(``CombinedCheck``). Compiling happens once per graph in engine.observe.observer; matching is slicing and scoring only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from engine.core.results import Evidence
from verifiers.template import TemplateCheck

WEAK_CONFIDENCE = 0.6
"""Scale of the confidence of a page named on colour alone (only possible when no template exists for it)."""
CLOSEST_MISSES = 3
"""How many pages an unexplained frame's evidence names as its closest misses."""


class CombinedCheck:
    """Several checks as one: ``any`` hits when one alternative does (reporting the hit, else the best miss);
    ``all`` is a colour pre-filter confirmed by the template of the same button (stopping at the first miss)."""

    def __init__(self, name: str, checks: Sequence[Any], *, need_all: bool) -> None:
        self.name, self.need_all = name, need_all
        self.checks = tuple(sorted(checks, key=lambda c: c.cost))
        self.cost = max(c.cost for c in self.checks)
        self.channel = self.checks[-1].channel
        strengths = [c.strong for c in self.checks]
        self.strong = any(strengths) if need_all else all(strengths)

    def verify(self, frame: np.ndarray) -> Evidence:
        best = None
        for check in self.checks:
            evidence = check.verify(frame)
            if evidence.hit != self.need_all:  # a miss ends an all-of, a hit ends an any-of
                return evidence
            if self.need_all or best is None or evidence.score > best.score:
                best = evidence
        return best


@dataclass(eq=False)
class Target:
    """A page, popup or the loading screen with its compiled checks."""

    name: str
    kind: str
    checks: tuple
    strong: bool
    priority: int = 0
    pages: frozenset[str] | None = None

    def match(
        self, frame: np.ndarray, sink: list[Evidence] | None, latency: dict[str, float] | None = None
    ) -> tuple[bool, float, list[Evidence]]:
        found: list[Evidence] = []
        score = 1.0
        for check in self.checks:
            evidence = check.verify(frame)
            found.append(evidence)
            if latency is not None:
                latency[evidence.channel] = latency.get(evidence.channel, 0.0) + evidence.latency_ms
            if not evidence.hit:
                if sink is not None:
                    sink.extend(found)
                return False, 0.0, found
            score = min(score, evidence.score)
        if sink is not None:
            sink.extend(found)
        return True, score if self.strong else score * WEAK_CONFIDENCE, found


def closest_misses(misses: Sequence[tuple[Target, list[Evidence]]], count: int = CLOSEST_MISSES) -> list[Evidence]:
    """The best-scoring miss of each of the `count` pages that came closest, each named ``page/signature``.

    "Closest" is most signatures passed before the first miss, then the highest score of that miss: what a graph
    author needs to see why a frame of the page was not recognised (a colour 30 off, OCR reading "FLO0R 4").
    """
    # Target.match stops at its first miss, so a miss's evidence ends with the one signature that missed.
    ranked = sorted((m for m in misses if m[1]), key=lambda m: (-len(m[1]), -m[1][-1].score))
    return [replace(found[-1], signature=f"{target.name}/{found[-1].signature}") for target, found in ranked[:count]]


def template_means(target: Target) -> dict[str, tuple[float, float, float]]:
    """The mean colour of each textured template of a page, by signature name (how bright the page should be)."""
    means: dict[str, tuple[float, float, float]] = {}
    stack = list(target.checks)
    while stack:
        check = stack.pop()
        if isinstance(check, CombinedCheck):
            stack.extend(check.checks)
        elif isinstance(check, TemplateCheck) and not all(check.flat):
            means[check.name] = check.means[0]
    return means
