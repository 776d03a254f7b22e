"""goto and run: the act / observe / diff / react loop that reconciles the belief with the screen.

Every step looks before it trusts: an action is followed by an observation with the hop's destination as the
expectation, the observation is diffed against it into a Verdict, and the verdict picks the reaction:

    VERIFIED      next hop (re-planned from the page actually seen)
    POPUP         dismiss the known popup by its own action (bounded), look again
    LOADING       wait under the hop policy, look again (an unchanged frame right after a tap counts too)
    MISMATCH      relocalise the belief to the page seen, re-plan from there
    UNKNOWN       recovery ladder: back key, a visible home button, the vision verifier, then a structured error
    DEVICE_ERROR  transient faults are retried under the tool's policy; persistent ones run the health probe

The whole goto is bounded by its policy and returns where it got to when the bound hits. Nothing here raises
for a navigation failure: every outcome is a ToolResult.
"""

from __future__ import annotations

import difflib
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from engine.errors import DeviceError, EngineError, NavigationError, TransientDeviceError
from engine.machine import BeliefMachine
from engine.results import Observation, ToolResult, Verdict
from engine.routes import plan_route
from engine.schema import Graph, KeyAction, Link, SwipeAction, TapAction, WaitAction
from engine.stuck import ClickRecord, ProgressWatchdog, RepeatDetector

log = logging.getLogger(__name__)

Area = tuple[int, int, int, int]

MAX_POPUP_DISMISSALS = 4
"""Times one popup may be dismissed in one navigation before it counts as blocking."""
SETTLE_S = 0.6
"""Least time a hop may take to show its effect before the frame is judged (debounce window)."""
POLL_S = 0.1
"""First pause between looks while waiting for a hop to settle; it doubles up to MAX_POLL_S."""
MAX_POLL_S = 0.5
STALE_S = 10.0
"""A belief older than this is re-observed before planning."""
MAX_STEPS = 400
"""Hard cap on loop iterations of one goto, beside its time bound."""
MAX_DEVICE_FAULTS = 3
"""Transient device faults (each already retried by the device under its policy) one goto rides out by looking
again before it stops with the health probe's verdict."""


class Cancelled(NavigationError):
    status = "cancelled"


class DeadlineExceeded(NavigationError):
    status = "timeout"


@dataclass
class _Run:
    """Book-keeping of one goto or run: bounds, counters, detectors, what happened."""

    tool: str
    target: str
    deadline: float
    cancel: threading.Event | None
    attempts: int = 0
    hops: int = 0
    steps: list[dict[str, Any]] = field(default_factory=list)
    dismissed: dict[str, int] = field(default_factory=dict)
    clicks: ClickRecord = field(default_factory=ClickRecord)
    repeats: RepeatDetector = field(default_factory=RepeatDetector)
    watchdog: ProgressWatchdog = field(default_factory=ProgressWatchdog)
    last_tap: dict[str, float] = field(default_factory=dict)
    frames: list[np.ndarray] = field(default_factory=list)
    vision_calls: int = 0
    started: float = 0.0


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
    if obs.loading or obs.black_frame:
        return Verdict.LOADING
    if obs.page is None:
        return Verdict.LOADING if waiting else Verdict.UNKNOWN
    if expected is None or obs.page == expected:
        return Verdict.VERIFIED
    return Verdict.MISMATCH


