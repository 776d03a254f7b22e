"""Waiting for the screen to settle (engine.explore.effects.settle) on screens that never hold still."""

from __future__ import annotations

import numpy as np

from engine.explore.effects import ANIMATED, ANIMATED_NEW, LONGEST, settle


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


def page(seed: int = 3) -> np.ndarray:
    """A page: a flat backdrop of its own colour with a few blocks on it."""
    rng = np.random.default_rng(seed)
    frame = np.full((720, 1280, 3), rng.integers(20, 235, 3), dtype=np.uint8)
    for _ in range(6):
        x, y = int(rng.integers(0, 1100)), int(rng.integers(0, 600))
        frame[y:y + 100, x:x + 160] = rng.integers(0, 255, 3)
    return frame


def test_a_page_whose_sparks_never_stop_settles_after_the_animation_wait_not_the_longest():
    """Issue 45: a generated page with particles changed a few cells at every look, and each action waited the whole
    LONGEST bound (4 actions in 30 s)."""
    clock, base, looks = Clock(), page(), [0]

    def look():
        looks[0] += 1
        frame = base.copy()
        x = 100 + 90 * (looks[0] % 5)  # a spark moving over a few cells
        frame[300:340, x:x + 40] = 255 - frame[300:340, x:x + 40]  # a few cells change, the rest holds
        return frame

    done = settle(look, sleep=clock.sleep, clock=clock.now)  # a known page
    assert not done.timed_out and done.frame is not None
    assert ANIMATED <= clock.t < ANIMATED + 1.0 < LONGEST
    clock.t = 0.0  # never seen: a loading screen's bar changes little too, and is given longer to go somewhere
    done = settle(look, sleep=clock.sleep, clock=clock.now, known=lambda sk: False)
    assert not done.timed_out and ANIMATED_NEW <= clock.t < ANIMATED_NEW + 1.0 < LONGEST


def test_a_screen_that_changes_wholesale_is_still_waited_out():
    """A page change in progress (most cells change) is no animation: the wait goes on until it holds still."""
    clock, frames = Clock(), [page(1), page(2), page(3), page(4)]

    def look():
        i = min(int(clock.t / 0.3), len(frames) - 1)  # a new screen every 0.3 s, then the last one stays
        return frames[i]

    done = settle(look, sleep=clock.sleep, clock=clock.now)
    assert not done.timed_out and np.array_equal(done.frame, frames[-1])
    assert clock.t >= 0.9
