"""The effect of an action, seen from outside: wait until the screen stops changing, and keep the screens that came
and went by themselves on the way (loading screens).

A screen counts as settled when it has not changed for `quiet` seconds (longer for a screen never seen before, so a
slow loading screen is not taken for a page, and never while it is a known loading screen); a change of a few cells
(a ticking clock) only restarts the `quiet` wait, and is no loading screen; a screen that only ever changes that
little settles after ANIMATED seconds (it animates without end), ANIMATED_NEW for one never seen (a loading
screen's progress bar changes little too); the whole wait is
bounded by `longest`. Black frames and transient device errors are looked past, up to the same bound.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from engine.core.errors import BlackFrame, DeviceError
from engine.core.stuck import same_pixels
from engine.explore.sketch import SAME_PAGE, Sketch, cell_match, changed, similarity, sketch

log = logging.getLogger(__name__)

POLL = 0.15
QUIET = 0.5
QUIET_NEW = 1.6
TRANSIENT = 0.8
"""A screen that stayed this long and then changed by itself was a loading screen, not an animation frame."""
ANIMATED = 1.5
"""A screen whose changes since it appeared all stayed small (swaying art, particles, ticking timers: a few cells)
for this long has settled: it animates, and nothing else is coming. Without it a page that never holds still cost
the whole LONGEST wait per action (issue 45: 4 actions in 30 s on a generated game with particles). Once the cells
that move on a page are known (settle's `moving_of`), it settles after QUIET as a still one does: most taps do
nothing, and each cost 1.5 s on an animated page (issue 45: 1.7 s an action, 90 actions in 3.7 min)."""
ANIMATED_NEW = 3.0
"""The same for a screen never seen before: a loading screen's growing progress bar changes a few cells too, and it
must be given the time to go where it goes (a loading screen of a generated game was drafted as a page at 1.5 s).
It was 8 s: on a game with swaying art every new page cost 8-9 s (seed 101: 25 such waits, 135 s of 214), while
generated loading screens last 0.6-4 s; one that outlasts this wait is still told by what it does next (it changes
by itself: a transient on the next visit), as a still one that outlasts QUIET_NEW always was."""
LONGEST = 30.0
FAILURES_IN_A_ROW, GONE_AFTER = 5, 10.0
"""Screenshots failing in a row (each already retried by the device's policy), over at least GONE_AFTER seconds,
before the device counts as gone (within `longest` still). A dropped transport comes back in a few seconds once the
adb server reconnects: counted alone, five quick failures ended a generated game's explore under chaos at its second
minute ("device offline" while restarting the game, then a screenshot cut short)."""


@dataclass
class Settled:
    frame: np.ndarray | None
    sketch: Sketch | None
    transients: list[tuple[np.ndarray, Sketch]] = field(default_factory=list)
    moved: bool = False
    timed_out: bool = False
    moving: np.ndarray | None = None
    """(rows, cols) booleans: the sketch cells that changed by themselves while the screen last held (sparks, a
    swaying figure, a ticking timer): not what tells this screen from another (engine.explore.atlas)."""
    black: int = 0


def settle(look: Callable[[], np.ndarray], *, before: Sketch | None = None,
           known: Callable[[Sketch], bool] = lambda sk: True,
           loading: Callable[[Sketch], bool] = lambda sk: False,
           moving_of: Callable[[Sketch], np.ndarray | None] = lambda sk: None,
           sleep: Callable[[float], object] = time.sleep, clock: Callable[[], float] = time.monotonic,
           pace: float = 1.0, longest: float = LONGEST) -> Settled:
    """Look until the screen holds still; the last frame, and the loading screens seen on the way.

    `moving_of` names the cells known to move by themselves on the screen a sketch shows (None: not known): a change
    inside them is stillness, so a known animated page settles as fast as a still one, while a change anywhere else
    (a cross-fade to a page that differs only by its title) is waited out. Returned as `moving`: the cells seen
    changing from TRANSIENT after the screen last changed wholesale (a transition is over by then) that move by
    themselves, told by changing again: still changing when the settle ends (a swaying figure, sparks), changed
    again after holding (a ticking timer: see Motion), or known to move here. A cell that changed and then held is
    a transition's tail, not motion (issue 45: a slide still running 0.8 s after it began on a loaded machine gave
    its title's cells as moving, and four pages on one backdrop were drafted as one).
    `pace` scales every wait (a simulator that answers at once can be looked at faster than a phone)."""
    quiet, quiet_new, poll, transient = QUIET * pace, QUIET_NEW * pace, POLL * pace, TRANSIENT * pace
    animated, animated_new = max(ANIMATED, QUIET) * pace, max(ANIMATED_NEW, QUIET_NEW) * pace
    start = clock()
    out = Settled(None, None)
    held_since = still_since = start
    held_frame: np.ndarray | None = None
    held_sketch: Sketch | None = None
    failures, failing_since = 0, start
    motion = Motion(quiet)
    last: tuple[np.ndarray, Sketch] | None = None

    def seen_moving(cells: np.ndarray, now: float) -> None:  # cells known to move here
        if now - held_since >= transient:
            out.moving = cells if out.moving is None else out.moving | cells

    def done(out: Settled) -> Settled:
        out.moving = motion.moving(out.moving, clock())
        if last is not None and out.frame is last[0]:
            # The sketch of the frame returned (looks that changed no cell beyond the tolerance keep the one they
            # are compared with): the caller places the frame it records. Generated game 4 under chaos fades its
            # dialogs in: the dimming's last steps changed no cell, so a half-dimmed look was placed (a new page)
            # and the fully dimmed one recorded (a dialog over the hub, as a replay of the recording placed it):
            # the hub drafted five times, and no replay of a run showed what the run had learnt.
            out.sketch = last[1]
        return out

    while True:
        now = clock()
        try:
            frame = look()
        except BlackFrame:
            out.black += 1
            frame = None
        except DeviceError as exc:
            failures, failing_since = failures + 1, failing_since if failures else now
            log.debug("screenshot failed while settling: %s", exc)
            if failures >= FAILURES_IN_A_ROW and now - failing_since >= GONE_AFTER:
                raise
            frame = None
        else:
            failures = 0
        if frame is not None:
            # The same pixels as the look before: the same sketch (and the caller's answers about it, cached by
            # sketch): on a still screen most looks are, and each cost a sketch and a look over every page's members
            # (issue 45: 0.2 s of an action's 1.2 s on a game of 42 pages).
            sk = last[1] if last is not None and same_pixels(last[0], frame) else sketch(frame)
            last = (frame, sk)
            cells = None if out.sketch is None else ~cell_match(sk, out.sketch)
            if cells is not None and cells.any():
                excused = moving_of(sk)
                if excused is not None and excused.shape == cells.shape and not (cells & ~excused).any():
                    seen_moving(cells, now)  # only cells known to move here changed: as still as a still screen
                    out.frame, out.sketch, cells = frame, sk, None
                    motion.look(None, now)
            if out.sketch is None or cells is not None and cells.any():
                # A few cells changed (a clock ticking, a counter, a blinking badge): still the same screen. It
                # is no loading screen that came and went, and it does not start the wait for a new screen again
                # (a page whose clock ticks faster than that wait would never settle); only `quiet` of stillness.
                small = held_sketch is not None and similarity(sk, held_sketch) >= SAME_PAGE
                if not small and held_sketch is not None and held_frame is not None \
                        and now - held_since >= transient and (before is None or changed(held_sketch, before)):
                    out.transients.append((held_frame, held_sketch))
                if before is None or changed(sk, before):
                    out.moved = True
                out.frame, out.sketch, still_since = frame, sk, now
                if not small:
                    held_frame, held_sketch, held_since = frame, sk, now
                    out.moving = None
                    motion = Motion(quiet, since=now + transient)
                else:
                    motion.look(cells, now)
                    if now - held_since >= (animated if known(sk) else animated_new) and not loading(sk):
                        return done(out)  # only small changes since it appeared: an animated screen, settled
            else:
                out.frame = frame
                motion.look(None, now)
                wait = quiet if known(sk) else quiet_new
                if now - held_since >= wait and now - still_since >= quiet and not loading(sk):
                    return done(out)
        if now - start >= longest:
            out.timed_out = True
            return done(out)
        sleep(poll)


class Motion:
    """Which cells of a held screen move by themselves, from the small changes seen while it settles.

    A cell moves by itself when it changes again: it is still changing at the end (within `quiet` of it: a swaying
    figure, sparks, a spinner), or it changed once more after holding for `quiet` and two looks at least (a timer
    that ticks each second). A cell that changed and then held is the tail of a transition (a slide or a fade that
    outlasted TRANSIENT on a loaded machine), which excusing would merge two pages that differ in just those cells.
    Changes before `since` (TRANSIENT after the screen last changed wholesale) count only as the first of two."""

    def __init__(self, quiet: float, since: float = float("-inf")) -> None:
        self.quiet, self.since = quiet, since
        self.last: np.ndarray | None = None  # when each cell last changed (-inf: never)
        self.held: np.ndarray | None = None  # looks each cell has held since
        self.again: np.ndarray | None = None  # cells that changed after holding

    def look(self, cells: np.ndarray | None, now: float) -> None:
        """One look: `cells` changed since the last change (None: nothing outside the cells known to move)."""
        if cells is None:
            if self.held is not None:
                self.held += 1
            return
        if self.last is None or self.last.shape != cells.shape:
            self.last = np.full(cells.shape, -np.inf)
            self.held = np.zeros(cells.shape, int)
            self.again = np.zeros(cells.shape, bool)
        if now >= self.since:
            self.again |= cells & np.isfinite(self.last) & (now - self.last >= self.quiet) & (self.held >= 2)
        self.held += 1
        self.held[cells] = 0
        self.last[cells] = now

    def moving(self, known: np.ndarray | None, now: float) -> np.ndarray | None:
        """The cells that move by themselves, with `known` (changes only inside cells known to move), or None."""
        if self.last is None:
            return known
        found = self.again | ((self.last >= self.since) & (now - self.last <= self.quiet))
        if known is not None and known.shape == found.shape:
            found = found | known
        return found if found.any() else None
