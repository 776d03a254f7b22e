"""goto and state: the act / observe / diff / react loop that reconciles the belief with the screen.

Every step looks before it trusts: an action is followed by an observation with the hop's destination as the
expectation, the observation is diffed against it into a Verdict, and the verdict picks the reaction. (A goto
whose belief the last look verified, with nothing acted since, starts from that look: no screenshot.)

    VERIFIED      next hop (re-planned from the page actually seen)
    POPUP         dismiss the known popup by its own action (bounded), look again
    COVERED       something no popup names over a known page (engine.observe.cover): one more look, then the ladder
    LOADING       wait, look again (an unchanged frame right after a tap counts too)
    MISMATCH      relocalise the belief to the page seen, re-plan from there
    UNKNOWN       the ladder (back, home button, dismissal search, model, restart: engine.navigation.recovery)
    DEVICE_ERROR  a fault the device's own retries did not cure: probe its health; while it answers, back off
                  and look again (the run's bound is the only limit); a game that stopped drawing is restarted;
                  MAX_DEVICE_FAULTS on an unhealthy device end it

Time, cancellation and the record belong to the run's context (engine.core.context); actions go through the actuator
(engine.navigation.actuator). The public calls return an Outcome (engine.runtime.tools makes it a ToolResult), never
raise for a navigation failure; ``look``, ``navigate``, ``dismiss`` and ``conclude`` serve the task runner too.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import numpy as np

from engine.config.schema import Action, Graph, Link, TapAction
from engine.core.errors import (
    DeviceError,
    EngineError,
    Interrupted,
    NavigationError,
    Stuck,
    TransientDeviceError,
    UnknownPage,
)
from engine.core.results import Observation, Outcome, Verdict, closest
from engine.core.stuck import MOVING_S, STILL_LOOKS, UNKNOWN_S, Settling, moving, same_pixels
from engine.navigation.actuator import Actuator, Performed, action_key
from engine.navigation.machine import BeliefMachine
from engine.navigation.recovery import (explain, first_link, landed, misled_before, popup_stuck, recover, revive,
                                        swallowed, uncover)
from engine.navigation.routes import canonical_page, home_buttons
from engine.navigation.search import SHOWING_TRIES, Dialogs
from engine.navigation.through import Through
from engine.navigation.verdict import describe, diff

if TYPE_CHECKING:
    from engine.core.context import RunContext
    from engine.device.base import Device
    from engine.observe.observer import Observer

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_POPUP_DISMISSALS = 4
"""Times one popup may be dismissed, with no page seen clean in between, before it counts as blocking (a popup shown
again after a later hop went away first: a game with few popups shows one after many hops of one long goto)."""
SETTLE_S = 0.6
"""Least time a hop may take to show its effect before the frame is judged (debounce window)."""
POLL_S, MAX_POLL_S = 0.1, 0.5
"""First pause between looks while waiting for a hop to settle; it doubles up to MAX_POLL_S."""
STALE_S = 10.0
"""A belief older than this is re-observed before planning."""
CHANGE_S = 5.0
"""Longest a page change that keeps drawing (frames changing, nothing recognised) is waited out past an allowance."""
MAX_STEPS = 400
"""Hard cap on loop iterations of one navigation, beside its time bound."""
MAX_DEVICE_FAULTS = 3
"""Device faults in a row, each followed by a probe saying the device does not answer, before a navigation stops
with the probe's verdict. Faults on a device that answers are transient (only the run's bound limits them)."""


@dataclass
class _Course:
    """Where one navigation stands between two verdicts."""

    expected: str | None
    waiting_until: float = 0.0
    ladder: int = 0  # rungs of the recovery ladder already tried on this unknown screen
    faults: int = 0  # device faults in a row
    fault: TransientDeviceError | None = None  # the fault the last step ended with: the next verdict is DEVICE_ERROR
    swallowed: int = 0  # hops in a row that left the page as it was
    covered: int = 0  # reactions to a covered page since a page was last verified
    cover_rung: int = 0  # rungs of the ladder already tried on it
    unknown: bool = False  # the last verdict was an unknown screen
    moving_since: float | None = None  # the first look at an unknown screen waited on (MOVING_S)
    still: int = 0  # looks waited on a named page still changing before its hop (STILL_LOOKS)


class Navigator:
    """Drives one device through one server-resolved graph; holds the belief.

    Args:
        device: the phone (engine.device.base.Device).
        graph: the server-resolved graph.
        observer: an engine.observe.observer.Observer for that graph (its vision client, if any, is the last rung).
        actuator: performs declared actions (default: an Actuator over `device` and `graph`).
        clock: the belief's clock (when a page was last verified); search: the dismissal search's tries a showing.
    """

    def __init__(self, device: Device, graph: Graph, observer: Observer, *, actuator: Actuator | None = None,
                 clock: Callable[[], float] = time.monotonic, learner: Any = None,
                 search: int = SHOWING_TRIES) -> None:
        self.device, self.graph, self.observer = device, graph, observer
        self.actuator = actuator or Actuator(device, graph)
        self.machine = BeliefMachine(graph, clock)
        self.last_observation: Observation | None = None
        self.last_frame: np.ndarray | None = None
        self.moving = False  # the last look's frame changed over much of itself since a look that named no page
        self._last_expected: tuple[str | None, bool] | None = None
        self._verified: tuple[Observation, int | None] | None = None  # a verifying look, the action count then
        self._looked_at: int | None = None  # the action count at the last look
        self._clean: tuple[str, np.ndarray, int] | None = None  # a page's frame, clean if its link goes through
        self.through = Through(lambda: self.actuator.performed)  # the last hop (navigation.through)
        self.home_buttons, self.learner, self.dialogs = home_buttons(graph), learner, Dialogs(search)
        self.misled: dict[tuple[str, str, str], int] = {}  # hops per link that showed an unknown screen (recovery)

    belief = property(lambda self: self.machine.belief)

    # ------------------------------------------------------------------------------------------- public calls

    def state(self, ctx: RunContext) -> Outcome:
        """Look at the screen now and relocalise the belief to it."""

        def work() -> Outcome:
            believed = self.machine.page
            obs = self.look(ctx, expected=believed if believed != self.graph.unknown_page else None)
            self.machine.relocalise(obs.page, obs.confidence)
            self._verified = (obs, getattr(self.actuator, "performed", None)) if obs.page else None
            status = "popup_blocking" if obs.covered else "verified" if obs.page else "unknown_screen"
            return Outcome(obs.page is not None and not obs.covered, status, describe(obs), observation=obs)

        return self.conclude(ctx, work)

    def goto(self, page: str, ctx: RunContext) -> Outcome:
        """Navigate to `page` and prove it by observation (a `page_` prefix may be left out)."""
        page = canonical_page(self.graph, page)

        def work() -> Outcome:
            names = [p for p in self.graph.page_names if p != self.graph.unknown_page]
            if page not in names:
                raise UnknownPage(page, closest(page, names))
            obs = self.navigate(ctx, page)
            return Outcome(True, "verified", f"reached {page} in {ctx.hops} hop(s)", expected=page, observation=obs)

        return self.conclude(ctx, work)

    def conclude(self, ctx: RunContext, work: Callable[[], Outcome]) -> Outcome:
        """Run `work`; every way it can end (interrupted, a device fault, a navigation error) is an Outcome."""
        ctx.record("request", belief=self.belief.to_dict(ctx.clock()))
        expected = ctx.target if ctx.tool == "goto" else None
        try:
            return work()
        except Interrupted as exc:
            return Outcome(False, exc.status, str(exc), expected, self.last_observation, tool_success=False)
        except DeviceError as exc:
            return self._device_failure(ctx, exc)
        except EngineError as exc:
            extra = {"suggestions": exc.suggestions} if isinstance(exc, UnknownPage) else {}
            text = explain(self, ctx, exc, extra)  # an unknown dialog that kept appearing is named
            return Outcome(False, exc.status, text, expected, self.last_observation, extra=extra)

    # ------------------------------------------------------------------------------------------- the loop

    def navigate(self, ctx: RunContext, target: str) -> Observation:
        """The act / observe / diff / react loop. Returns the observation that verified `target`.

        Raises:
            NavigationError: no route, stuck, a popup that stays, an unknown screen recovery did not fix.
            DeviceError: a persistent fault, or MAX_DEVICE_FAULTS in a row on a device that fails its probe.
            Interrupted: cancelled, or past the run's deadline.
        """
        stale = self.machine.is_stale(STALE_S)
        course = _Course(expected=None if stale else self.machine.page)
        reused = self._still_true(ctx, stale)  # the last look still holds: it is not judged again
        try:
            obs = reused or self.look(ctx, expected=course.expected)
        except TransientDeviceError as exc:  # even the first look: a fault is a verdict, not the end
            obs, course.fault = Observation(None), exc
        for step in range(MAX_STEPS):
            ctx.checkpoint()
            verdict = Verdict.DEVICE_ERROR if course.fault else diff(
                obs, course.expected, waiting=ctx.clock() < course.waiting_until, blocking=self.is_blocking(obs))
            if step or reused is None:
                ctx.record("verdict", verdict=verdict.value, expected=course.expected, observed=obs.page,
                           popups=list(obs.popups))
            if verdict in (Verdict.VERIFIED, Verdict.MISMATCH):
                if not obs.popups:  # the popups dismissed so far went away: one shown after a later hop is new
                    ctx.detectors.dismissed.clear()
                self._believe(verdict, obs, course.expected)
                self._verified = (obs, getattr(self.actuator, "performed", None)) if obs.page else None
                course.ladder = course.cover_rung = course.covered = 0
                course.moving_since = None
                stuck = ctx.detectors.watchdog.step(obs.page)
                if obs.page == target and not (self.moving and course.still < STILL_LOOKS):  # (not mid-change)
                    return obs
                if stuck:
                    raise Stuck(stuck, page=obs.page)
            try:
                obs = self._react(ctx, verdict, obs, course, target)
                course.fault, course.faults = None, 0
            except TransientDeviceError as exc:
                if course.faults >= MAX_DEVICE_FAULTS:
                    raise  # _ride_out gave up on a device that fails its probe
                course.fault = exc
        raise NavigationError(f"gave up after {MAX_STEPS} steps without reaching {target}")

    def _still_true(self, ctx: RunContext, stale: bool) -> Observation | None:
        """The last look, if it verified the belief and nothing acted since (through the actuator, whoever asked)."""
        obs, count = self._verified or (None, None)
        if stale or obs is None or count is None or obs.page != self.machine.page or count != self.actuator.performed:
            return None
        ctx.record("reuse", page=obs.page, popups=list(obs.popups))
        return obs

    def _react(self, ctx: RunContext, verdict: Verdict, obs: Observation, course: _Course,
               target: str) -> Observation:
        """The reaction to one verdict; returns the next observation."""
        if verdict is Verdict.POPUP:
            self.dismiss(ctx, obs)
            return self.look(ctx, expected=course.expected)
        if verdict is Verdict.LOADING or (verdict is Verdict.COVERED and course.covered == 0 and
                                          ctx.clock() < course.waiting_until):
            course.covered += verdict is Verdict.COVERED  # (a hop still settling may dim the page a moment)
            ctx.wait(POLL_S)
            return self.look(ctx, expected=course.expected)
        if verdict is Verdict.COVERED:
            return uncover(self, ctx, obs, course, SETTLE_S)
        first, course.unknown = verdict is Verdict.UNKNOWN and not course.unknown, verdict is Verdict.UNKNOWN
        if first or course.unknown and self.moving:  # held still a moment? (a page change half drawn is no screen)
            course.moving_since = ctx.clock() if course.moving_since is None else course.moving_since
            if ctx.clock() - course.moving_since < MOVING_S:
                ctx.wait(POLL_S)
                return self.look(ctx, expected=course.expected)
        if verdict is Verdict.UNKNOWN:
            obs, course.ladder = recover(self, ctx, obs, course.ladder, SETTLE_S)
            course.expected = None
            return obs
        if verdict is Verdict.DEVICE_ERROR:
            return self._ride_out(ctx, course)
        if self.moving and course.still < STILL_LOOKS:  # a page named while it slides in: no tap, not reached yet
            course.still += 1
            ctx.wait(POLL_S)
            return self.look(ctx, expected=obs.page)
        course.still = 0
        return self._hop(ctx, obs, course, target)

    def _ride_out(self, ctx: RunContext, course: _Course) -> Observation:
        """After a device fault: probe the device; a device that answers had a passing fault, a black one is
        restarted (`revive`), one that does not answer gets MAX_DEVICE_FAULTS tries in a row. Back off, look again."""
        health = self.device.health()
        course.faults = 1 if getattr(health, "ok", False) else course.faults + 1
        ctx.record("device_fault", error=type(course.fault).__name__, message=str(course.fault),
                   health=getattr(health, "status", None), in_a_row=course.faults)
        if revive(self, ctx, health, course.faults):  # the game stopped drawing: restarted
            course.faults = 0
        elif course.faults >= MAX_DEVICE_FAULTS:
            course.fault.health = health  # the verdict: no need to probe a dead device twice
            raise course.fault
        ctx.wait(min(POLL_S * 2 ** course.faults, MAX_POLL_S))
        course.expected = None
        return self.look(ctx, expected=None)

    def _hop(self, ctx: RunContext, obs: Observation, course: _Course, target: str) -> Observation:
        """From a verified page, take the next link of the route and wait for its effect."""
        link = first_link(self, ctx, obs.page, target)
        if link is None:  # restarted out of a page with no way there (recovery.first_link)
            course.expected = None
            return self.look(ctx, expected=None)
        source = obs.page
        if self._debounce(ctx, link):
            course.expected = source
            return self.look(ctx, expected=source)
        course.expected = link.expected_page
        settings = self.graph.settings(self.graph.page(course.expected), link)
        course.waiting_until = ctx.clock() + max(SETTLE_S, settings.loading or 0.0)
        self._take(ctx, link, obs)
        after = self._settle(ctx, course.expected, source, course.waiting_until, misled_before(self, source, link))
        if landed(self, ctx, source, link, after):
            course.waiting_until = ctx.clock()  # a screen nobody names, not a page still loading: the ladder next
        return swallowed(self, ctx, course, after, source, SETTLE_S)

    def _believe(self, verdict: Verdict, obs: Observation, expected: str | None) -> None:
        """A known page was seen: what was seen wins over what was believed."""
        if verdict is Verdict.MISMATCH:
            log.info("expected %s, observed %s: relocalising", expected, obs.page)
            self.machine.relocalise(obs.page, obs.confidence)
        elif expected is not None and self.machine.page != obs.page:
            self.machine.arrive(obs.page, obs.confidence)
        else:
            self.machine.relocalise(obs.page, obs.confidence)

    def _settle(self, ctx: RunContext, expected: str, source: str, until: float, misled: bool) -> Observation:
        """Look until the hop shows its effect or its allowance runs out (engine.core.stuck.Settling: a change still
        drawing is waited out up to CHANGE_S more; after a link that `misled` before, an unknown screen seen for
        UNKNOWN_S ends it). Looks are `near` (the expected page, its neighbours, popups), the last one scans all, and
        so does one every UNKNOWN_S while nothing near is named: a link that leads elsewhere than the graph says (a
        draft's mistake, a screen the game puts on the way) lands on a page the graph knows but not near, which was
        looked at as nothing for the whole allowance (generated game 1's draft: 13 s of a 15 s allowance)."""
        scanned = [ctx.clock()]

        def look() -> tuple[Observation, bool]:
            before = self.last_frame
            obs = self.look(ctx, expected=expected, near=True)
            moved = before is None or self.last_frame is None or not same_pixels(before, self.last_frame)
            if obs.page is None and not (obs.popups or obs.loading or obs.black_frame) \
                    and (ctx.clock() - scanned[0] >= UNKNOWN_S or settling.named not in (None, expected)):
                # (a page a scan named is looked for again by a scan: Settling ends on two looks naming it)
                scanned[0] = ctx.clock()
                obs = self.look(ctx, expected=expected)
            return obs, moved

        settling = Settling(source, unknown_s=UNKNOWN_S if misled else None, expected=expected)
        obs = settling.wait(ctx, look, within=max(0.0, until - ctx.clock()), first=POLL_S, most=MAX_POLL_S,
                            change_s=CHANGE_S)
        if obs.page is None and not obs.popups and not obs.loading:
            obs = self.look(ctx, expected=expected)
        return obs

    def is_blocking(self, obs: Observation) -> bool:  # does a popup block navigation?
        return any(self.graph.popup(name).blocking for name in obs.popups)

    def _take(self, ctx: RunContext, link: Link, obs: Observation) -> None:
        ctx.hops += 1
        key, detectors = action_key(link.action), ctx.detectors
        reason = detectors.hop(key, obs.page, link.to)
        if reason:
            raise Stuck(reason, page=obs.page)
        ctx.record("action", hop=ctx.hops, source=obs.page, to=link.to, action=link.action.model_dump())
        self.act(ctx, link.action, obs)
        self.through.tapped(obs.page, (link.to, link.expected_page))
        detectors.last_tap[key] = ctx.clock()

    def _debounce(self, ctx: RunContext, link: Link) -> bool:
        """Do not tap the same button again before its effect had time to show. True when we waited."""
        remaining = ctx.detectors.too_soon(action_key(link.action), ctx.clock(), SETTLE_S)
        if remaining > 0:
            ctx.wait(remaining)
        return remaining > 0

    # ------------------------------------------------------------------------------------------- reactions

    def dismiss(self, ctx: RunContext, obs: Observation) -> None:
        """Dismiss the most urgent popup of `obs` by its own declared action (raises PopupBlocking or Stuck)."""
        popups = [self.graph.popup(name) for name in obs.popups]
        popups = [p for p in popups if p.blocking] or popups
        dismissed = ctx.detectors.dismissed
        # Highest priority first, but one whose dismissal already failed yields to one not yet tried: two popups
        # can describe one dialog (ALAS's POPUP_CONFIRM / POPUP_CANCEL) and only one of their actions may work.
        popup = min(popups, key=lambda p: (dismissed.get(p.name, 0), -p.priority))
        count = dismissed.get(popup.name, 0) + 1
        dismissed[popup.name] = count
        if count > MAX_POPUP_DISMISSALS:
            return popup_stuck(self, ctx, obs, popup.name, count - 1, SETTLE_S)
        ctx.record("dismiss", popup=popup.name, count=count)
        reason = ctx.detectors.clicks.add(f"dismiss:{popup.name}")
        if reason:
            raise Stuck(reason, page=obs.page)
        if self.learner is not None:  # a learned popup is watched: the next look says if it was there
            self.learner.dismissing(popup, obs, self.last_frame)
        for action in popup.dismiss:
            self.act(ctx, action, obs)
        ctx.wait(POLL_S)

    # ------------------------------------------------------------------------------------------- device I/O

    def look(self, ctx: RunContext, expected: str | None = None, near: bool = False) -> Observation:
        """Screenshot (retried by the device under its policy) and observe; an unchanged frame is not re-observed.
        `expected`: the page the caller expects (checked first); `near`: only it, its neighbours and the popups
        (for looks while a hop settles)."""
        frame = self._marked(lambda: ctx.device_call(self.device.screenshot))
        previous, self.last_frame, self._verified = self.last_frame, frame, None
        same = previous is not None and same_pixels(previous, frame)
        self.moving = previous is not None and not same and getattr(self.last_observation, "page", 0) is None and \
            moving(previous, frame)  # (still changing since a screen that named no page: loading, half drawn)
        unchanged = same and self.last_observation is not None and (expected, near) == self._last_expected
        if unchanged:
            obs = self.last_observation  # the same pixels say the same thing: waiting costs no observation
        else:
            ctx.keep_frame(frame)
            obs = self.observer.observe(frame, expected=expected, near=near)
        if self.learner is not None and self.learner.looked(ctx, obs, frame, self.through.went):  # (learning)
            obs = self.observer.observe(frame, expected=expected, near=near)
        self._reference(obs, frame, same or previous is not None and self.last_observation is not None and
                        self.last_observation.page == obs.page)
        self.dialogs.arrived(self.last_observation, obs, lambda: self.observer.prepare(frame))
        self.last_observation, self._last_expected, self._looked_at = obs, (expected, near), self.actuator.performed
        ctx.record("observation", expected=expected, page=obs.page, popups=list(obs.popups), loading=obs.loading,
                   confidence=round(obs.confidence, 3), unchanged=unchanged)
        return obs

    def _reference(self, obs: Observation, frame: np.ndarray, held: bool = True) -> None:
        """A page's frame `held` (still since the look before, or named alike by it: not a cross-fade half drawn) on
        which its link went through (navigation.through) is the observer's reference of it (engine.observe.cover)."""
        kept, performed = self._clean, self.actuator.performed
        if kept is not None and obs.page != kept[0] and performed > kept[2] and self.through.went(kept[0], obs.page):
            getattr(self.observer, "remember", lambda *_: None)(kept[0], kept[1])
        clean = held and obs.page is not None and not (obs.popups or obs.covered or obs.loading or obs.ambiguous)
        self._clean = (obs.page, frame, performed) if clean else None

    def seen(self, ctx: RunContext, frame: np.ndarray, obs: Observation, action: Action | None = None
             ) -> Observation:
        """A look another tool took after a raw `action` (engine.runtime.tools' adb_tap...): the belief is relocalised
        to it, and a tap on an unknown screen the navigator had just looked at is a lesson for the learner. Returns
        the observation to use (observed again if the graph changed)."""
        before, looked_at = self.last_observation, self._looked_at
        if self.learner is not None and isinstance(action, TapAction) and action.point is not None and \
                before is not None and before.page is None and not before.popups and not before.loading and \
                looked_at == self.actuator.performed - 1:
            self.learner.tapped(self, ctx, action.point, "agent tap", found_by="agent")
        self.machine.relocalise(obs.page, obs.confidence)
        self.last_frame, self.last_observation, self._verified = frame, obs, None
        self._last_expected, self._looked_at = (None, False), self.actuator.performed
        if self.learner is not None and self.learner.looked(ctx, obs, frame):
            self.last_observation = self.observer.observe(frame)
        return self.last_observation

    def act(self, ctx: RunContext, action: Action, obs: Observation | None) -> Performed:
        """Perform one declared action through the actuator; the belief records whether it went through."""
        return self._marked(lambda: self.actuator.perform(ctx, action, obs))

    def _marked(self, call: Callable[[], T]) -> T:
        """`call`, with the belief's last_action_success set from whether it raised a device fault."""
        try:
            result = call()
        except DeviceError:
            self.machine.mark_action(False)
            raise
        self.machine.mark_action(True)
        return result

    def _device_failure(self, ctx: RunContext, exc: DeviceError) -> Outcome:
        """A device fault that retries did not cure: run the health probe and report what it says."""
        health = exc.health
        try:
            health = health or self.device.health()
        except EngineError as err:  # health() should never raise, but an outcome must come back regardless
            log.warning("health probe failed: %s", err)
        status = exc.status
        health_status = getattr(health, "status", None)
        if health_status and health_status != "healthy":
            status = health_status
        return Outcome(False, status, f"{ctx.what()}: {exc}", ctx.target or None,
                       self.last_observation, tool_success=False,
                       extra={"health": health.to_dict() if hasattr(health, "to_dict") else None})