def _same_pixels(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two frames are identical: a sparse sample first (changed frames differ there at once), then all
    pixels (0.15 ms, against 1-10 ms for the scan it saves)."""
    return a.shape == b.shape and np.array_equal(a[::16, ::16], b[::16, ::16]) and np.array_equal(a, b)


def canonical_page(graph: Graph, name: str) -> str:
    """`name` as the graph spells it: ALAS's `page_` prefix may be left out (`commission` = `page_commission`)."""
    if name not in graph.page_names and f"page_{name}" in graph.page_names:
        return f"page_{name}"
    return name


def closest(name: str, candidates: list[str], n: int = 3) -> list[str]:
    return difflib.get_close_matches(name, candidates, n=n, cutoff=0.4)


class Navigator:
    """Drives one device through one graph; holds the belief.

    Args:
        device: an engine.device Device (screenshot, tap, swipe, key, health).
        graph: the server-resolved graph.
        observer: an engine.observe.Observer for that graph.
        policies: engine.policies.Policies (time bounds and retries per tool).
        transcript: an engine.transcript.Transcript, or None.
        vision: the vision verifier (engine escalates to it for unknown screens), or None.
        tasks: an engine.tasks.TaskBook, or None.
        clock, sleep: injectable for tests and the soak (a virtual clock never really waits).
    """

    def __init__(
        self,
        device: Any,
        graph: Graph,
        observer: Any,
        policies: Any,
        *,
        transcript: Any = None,
        vision: Any = None,
        tasks: Any = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        bundle_dir: str | None = None,
        on_event: Callable[[str, dict[str, Any]], None] | None = None,
    ) -> None:
        self.device = device
        self.graph = graph
        self.observer = observer
        self.policies = policies
        self.transcript = transcript
        self.vision = vision
        self.tasks = tasks
        self.clock = clock
        self.sleep = sleep
        self.bundle_dir = bundle_dir
        self.on_event = on_event
        self.machine = BeliefMachine(graph, clock)
        self.last_observation: Observation | None = None
        self.last_frame: np.ndarray | None = None
        self.last_steps: list[dict[str, Any]] = []
        self._last_expected: tuple[str | None, bool] | None = None
        """The events of the last goto/run/state (the transcript's slice), for callers and tests."""
        self._home_buttons = self._find_home_buttons()

    @property
    def belief(self):
        return self.machine.belief

    # ------------------------------------------------------------------------------------------- public tools

    def state(self) -> ToolResult:
        """Look at the screen now and relocalise the belief to it."""
        run = self._begin("state", "", self._timeout("state"), None)

        def work() -> ToolResult:
            believed = self.machine.page
            obs = self._look(run, expected=believed if believed != self.graph.unknown_page else None)
            self.machine.relocalise(obs.page, obs.confidence)
            text = f"on {obs.page}" if obs.page else "on an unknown screen"
            if obs.popups:
                text += f" with {', '.join(obs.popups)}"
            return self._result(run, ok=obs.page is not None, status="verified" if obs.page else "unknown_screen",
                                text=text, obs=obs, expected=None)

        return self._guarded(run, work)

    def goto(self, page: str, *, cancel: threading.Event | None = None) -> ToolResult:
        """Navigate to `page` and prove it by observation (ALAS's `page_` prefix may be left out)."""
        page = canonical_page(self.graph, page)
        run = self._begin("goto", page, self._timeout("goto"), cancel)
        if page not in self.graph.page_names or page == self.graph.unknown_page:
            return self._unknown_name(run, "page", page, self.graph.page_names)

        def work() -> ToolResult:
            obs = self._navigate(run, page)
            return self._result(run, ok=True, status="verified", text=f"reached {page} in {run.hops} hop(s)",
                                obs=obs, expected=page)

        return self._guarded(run, work)

    def run(self, name: str, *, cancel: threading.Event | None = None) -> ToolResult:
        """Run a named task from the task book (see engine/tasks.py)."""
        from engine.tasks import TaskRunner

        names = self.tasks.names() if self.tasks is not None else []
        run = self._begin("run", name, self._timeout("run"), cancel)
        if name not in names:
            return self._unknown_name(run, "task", name, names)

        def work() -> ToolResult:
            outcome = TaskRunner(self, run, self.tasks.get(name)).execute()
            result = self._result(run, ok=outcome.ok, status=outcome.status, text=outcome.text,
                                  obs=self.last_observation, expected=outcome.expected)
            result.data["values"] = outcome.values
            return result

        self.belief.believed_task = name
        try:
            return self._guarded(run, work)
        finally:
            self.belief.believed_task = None

    def _guarded(self, run: _Run, work: Callable[[], ToolResult]) -> ToolResult:
        """Every way a goto or run can end, as a ToolResult: nothing escapes as an exception."""
        try:
            return work()
        except Cancelled as exc:
            return self._failure(run, "cancelled", str(exc), self.last_observation)
        except DeadlineExceeded as exc:
            return self._failure(run, "timeout", str(exc), self.last_observation)
        except DeviceError as exc:
            return self._device_failure(run, exc)
        except EngineError as exc:
            return self._failure(run, exc.status, str(exc), self.last_observation)

    def task_list(self) -> list[dict[str, str]]:
        return self.tasks.describe() if self.tasks is not None else []

    # ------------------------------------------------------------------------------------------- the loop

    def _navigate(self, run: _Run, target: str) -> Observation:
        """The act / observe / diff / react loop. Returns the observation that verified `target`."""
        stale = self.machine.is_stale(STALE_S)
        obs = self._look(run, expected=None if stale else self.machine.page)
        expected: str | None = None if stale else self.machine.page
        waiting_until = 0.0
        ladder = 0
        faults = 0
        for _ in range(MAX_STEPS):
            self._checkpoint(run)
            verdict = diff(obs, expected, waiting=self.clock() < waiting_until, blocking=self._blocking(obs))
            self._record("verdict", run, verdict=verdict.value, expected=expected, observed=obs.page,
                         popups=list(obs.popups))
            if verdict is Verdict.POPUP:
                self._dismiss(run, obs)
                obs = self._look(run, expected=expected)
                continue
            if verdict is Verdict.LOADING:
                self._wait(run, self._poll_s())
                obs = self._look(run, expected=expected)
                continue
            if verdict is Verdict.UNKNOWN:
                obs, ladder = self._recover(run, obs, ladder)
                expected = None
                continue
            # A known page: what was seen wins over what was believed.
            ladder = 0
            if verdict is Verdict.MISMATCH:
                log.info("expected %s, observed %s: relocalising", expected, obs.page)
                self.machine.relocalise(obs.page, obs.confidence)
            elif expected is not None and self.machine.page != obs.page:
                self.machine.arrive(obs.page, obs.confidence)
            else:
                self.machine.relocalise(obs.page, obs.confidence)
            stuck = run.watchdog.step(obs.page)
            if obs.page == target:
                return obs
            if stuck:
                raise NavigationError(f"stuck: {stuck}", page=obs.page)
            link = self._next_link(obs.page, target)
            source = obs.page
            waited = self._debounce(run, link)
            if waited:
                obs = self._look(run, expected=source)
                expected = source
                continue
            expected = link.expected_page
            settings = self.graph.settings(self.graph.page(expected), link)
            waiting_until = self.clock() + max(SETTLE_S, settings.loading or 0.0)
            try:
                self._take(run, link, obs)
                obs = self._settle(run, expected, source, waiting_until)
                faults = 0
            except TransientDeviceError as exc:
                # The device already retried under its policy; ride out a few more by looking again.
                faults += 1
                self._record("device_fault", run, error=type(exc).__name__, message=str(exc), count=faults)
                if faults >= MAX_DEVICE_FAULTS:
                    raise
                self._wait(run, self._poll_s())
                obs = self._look(run, expected=None)
                expected = None
        raise NavigationError(f"gave up after {MAX_STEPS} steps without reaching {target}")

    def _settle(self, run: _Run, expected: str, source: str, until: float) -> Observation:
        """Look until the hop shows its effect or its allowance runs out: an unchanged frame is not a verdict.

        While the hop settles, looks are `near` (the expected page, its neighbours, popups): a frame that is none
        of them is loading either way. The look that ends an allowance with nothing recognised scans everything.
        """
        obs = self._look(run, expected=expected, near=True)
        pause = self._poll_s()
        while self.clock() < until and (
            obs.loading or obs.black_frame or (obs.page in (None, source) and not obs.popups)
        ):
            # Back off while it loads: the first looks catch a quick hop, later ones need not be frequent.
            self._wait(run, min(pause, max(0.0, until - self.clock())) or pause)
            pause = min(pause * 2, MAX_POLL_S)
            obs = self._look(run, expected=expected, near=True)
        if obs.page is None and not obs.popups and not obs.loading:
            obs = self._look(run, expected=expected)
        return obs

    def _blocking(self, obs: Observation) -> bool:
        return any(self.graph.popup(name).blocking for name in obs.popups)

    def _next_link(self, page: str, target: str) -> Link:
        route = plan_route(self.graph, page, target)
        hops = list(route.hops)
        if not hops:
            raise NavigationError(f"no hop from {page} to {target}", page=page)
        hop = hops[0]
        return hop.link if hasattr(hop, "link") else hop[1]

    def _take(self, run: _Run, link: Link, obs: Observation) -> None:
        run.hops += 1
        key = self._action_key(link.action)
        reason = run.clicks.add(key)
        if reason:
            raise NavigationError(f"stuck: {reason}", page=obs.page)
        verdict, repeats = run.repeats.add("link", [obs.page, link.to, key], obs.page)
        if verdict == "abort":
            raise NavigationError(f"stuck: the same hop {obs.page} -> {link.to} repeated {repeats} times")
        if verdict == "warn":
            log.warning("hop %s -> %s repeated %d times", obs.page, link.to, repeats)
        self._record("action", run, hop=run.hops, source=obs.page, to=link.to, action=link.action.model_dump())
        self._perform(run, link.action, obs)
        run.last_tap[key] = self.clock()

    def _debounce(self, run: _Run, link: Link) -> bool:
        """Do not tap the same button again before its effect had time to show. True when we waited."""
        last = run.last_tap.get(self._action_key(link.action))
        if last is None:
            return False
        remaining = last + SETTLE_S - self.clock()
        if remaining <= 0:
            return False
        self._wait(run, remaining)
        return True

    # ------------------------------------------------------------------------------------------- reactions

    def _dismiss(self, run: _Run, obs: Observation) -> None:
        popups = [self.graph.popup(name) for name in obs.popups]
        popups = [p for p in popups if p.blocking] or popups
        # Highest priority first, but one whose dismissal already failed yields to one not yet tried: two popups
        # can describe one dialog (ALAS's POPUP_CONFIRM / POPUP_CANCEL) and only one of their actions may work.
        popup = min(popups, key=lambda p: (run.dismissed.get(p.name, 0), -p.priority))
        count = run.dismissed.get(popup.name, 0) + 1
        run.dismissed[popup.name] = count
        if count > MAX_POPUP_DISMISSALS:
            raise _PopupBlocking(popup.name, count - 1)
        self._record("dismiss", run, popup=popup.name, count=count)
        key = f"dismiss:{popup.name}"
        reason = run.clicks.add(key)
        if reason:
            raise NavigationError(f"stuck: {reason}", page=obs.page)
        for action in popup.dismiss:
            self._perform(run, action, obs)
        self._wait(run, self._poll_s())

    def _recover(self, run: _Run, obs: Observation, ladder: int) -> tuple[Observation, int]:
        """One rung of the recovery ladder for an unknown screen; raises when the ladder is exhausted."""
        rungs = ["back", "home", "vision"]
        while ladder < len(rungs):
            rung = rungs[ladder]
            ladder += 1
            self._record("recover", run, rung=rung)
            if rung == "back":
                self._perform(run, KeyAction(type="key", key="back"), obs)
            elif rung == "home":
                button = self._visible_home_button()
                if button is None:
                    continue
                self._perform(run, TapAction(type="tap", button=button), obs)
            elif rung == "vision":
                if not self._escalate(run):
                    continue
            self._wait(run, SETTLE_S)
            return self._look(run, expected=None), ladder
        raise _UnknownScreen(obs)

    def _escalate(self, run: _Run) -> bool:
        """Ask the vision verifier about the current frame; act only on a safe answer. True if it acted.

        Safe means: a popup the graph knows (dismissed by its own declared action), or a page the graph knows
        (the belief is relocalised to it and the back key, which every page tolerates, is pressed). Anything
        else (an off-list name, a low confidence, an error) is not acted on.
        """
        if self.vision is None or self.last_frame is None:
            return False
        run.vision_calls += 1
        popups = [p.name for p in self.graph.popups]
        pages = [p for p in self.graph.page_names if p != self.graph.unknown_page]
        try:
            answer = self.vision.classify(self.last_frame, pages, popups)
        except EngineError as exc:
            self._record("vision", run, error=str(exc))
            return False
        self._record("vision", run, answer=_as_dict(answer))
        if answer.popup in popups:
            for action in self.graph.popup(answer.popup).dismiss:
                self._perform(run, action, self.last_observation)
            return True
        if answer.page in pages:
            self.machine.relocalise(answer.page, answer.confidence)
            self._perform(run, KeyAction(type="key", key="back"), self.last_observation)
            return True
        return False

    # ------------------------------------------------------------------------------------------- device I/O

    def _look(self, run: _Run, expected: str | None, near: bool = False) -> Observation:
        """Screenshot (retried under the screenshot policy) and observe."""
        self._checkpoint(run)
        frame = self._device_call(run, "screenshot", self.device.screenshot)
        previous, self.last_frame = self.last_frame, frame
        unchanged = (
            previous is not None
            and self.last_observation is not None
            and (expected, near) == self._last_expected
            and _same_pixels(previous, frame)
        )
        if unchanged:
            obs = self.last_observation  # the same pixels say the same thing: waiting costs no observation
        else:
            run.frames.append(frame)
            if len(run.frames) > 4:
                run.frames.pop(0)
            obs = self.observer.observe(frame, expected=expected, near=near)
        self.last_observation, self._last_expected = obs, (expected, near)
        self._record("observation", run, expected=expected, page=obs.page, popups=list(obs.popups),
                     loading=obs.loading, confidence=round(obs.confidence, 3), unchanged=unchanged)
        return obs

    def _perform(self, run: _Run, action: Any, obs: Observation | None) -> None:
        if isinstance(action, TapAction):
            x, y = self._tap_point(action, obs)
            self._device_call(run, "tap", lambda: self.device.tap(x, y))
        elif isinstance(action, KeyAction):
            self._device_call(run, "key", lambda: self.device.key(action.key))
        elif isinstance(action, SwipeAction):
            (x1, y1), (x2, y2) = action.start, action.end
            self._device_call(run, "swipe", lambda: self.device.swipe(x1, y1, x2, y2, action.duration_ms))
        elif isinstance(action, WaitAction):
            self._wait(run, action.seconds)
        self.machine.mark_action(True)

    def _tap_point(self, action: TapAction, obs: Observation | None) -> tuple[int, int]:
        if action.point is not None:
            return action.point
        button = self.graph.button(action.button)
        x1, y1, x2, y2 = button.click_area
        dx, dy = (obs.offsets.get(action.button, (0, 0)) if obs is not None else (0, 0))
        w, h = self.graph.resolution
        x = min(max((x1 + x2) // 2 + dx, 0), w - 1)
        y = min(max((y1 + y2) // 2 + dy, 0), h - 1)
        return x, y

    def _device_call(self, run: _Run, tool: str, call: Callable[[], Any]) -> Any:
        """One device call. The device retries transient faults under the tool's policy (with a reconnect
        between attempts); what reaches here is a fault the policy could not cure."""
        self._checkpoint(run)
        run.attempts += 1
        try:
            return call()
        except DeviceError:
            self.machine.mark_action(False)
            raise

    # ------------------------------------------------------------------------------------------- helpers

    def _begin(self, tool: str, target: str, timeout: float, cancel: threading.Event | None) -> _Run:
        now = self.clock()
        run = _Run(tool=tool, target=target, deadline=now + timeout, cancel=cancel, started=now)
        self._record("request", run, belief=self.belief.to_dict(now))
        return run

    def _checkpoint(self, run: _Run) -> None:
        if run.cancel is not None and run.cancel.is_set():
            raise Cancelled(f"{run.tool} {run.target} was cancelled")
        if self.clock() >= run.deadline:
            raise DeadlineExceeded(
                f"{run.tool} {run.target} did not finish within {run.deadline - run.started:.0f} s"
            )

    def _wait(self, run: _Run, seconds: float) -> None:
        seconds = max(0.0, min(seconds, run.deadline - self.clock()))
        if run.cancel is not None and self.sleep is time.sleep:
            run.cancel.wait(seconds)
        else:
            self.sleep(seconds)
        self._checkpoint(run)

    def _policy(self, name: str) -> Any:
        return self.policies.get(name)

    def _timeout(self, name: str) -> float:
        return float(self._policy(name).timeout)

    def _poll_s(self) -> float:
        return POLL_S

    @staticmethod
    def _action_key(action: Any) -> str:
        if isinstance(action, TapAction):
            return action.button or f"point:{action.point}"
        if isinstance(action, KeyAction):
            return f"key:{action.key}"
        return action.type

    def _find_home_buttons(self) -> list[str]:
        """Buttons that lead to the main page from many pages (ALAS's GOTO_MAIN): the ladder's second rung."""
        counts: dict[str, int] = {}
        for page in self.graph.pages:
            for link in page.links:
                if isinstance(link.action, TapAction) and link.action.button:
                    dest = link.to
                    if dest == self.graph.pages[0].name or dest == self._main_page():
                        counts[link.action.button] = counts.get(link.action.button, 0) + 1
        return [b for b, n in sorted(counts.items(), key=lambda kv: -kv[1]) if n >= 3]

    def _main_page(self) -> str:
        start = self.graph.start_page
        if start:
            for link in self.graph.page(start).links:
                return link.to
        return self.graph.pages[0].name

    def _visible_home_button(self) -> str | None:
        find = getattr(self.observer, "find_button", None)
        if find is None or self.last_frame is None:
            return None
        for name in self._home_buttons:
            evidence = find(self.last_frame, name)
            if evidence is not None and evidence.hit:
                return name
        return None

    def _record(self, kind: str, run: _Run, **fields: Any) -> None:
        entry = {"t_ms": round((self.clock() - run.started) * 1000, 1), **fields}
        run.steps.append({"kind": kind, **entry})
        if self.transcript is not None:
            self.transcript.record(kind, tool=run.tool, target=run.target, **entry)
        if self.on_event is not None:
            self.on_event(kind, entry)

    # ------------------------------------------------------------------------------------------- results

    def _result(self, run: _Run, *, ok: bool, status: str, text: str, obs: Observation | None,
                expected: str | None, suggested: str | None = None) -> ToolResult:
        observed = obs.page if obs is not None else None
        evidence = [e.to_dict() for e in obs.evidence] if obs is not None else []
        ocr = [e.text for e in obs.evidence if e.text] if obs is not None else []
        blocking = None
        if obs is not None and obs.popups:
            blocking = obs.popups[0]
        if suggested is None and not ok:
            suggested = _suggest(status)
        data = {
            "tool": run.tool,
            "target": run.target,
            "tool_success": ok or status not in ("device_error", "timeout", "cancelled"),
            "state_verification": "verified" if ok else status,
            "expected": expected,
            "observed": observed,
            "attempts": run.attempts,
            "hops": run.hops,
            "elapsed_ms": round((self.clock() - run.started) * 1000, 1),
            "evidence": evidence,
            "screenshot_analysis": {
                "blocking_element": blocking,
                "ocr_detected": ocr,
                "suggested_action": suggested,
            },
            "observation": obs.to_dict() if obs is not None else None,
            "belief": self.belief.to_dict(self.clock()),
            "vision_calls": run.vision_calls,
        }
        self._record("result", run, ok=ok, status=status, text=text)
        self.last_steps = run.steps
        result = ToolResult(ok=ok, status=status, text=text, data=data)
        if not ok:
            self._bundle(run, result)
        elif self.transcript is not None and hasattr(self.transcript, "save_trace") and run.tool in ("goto", "run"):
            self._trace(run)
        return result

    def _failure(self, run: _Run, status: str, message: str, obs: Observation | None) -> ToolResult:
        expected = run.target if run.tool == "goto" else None
        if isinstance(status, str) and status == "navigation_error" and "stuck" in message:
            status = "stuck"
        return self._result(run, ok=False, status=status, text=message, obs=obs, expected=expected)

    def _device_failure(self, run: _Run, exc: DeviceError) -> ToolResult:
        """A device fault that retries did not cure: run the health probe and report what it says."""
        health = None
        try:
            health = self.device.health()
        except EngineError as err:  # health() should never raise, but a result must come back regardless
            log.warning("health probe failed: %s", err)
        status = exc.status
        health_status = getattr(health, "status", None)
        if health_status and health_status != "healthy":
            status = health_status
        result = self._result(run, ok=False, status=status, text=f"{run.tool} {run.target}: {exc}",
                              obs=self.last_observation, expected=run.target or None)
        result.data["tool_success"] = False
        result.data["health"] = health.to_dict() if hasattr(health, "to_dict") else None
        return result

    def _unknown_name(self, run: _Run, what: str, name: str, names: list[str]) -> ToolResult:
        suggestions = closest(name, names)
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else ""
        result = self._result(run, ok=False, status=f"unknown_{what}", text=f"unknown {what} {name!r}{hint}",
                              obs=None, expected=name, suggested="human")
        result.data["suggestions"] = suggestions
        return result

    def _bundle(self, run: _Run, result: ToolResult) -> None:
        if self.transcript is None or self.bundle_dir is None:
            return
        make = getattr(self.transcript, "error_bundle", None)
        if make is None:
            return
        try:
            frames = [(f"frame_{i}", frame) for i, frame in enumerate(run.frames)]
            path = make(self.bundle_dir, frames, run.steps, result=result.to_dict())
            result.data["error_bundle"] = str(path)
        except (OSError, TypeError, ValueError) as exc:
            log.warning("could not write the error bundle: %s", exc)

    def _trace(self, run: _Run) -> None:
        try:
            self.transcript.save_trace(run.tool, run.target, run.steps)
        except (OSError, TypeError, ValueError) as exc:
            log.warning("could not save the trace: %s", exc)


class _PopupBlocking(NavigationError):
    status = "popup_blocking"

    def __init__(self, popup: str, count: int) -> None:
        super().__init__(f"popup {popup} is still there after {count} dismissals", popup=popup)


class _UnknownScreen(NavigationError):
    status = "unknown_screen"

    def __init__(self, obs: Observation) -> None:
        super().__init__("the screen matches no known page or popup and recovery did not help")


def _suggest(status: str) -> str:
    return {
        "popup_blocking": "dismiss_popup_then_retry",
        "unknown_screen": "use_vision",
        "timeout": "retry",
        "cancelled": "retry",
        "stuck": "human",
        "device_offline": "reconnect",
        "connection_lost": "reconnect",
        "adb_server_down": "reconnect",
        "device_not_found": "reconnect",
        "black_frame": "restart_app",
        "black_screen": "restart_app",
        "bad_frame": "human",
        "no_route": "human",
    }.get(status, "retry")


def _as_dict(answer: Any) -> Any:
    if hasattr(answer, "to_dict"):
        return answer.to_dict()
    if hasattr(answer, "model_dump"):
        return answer.model_dump()
    return repr(answer)
