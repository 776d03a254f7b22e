"""The anti-repeat rule on frames (issue 45 point 3): one action that leaves the frame as it was is refused after
REPEAT_LIMIT times in a row, however the atlas places the screen; and the benchmark's own count of such runs reads
what the recording writes."""

from __future__ import annotations

import numpy as np

from benchmarks.test_bench_explore_generated import longest_repeat
from engine.explore.nodes import Here
from engine.explore.recording import Recording
from engine.explore.repeats import REPEAT_LIMIT, RepeatGuard

BACK = {"type": "key", "key": "back"}
TAP = {"type": "tap", "point": [354, 809]}


def test_an_action_that_leaves_one_frame_unchanged_is_refused_though_the_atlas_places_it_two_ways():
    """Generated game 6 under chaos: a dialog the atlas placed now as one popup, now as another, and the back key,
    which changed nothing, pressed 51 times on one frame: the places' count began again at every step."""
    guard = RepeatGuard()
    places = [Here("popup", 8, 0), Here("popup", 8, 1)]
    for i in range(REPEAT_LIMIT):
        here, there = places[i % 2], places[(i + 1) % 2]
        assert guard.allowed(here, BACK)
        assert not guard.saw(here, BACK, there)  # the places' rule sees a change every time
        guard.still(BACK, True, here)
    assert not any(guard.allowed(p, BACK) for p in places)  # refused on that frame, whichever place
    assert guard.allowed(places[0], TAP)
    assert any("key:back" in keys for _, keys in guard.swallowing())  # named in the review
    guard.still(TAP, False, places[0])  # the frame changed: the back key may be tried again
    assert guard.allowed(places[1], BACK)


def test_one_action_run_between_other_actions_or_a_changed_frame_starts_again():
    guard, here = RepeatGuard(), Here("page", 2)
    for action in (BACK, BACK, TAP, BACK, BACK, TAP):
        guard.still(action, True, here)
    assert guard.allowed(here, BACK) and guard.allowed(here, TAP)
    guard = RepeatGuard()
    for _ in range(REPEAT_LIMIT - 1):
        guard.still(TAP, True, here)
    guard.still(TAP, False, here)
    guard.still(TAP, True, here)
    assert guard.allowed(here, TAP)


def test_the_benchmarks_longest_repeat_counts_what_the_recording_writes_for_an_unchanged_screen(tmp_path):
    frame = np.zeros((72, 128, 3), np.uint8)
    recording = Recording(tmp_path)
    first = recording.add({"type": "screenshot"}, frame)
    for _ in range(5):
        recording.add(BACK, frame, same_as=first["frame"])
    recording.add(TAP, frame + 40)  # a new frame
    recording.add(TAP, frame + 40, same_as=f"frames/{recording.next_seq - 1:06d}.png")
    recording.close()
    assert longest_repeat(tmp_path) == 5
