"""Fixtures of the agent's tests (the local Gemini server is tests/conftest.py's scripted_gemini)."""

from __future__ import annotations

import pytest


@pytest.fixture
def no_wait():
    """A sleep that records the pauses asked for and returns at once."""
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)

    sleep.waits = waits  # type: ignore[attr-defined]
    return sleep
