"""The verdict of one look against what the last action should have led to (engine.navigation.navigator)."""

from __future__ import annotations

from engine.core.results import Observation, Verdict


def diff(obs: Observation, expected: str | None, *, waiting: bool, blocking: bool) -> Verdict:
    """Compare an observation with the page expected after an action.

    Args:
        obs: what the observer saw.
        expected: the page the last action should lead to (None: no expectation).
        waiting: True while the hop's loading allowance has not run out, so an unrecognised frame still counts
            as loading rather than unknown.
        blocking: whether any popup in the observation blocks navigation.
    """
    if blocking:
        return Verdict.POPUP
    if obs.covered:
        return Verdict.COVERED  # something no popup names is over the page: not verified
    if obs.loading or obs.black_frame:
        return Verdict.LOADING
    if obs.page is None:
        return Verdict.LOADING if waiting else Verdict.UNKNOWN
    if expected is None or obs.page == expected:
        return Verdict.VERIFIED
    return Verdict.MISMATCH


def describe(obs: Observation) -> str:
    """One phrase for what an observation shows: ``on page_main with GET_ITEMS_1``."""
    covered = " under a dialog no popup names" if obs.covered else ""
    text = f"on {obs.page}{covered}" if obs.page else "on an unknown screen"
    return text + (f" with {', '.join(obs.popups)}" if obs.popups else "")
