"""Waiting for the screen to settle (engine.explore.effects.settle) on screens that never hold still."""

from __future__ import annotations

import numpy as np

from engine.explore.effects import ANIMATED, ANIMATED_NEW, LONGEST, QUIET, settle
from engine.explore.sketch import sketch


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


def sparks(base: np.ndarray, looks: list[int]):
    def look():
        looks[0] += 1
        frame = base.copy()
        x = 100 + 90 * (looks[0] % 5)
        frame[300:340, x:x + 40] = 255 - frame[300:340, x:x + 40]
        return frame
    return look


def test_a_page_whose_moving_cells_are_known_settles_as_fast_as_a_still_page_and_they_are_returned():
    """Issue 45: most taps of an explorer do nothing; on a page with sparks each waited ANIMATED (1.5 s) where a
    still page waits QUIET (0.5 s): 90 actions in 3.7 minutes on a generated game. The first look learns which cells
    move (after TRANSIENT); once they are known, changes inside them are stillness."""
    clock, base = Clock(), page()
    done = settle(sparks(base, [0]), sleep=clock.sleep, clock=clock.now)
    assert ANIMATED <= clock.t and done.moving is not None
    rows, cols = np.nonzero(done.moving)
    assert set(rows) == {300 // 80, 339 // 80} and min(cols) >= 100 // 80 and max(cols) <= (460 + 40) // 80
    clock.t = 0.0
    moving = done.moving
    done = settle(sparks(base, [0]), before=sketch(base), moving_of=lambda sk: moving, sleep=clock.sleep,
                  clock=clock.now)
    assert not done.timed_out and QUIET <= clock.t < QUIET + 0.5 < ANIMATED


def test_a_fade_to_a_page_that_differs_only_by_its_title_is_waited_out_not_taken_for_motion():
    """A cross-fade between two pages on one backdrop changes few cells (the title); those cells are not known to
    move, so the screen is not settled until the fade is over, and they are not returned as moving."""
    clock, a = Clock(), page()
    b = a.copy()
    b[0:60, 300:700] = 255 - b[0:60, 300:700]  # another title

    def look():
        mix = min(1.0, clock.t / 0.6)  # a 0.6 s fade from a to b
        return (a * (1 - mix) + b * mix).astype(np.uint8)

    done = settle(look, before=sketch(a), moving_of=lambda sk: np.zeros((9, 16), bool), sleep=clock.sleep,
                  clock=clock.now)
    assert np.array_equal(done.frame, b) and clock.t >= 0.6
    assert done.moving is None or not done.moving[0].any()


def test_a_screen_that_changes_wholesale_is_still_waited_out():
    """A page change in progress (most cells change) is no animation: the wait goes on until it holds still."""
    clock, frames = Clock(), [page(1), page(2), page(3), page(4)]

    def look():
        i = min(int(clock.t / 0.3), len(frames) - 1)  # a new screen every 0.3 s, then the last one stays
        return frames[i]

    done = settle(look, sleep=clock.sleep, clock=clock.now)
    assert not done.timed_out and np.array_equal(done.frame, frames[-1])
    assert clock.t >= 0.9


def test_a_slow_slide_between_two_pages_alike_leaves_no_cell_as_moving_but_a_ticking_timer_is():
    """Issue 45, seed 6: on a loaded machine a transition between two pages drawn on one backdrop outlasted TRANSIENT;
    the cells it changed last (the new title) were returned as moving, the atlas excused them, and four pages that
    differ only there were drafted as one. A cell that changed and then held is a transition's tail; a timer that
    ticks changes again after holding, and is motion."""
    clock, a = Clock(), page()
    b = a.copy()
    b[0:60, 300:700] = 255 - b[0:60, 300:700]  # another title, on the same backdrop

    def slide():
        shift = min(1.0, clock.t / 1.6)  # the new title slides in over 1.6 s, twice TRANSIENT
        frame = a.copy()
        edge = 700 - int(400 * shift)
        frame[0:60, edge:700] = b[0:60, edge:700]
        return frame

    done = settle(slide, before=sketch(a), sleep=clock.sleep, clock=clock.now, known=lambda sk: False)
    assert np.array_equal(done.frame, b) and not done.timed_out
    assert done.moving is None or not done.moving[0].any()

    clock.t = 0.0

    def ticking():
        frame = b.copy()
        if int(clock.t / 0.6) % 2:  # a timer at the bottom right that changes every 0.6 s
            frame[640:700, 1100:1260] = 255 - frame[640:700, 1100:1260]
        return frame

    done = settle(ticking, before=sketch(a), sleep=clock.sleep, clock=clock.now, known=lambda sk: False)
    assert done.moving is not None and done.moving[640 // 80:700 // 80 + 1, 1100 // 80:].any()
    assert not done.moving[0].any()


def test_a_look_with_the_same_pixels_as_the_one_before_is_not_sketched_or_placed_again():
    """On a still screen most looks of a settle are the same pixels; each was sketched and placed against every
    page's members again (0.2 s of an action's 1.2 s on a generated game of 42 pages). The same pixels give the
    same sketch, which the caller's answers are cached by; a changed frame is sketched anew."""
    clock, base, looks, asked = Clock(), page(), [0], []

    def look():
        looks[0] += 1
        frame = base.copy()  # a new array, the same pixels
        if looks[0] >= 4:
            frame[0:100, 0:160] = 255  # then something changes, and holds
        return frame

    def known(sk):
        asked.append(sk)
        return True

    out = settle(look, known=known, sleep=clock.sleep, clock=clock.now)
    assert out.frame is not None and looks[0] >= 6
    assert len({id(sk) for sk in asked}) == 2  # one sketch for the first pixels, one for the changed ones


def test_a_transport_that_drops_for_a_few_seconds_is_waited_out_and_one_that_stays_gone_ends_the_settle():
    """Under chaos the device's transport drops (the adb server shows it offline and reconnects): a generated game's
    explore ended at its second minute on five quick failures in a row. Failures count as the device gone only once
    they last GONE_AFTER seconds as well; a device that never comes back still ends the wait inside `longest`."""
    import pytest

    from engine.core.errors import DeviceError
    from engine.explore.effects import FAILURES_IN_A_ROW, GONE_AFTER

    clock, base, calls = Clock(), page(), [0]

    def flaky():  # offline for about three seconds, then back
        calls[0] += 1
        if clock.t < 3.0:
            raise DeviceError("device offline")
        return base

    done = settle(flaky, sleep=clock.sleep, clock=clock.now)
    assert done.frame is not None and calls[0] > FAILURES_IN_A_ROW

    clock.t, calls[0] = 0.0, 0

    def gone():
        calls[0] += 1
        raise DeviceError("device offline")

    with pytest.raises(DeviceError):
        settle(gone, sleep=clock.sleep, clock=clock.now)
    assert GONE_AFTER <= clock.t <= LONGEST and calls[0] >= FAILURES_IN_A_ROW


def test_the_sketch_returned_is_the_sketch_of_the_frame_returned_after_a_fade_s_last_faint_steps():
    """A fade whose last steps each change no cell beyond the tolerance: the frame returned is the last look, and so
    must its sketch be (it was the look the faint steps were compared with: the half-dimmed one). Generated game 4
    under chaos placed half-dimmed dialogs as new pages while their fully dimmed frames were recorded: the hub drafted
    five times, and replaying the recording learnt another atlas than the run had."""
    clock, base, looks = Clock(), page(), [0]
    steps = [1.0, 0.7, 0.5, 0.45, 0.42, 0.4]  # a dimming, then faint steps that no cell's tolerance sees

    def look():
        gain = steps[min(looks[0], len(steps) - 1)]
        looks[0] += 1
        return (base.astype(np.float32) * gain).astype(np.uint8)

    done = settle(look, sleep=clock.sleep, clock=clock.now)
    assert not done.timed_out
    again = sketch(done.frame)
    assert np.array_equal(done.sketch.colour, again.colour) and np.array_equal(done.sketch.thumbs, again.thumbs)
