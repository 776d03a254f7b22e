"""The tool surface: eight bounded tools shared by the CLI, the MCP server and (later) the agent, each answering
a ToolResult. This is the one place where an Outcome becomes a ToolResult.

    adb_health      is the device there and answering          (bound: policy health,     < 2 s)
    adb_screenshot  the frame as PNG plus a black-frame flag    (bound: policy screenshot, < 3 s)
    adb_tap         tap a point, then observe                   (bound: policy tap,        < 1 s)
    adb_swipe       swipe, then observe                         (bound: policy swipe,      < 1 s)
    alas_state      which page is showing, and the belief       (bound: policy state,      < 3 s)
    alas_goto       navigate to a page and verify it            (bound: policy goto,       30 s)
    alas_tools      the tasks alas_run can run                  (bound: 1 s)
    alas_run        run a named task (login is one)             (bound: policy run,        60 s)

Each call runs on a worker thread under its bound (engine.core.bounded); work that acts on the game gets a run
context (engine.core.context) whose deadline is the call's, so the worker stops at its next checkpoint when the caller
has given up. State relocalises the belief only when the device is free; otherwise it reports a fresh frame's
observation beside the belief the running action holds.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterable

from engine.config.schema import SwipeAction, TapAction
from engine.core.bounded import WAITING, Bounded, Overrun
from engine.core.context import RunContext
from engine.core.errors import DeviceError, EngineError
from engine.core.results import Observation, Outcome, ToolResult, did_you_mean, make_result
from engine.device.frames import encode_png, frame_problem
from engine.navigation.actuator import Actuator
from engine.navigation.verdict import describe
from engine.navigation.recovery import dialogs_closed
from engine.navigation.routes import canonical_page
from engine.runtime.toolspecs import SPECS, TOOL_NAMES, ToolSpec  # noqa: F401 - re-exported
from engine.tasks.providers import (TaskProvider, describe_outside, device_owner, outside_bound, provider_for,
                                    run_external)

if TYPE_CHECKING:
    from engine.config.policies import Policies
    from engine.config.schema import Graph
    from engine.device.base import Device
    from engine.navigation.navigator import Navigator
    from engine.observe.observer import Observer
    from engine.runtime.transcript import Transcript
    from engine.tasks.runner import TaskRunner

log = logging.getLogger(__name__)

SWIPE_MARGIN_S = 0.15
"""Room a swipe's bound keeps beyond the gesture's own duration (the command round trip)."""
INTERRUPTED = ("timeout", "cancelled", "device_error")
"""Statuses of work that did not run through (for ``tool_success``)."""


def _timed(tool: Callable[..., ToolResult]) -> Callable[..., ToolResult]:
    """A tool method whose `started` (when the request arrived, on the Tools' clock) defaults to now."""

    @functools.wraps(tool)
    def timed(self: Tools, *args: Any, cancel: threading.Event | None = None, started: float | None = None,
              **kwargs: Any) -> ToolResult:
        return tool(self, *args, cancel=cancel, started=self.clock() if started is None else started, **kwargs)

    return timed


class Tools:
    """The eight tools over one device and graph (and its observer, navigator and tasks, when the session has them).

    Args:
        device: the phone (engine.device.base.Device).
        graph: the server-resolved graph (its resolution bounds taps and swipes).
        observer: an engine.observe.observer.Observer, or None (actions then report no observation).
        policies: engine.config.policies.Policies; ``get(name).timeout`` is each tool's bound.
        navigator: an engine.navigation.navigator.Navigator, or None (goto and state need it).
        tasks: an engine.tasks.runner.TaskRunner, or None (no tasks to run).
        health: the health probe; defaults to ``device.health``. It is called without the device lock.
        transcript, bundle_dir: where runs record their events, error bundles and traces (None: nowhere).
        unavailable: why navigation cannot work in this session (for example: no asset pack for a real device);
            goto, state and run then answer ``config_error`` with this text.
        clock, sleep: injectable for tests; on_event: called with every event a run records (CLI progress);
        providers: runners of outside tasks (alas_wrapped's), listed and run beside the YAML tasks.
        schedule: the schedule these tools share with the scheduler (engine.runtime.schedhook), or None.
    """

    def __init__(self, device: Device, graph: Graph, observer: Observer | None = None,
                 policies: Policies | None = None, *, navigator: Navigator | None = None,
                 tasks: TaskRunner | None = None, health: Callable[[], Any] | None = None,
                 transcript: Transcript | None = None, bundle_dir: str | None = None, unavailable: str | None = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 on_event: Callable[[str, dict[str, Any]], None] | None = None,
                 providers: Iterable[TaskProvider] = (), schedule: Any = None) -> None:
        self.device, self.graph, self.observer, self.policies = device, graph, observer, policies
        self.navigator, self.tasks, self.transcript, self.bundle_dir = navigator, tasks, transcript, bundle_dir
        self.unavailable, self.on_event = unavailable, on_event
        self._health = health or getattr(device, "health", None)
        self.clock, self._sleep, self.bounded = clock, sleep, Bounded(clock)
        self.actuator = navigator.actuator if navigator is not None else Actuator(device, graph)
        """Performs raw taps and swipes (the navigator's actuator, so both act alike)."""
        self.last_run: RunContext | None = None
        """The context of the last call that acted or looked through the navigator (its steps, for callers)."""
        self.providers: list[TaskProvider] = list(providers)
        self.schedule = schedule

    def sleep(self, seconds: float) -> None:
        """Pause on this Tools' time (the injected sleep: virtual in soaks and tests)."""
        self._sleep(seconds)

    @property
    def device_lock(self) -> threading.Lock:
        """Held by the call that acts on the device now."""
        return self.bounded.device_lock

    @classmethod
    def from_session(cls, session: Any, **kwargs: Any) -> Tools:
        """Tools over an engine.runtime.session Session (device, graph, observer, policies, navigator, transcript)."""
        return cls(session.device, session.graph, session.observer, session.policies, navigator=session.navigator,
                   tasks=session.tasks, health=getattr(session, "health", None), transcript=session.transcript,
                   bundle_dir=session.bundle_dir, unavailable=session.unavailable, **kwargs)

    # ------------------------------------------------------------------------------------------- the calls

    def bound(self, name: str) -> float:
        """The tool's hard bound in seconds: its policy's timeout, else the built-in default."""
        spec = SPECS[name]
        if spec.policy is not None and self.policies is not None:
            try:
                return float(self.policies.get(spec.policy).timeout)
            except (EngineError, KeyError, AttributeError):
                log.debug("no policy %r; %s keeps its default bound", spec.policy, name)
        return spec.default_bound

    def call(self, name: str, arguments: dict[str, Any] | None = None, *,
             cancel: threading.Event | None = None, started: float | None = None) -> ToolResult:
        """Run tool `name` with `arguments`, bounded; never raises for a device or navigation failure.

        `started` (this Tools' clock) is when the request arrived, if earlier than now: the bound counts from it,
        so time spent reaching a worker thread is inside the bound, not added to it.
        """
        if name not in SPECS:
            hint, options = did_you_mean(name, SPECS)
            return self.result(name, ok=False, status="bad_argument",
                               text=f"unknown tool {name!r}{hint or '; tools: ' + ', '.join(SPECS)}",
                               extra={"suggestions": options})
        try:
            return getattr(self, name)(**(arguments or {}), cancel=cancel, started=started)
        except TypeError as exc:
            return self.result(name, ok=False, status="bad_argument", text=f"{name}: {exc}")

    @_timed
    def adb_health(self, *, cancel: threading.Event | None = None, started: float) -> ToolResult:

        def work(stop: threading.Event, deadline: float) -> ToolResult:
            if self._health is None:
                return self.result("adb_health", started, ok=False, status="not_implemented",
                                   text="this device has no health probe")
            health = self._health()
            body = health.to_dict() if hasattr(health, "to_dict") else dict(health)
            for provider in self.providers:
                body.update(provider.health())
            status = str(body.get("status") or getattr(health, "status", "unknown"))
            detail = body.get("detail") or body.get("message") or ""
            return self.result("adb_health", started, ok=bool(body.get("ok", status == "healthy")), status=status,
                               text=f"device {status}" + (f": {detail}" if detail else ""), tool_success=True,
                               state_verification="not_checked", extra={"health": body})

        return self._bounded("adb_health", work, cancel, started)

    @_timed
    def adb_screenshot(self, *, cancel: threading.Event | None = None, started: float) -> ToolResult:

        def work(stop: threading.Event, deadline: float) -> ToolResult:
            frame = self.device.screenshot(allow_black=True)  # a black frame is an answer here, not an error
            black = frame.size == 0 or frame_problem(frame) is not None
            png = encode_png(frame)
            h, w = frame.shape[:2]
            return self.result("adb_screenshot", started, ok=True, status="black_frame" if black else "ok",
                               text=f"{w}x{h} screenshot" + (" (black frame)" if black else ""), tool_success=True,
                               state_verification="not_checked", suggested="restart_app" if black else None,
                               extra={"black_frame": black, "width": w, "height": h, "png_bytes": len(png)}, png=png)

        return self._bounded("adb_screenshot", work, cancel, started)

    @_timed
    def adb_tap(self, x: int, y: int, *, cancel: threading.Event | None = None,
                started: float) -> ToolResult:
        target = {"x": x, "y": y}
        problem = self._off_screen("tap", [(x, y)])
        if problem:
            return self.result("adb_tap", started, ok=False, status="bad_argument", text=problem, target=target)
        action = TapAction(type="tap", point=(int(x), int(y)))
        return self._act("adb_tap", target, action, f"tapped ({x}, {y})", cancel, started)

    @_timed
    def adb_swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300, *,
                  cancel: threading.Event | None = None, started: float) -> ToolResult:
        target = {"x1": x1, "y1": y1, "x2": x2, "y2": y2, "duration_ms": duration_ms}
        longest = int((self.bound("adb_swipe") - SWIPE_MARGIN_S) * 1000)
        problem = self._off_screen("swipe", [(x1, y1), (x2, y2)])
        if problem is None and not 1 <= duration_ms <= longest:
            problem = (f"swipe duration_ms={duration_ms} must be between 1 and {longest} "
                       f"so the swipe fits its {self.bound('adb_swipe'):g} s bound")
        if problem:
            return self.result("adb_swipe", started, ok=False, status="bad_argument", text=problem, target=target)
        action = SwipeAction(type="swipe", start=(int(x1), int(y1)), end=(int(x2), int(y2)),
                             duration_ms=int(duration_ms))
        return self._act("adb_swipe", target, action, f"swiped ({x1}, {y1}) -> ({x2}, {y2}) in "
                         f"{duration_ms} ms", cancel, started)

    @_timed
    def alas_state(self, *, cancel: threading.Event | None = None, started: float) -> ToolResult:
        if self.navigator is None:
            return self._unavailable("alas_state", started, None)

        def work(stop: threading.Event, deadline: float) -> ToolResult:
            if self.bounded.try_hold():
                try:
                    ctx = self._context("state", "", stop, deadline)
                    return self._conclude("alas_state", ctx, self.navigator.state(ctx), started)
                finally:
                    self.bounded.release()
            # An action owns the device: look without moving its belief.
            obs = self.observer.observe(self.device.screenshot(allow_black=True))
            busy = self.bounded.busy()
            text = describe(obs) + (" (an action is running; the belief is its own)" if busy else "")
            return self.result("alas_state", started, ok=obs.page is not None,
                               status="verified" if obs.page else "unknown_screen", text=text, observation=obs,
                               tool_success=True, state_verification="observed",
                               extra={"busy": busy, "belief": self.navigator.belief.to_dict(self.clock()),
                                      "external": [p.state() for p in self.providers]})

        return self._bounded("alas_state", work, cancel, started)

    @_timed
    def alas_goto(self, page: str, *, cancel: threading.Event | None = None,
                  started: float) -> ToolResult:
        names = [p for p in self.graph.page_names if p != self.graph.unknown_page]
        page = canonical_page(self.graph, page)
        if page not in names:
            return self._unknown("alas_goto", started, "page", page, names)
        if self.navigator is None:
            return self._unavailable("alas_goto", started, page)

        def work(stop: threading.Event, deadline: float) -> ToolResult:
            ctx = self._context("goto", page, stop, deadline)
            return self._conclude("alas_goto", ctx, self.navigator.goto(page, ctx), started)

        return self._bounded("alas_goto", work, cancel, started, target=page, exclusive=True)

    @_timed
    def alas_tools(self, *, cancel: threading.Event | None = None, started: float) -> ToolResult:
        if self.navigator is None:
            return self._unavailable("alas_tools", started, None)

        def work(stop: threading.Event, deadline: float) -> ToolResult:
            tasks = [{**t, "bound_s": self.task_bound(t["name"])} for t in self.all_tasks()]
            tasks = self.schedule.annotate(tasks) if self.schedule is not None else tasks
            text = f"{len(tasks)} task(s): {', '.join(t['name'] for t in tasks)}" if tasks else "no tasks"
            return self.result("alas_tools", started, ok=True, status="ok", text=text, tool_success=True,
                               state_verification="not_checked", extra={"tasks": tasks})

        return self._bounded("alas_tools", work, cancel, started)

    @_timed
    def alas_run(self, name: str, resume: bool = False, *, cancel: threading.Event | None = None,
                 started: float) -> ToolResult:
        if self.navigator is None:
            return self._unavailable("alas_run", started, name)
        provider = provider_for(self.providers, name) if isinstance(name, str) else None
        if provider is None and (self.tasks is None or name not in self.tasks.names()):
            return self._unknown("alas_run", started, "task", name,
                                [t["name"] for t in self.all_tasks(strict=False)])
        if not isinstance(resume, bool):
            return self.result("alas_run", started, ok=False, status="bad_argument",
                               text=f"alas_run: resume must be true or false, not {resume!r}", target=name)

        def work(stop: threading.Event, deadline: float) -> ToolResult:
            ctx = self._context("run", name, stop, deadline)
            def run() -> ToolResult:
                outcome = run_external(self.navigator, provider, name, ctx) if provider is not None else \
                    self.tasks.run(name, ctx, resume=resume)
                return self._conclude("alas_run", ctx, outcome, started)
            return self.schedule.run(name, run, self) if self.schedule is not None else run()

        return self._bounded("alas_run", work, cancel, started, target=name, exclusive=True,
                             bound=self.task_bound(name))

    def all_tasks(self, strict: bool = True) -> list[dict[str, Any]]:
        """``[{name, description, ...}]`` of every task alas_run takes: the graph's and skills, then outside ones."""
        yaml_tasks = self.tasks.book.describe() if self.tasks is not None else []
        return [*yaml_tasks, *describe_outside(self.providers, strict)]

    def task_bound(self, name: str) -> float:
        """The bound of running task `name`: its own policy's timeout (a daily routine names one), else alas_run's."""
        if (outside := outside_bound(self.providers, name, self.policies)) is not None:
            return outside
        known = self.tasks is not None and name in self.tasks.names()
        policy = self.tasks.book.get(name).policy if known else None
        if policy is not None and self.policies is not None:
            try:
                return float(self.policies.get(policy).timeout)
            except (EngineError, KeyError, AttributeError):
                log.warning("task %s names policy %r, which is not loaded; it keeps alas_run's bound", name, policy)
        return self.bound("alas_run")

    def close(self, timeout: float = 2.0) -> None:
        """Kill outside workers still running; wait a little for ours that are finishing (told to stop)."""
        for provider in self.providers:
            provider.close()
        self.bounded.close(timeout)

    # ------------------------------------------------------------------------------------------- results

    def result(self, name: str, started: float | None = None, **fields: Any) -> ToolResult:
        """A ToolResult of tool `name` (engine.core.results.make_result), timed from `started`."""
        elapsed = 0.0 if started is None else (self.clock() - started) * 1000.0
        return make_result(name, elapsed_ms=elapsed, **fields)

    def overrun(self, name: str, started: float, target: Any = None, phase: str = "running",
                cancelled: bool = False, bound: float | None = None) -> ToolResult:
        """The result of a call that did not answer inside its bound (or was cancelled first)."""
        what = name + (f" {target}" if isinstance(target, str) else "")
        if cancelled:
            text, status = f"{what} was cancelled; it stops at its next checkpoint", "cancelled"
        else:
            text, status = f"{what} did not finish within {bound or self.bound(name):g} s ({phase})", "timeout"
        suggested = None
        if status == "timeout":
            suggested = "retry" if phase == WAITING else ("reconnect" if name.startswith("adb_") else None)
        result = self.result(name, started, ok=False, status=status, text=text, target=target, tool_success=False,
                             state_verification="not_checked", suggested=suggested)
        self._log("result", result)
        return result

    def bad_arguments(self, name: str, problems: list[dict[str, str]]) -> ToolResult:
        """A ``bad_argument`` result naming each wrong field (``{field, problem, type}``); values stay out."""
        listed = "; ".join(f"{p['field']}: {p['problem']}" for p in problems)
        return self.result(name, ok=False, status="bad_argument", text=f"{name}: bad arguments: {listed}",
                           state_verification="not_checked", extra={"errors": problems})

    def _conclude(self, name: str, ctx: RunContext, outcome: Outcome, started: float) -> ToolResult:
        """The ToolResult of a navigation, state or task Outcome (and the run's record of it)."""
        tool_success = outcome.tool_success
        if tool_success is None:
            tool_success = outcome.ok or outcome.status not in INTERRUPTED
        belief = self.navigator.belief.to_dict(self.clock()) if self.navigator is not None else None
        result = self.result(name, started, ok=outcome.ok, status=outcome.status, text=outcome.text,
                             target=ctx.target or None, expected=outcome.expected, observation=outcome.observation,
                             attempts=ctx.attempts, tool_success=tool_success, suggested=outcome.suggested,
                             extra={"hops": ctx.hops, "belief": belief, "vision_calls": ctx.vision_calls,
                                    **({"learning": learned} if (learned := ctx.learning()) else {}),
                                    **({"dialogs_closed": closed} if (closed := dialogs_closed(ctx)) else {}),
                                    **outcome.extra})
        return ctx.finish(result)

    # ------------------------------------------------------------------------------------------- helpers

    def _context(self, tool: str, target: Any, stop: threading.Event, deadline: float) -> RunContext:
        ctx = RunContext(tool, target, bound=max(0.0, deadline - self.clock()), cancel=stop, clock=self.clock,
                         sleep=self._sleep, transcript=self.transcript, on_event=self.on_event,
                         bundle_dir=self.bundle_dir)
        self.last_run = ctx
        return ctx

    def _bounded(self, name: str, work: Callable[[threading.Event, float], ToolResult],
                 cancel: threading.Event | None, started: float, *, target: Any = None,
                 exclusive: bool = False, bound: float | None = None) -> ToolResult:
        """`work` on a worker thread under the tool's bound; every error it raises comes back as a result."""

        def guarded(stop: threading.Event, deadline: float) -> ToolResult:
            try:
                return work(stop, deadline)
            except DeviceError as exc:
                return self.result(name, started, ok=False, status=exc.status, text=f"{name}: {exc}", target=target,
                                   tool_success=False, state_verification="not_checked",
                                   extra={"error": exc.to_dict()})
            except EngineError as exc:
                return self.result(name, started, ok=False, status=exc.status, text=f"{name}: {exc}", target=target,
                                   extra={"error": exc.to_dict()})
            except Exception as exc:  # a bug must still come back as a result, never hang the caller
                log.exception("%s failed unexpectedly", name)
                return self.result(name, started, ok=False, status="error",
                                   text=f"{name} failed: {type(exc).__name__}: {exc}", target=target)

        owner = device_owner(self.providers) if exclusive else None
        if owner is not None:
            return self.result(name, started, ok=False, status="busy", text=f"{name}: {owner}", target=target,
                               tool_success=False, state_verification="not_checked")
        answer = self.bounded.run(name, guarded, deadline=started + (bound or self.bound(name)), cancel=cancel,
                                  exclusive=exclusive)
        if isinstance(answer, Overrun):
            return self.overrun(name, started, target, answer.phase, answer.cancelled, bound)
        return answer

    def _act(self, name: str, target: dict[str, Any], action: Any, done_text: str,
             cancel: threading.Event | None, started: float) -> ToolResult:
        """A device action under the lock, through the actuator, then an observation of its effect."""

        def work(stop: threading.Event, deadline: float) -> ToolResult:
            ctx = self._context(name, target, stop, deadline)
            ctx.record("action")
            self.actuator.perform(ctx, action)
            ctx.checkpoint()
            obs = self._observe_after_action(ctx, action)
            text = done_text + ("" if obs is None else f"; now {describe(obs)}")
            return ctx.finish(self.result(name, started, ok=True, status="ok", text=text, target=target,
                                          observation=obs, attempts=ctx.attempts, tool_success=True,
                                          state_verification="observed"))

        return self._bounded(name, work, cancel, started, target=target, exclusive=True)

    def _observe_after_action(self, ctx: RunContext, action: Any) -> Observation | None:
        if self.observer is None:
            return None
        obs = self.observer.observe(frame := self.device.screenshot(allow_black=True))
        if self.navigator is not None:  # a raw action moved the game behind the navigator's back
            obs = self.navigator.seen(ctx, frame, obs, action)
        return obs

    def _off_screen(self, what: str, points: list[tuple[int, int]]) -> str | None:
        width, height = self.graph.resolution
        for x, y in points:
            if not (0 <= x < width and 0 <= y < height):
                return (f"{what} point ({x}, {y}) is off the {width}x{height} screen: "
                        f"x must be in 0..{width - 1} and y in 0..{height - 1}")
        return None

    def _unknown(self, name: str, started: float, what: str, value: str, names: list[str]) -> ToolResult:
        hint, options = did_you_mean(value, names)
        return self.result(name, started, ok=False, status=f"unknown_{what}", text=f"unknown {what} {value!r}{hint}",
                           target=value, expected=value, extra={"suggestions": options})

    def _unavailable(self, name: str, started: float, target: Any) -> ToolResult:
        if self.unavailable:
            return self.result(name, started, ok=False, status="config_error", text=f"{name}: {self.unavailable}",
                               target=target)
        return self.result(name, started, ok=False, status="not_implemented",
                           text=f"{name} needs the navigator, which this session does not have", target=target)

    def _log(self, kind: str, result: ToolResult) -> None:
        if self.transcript is None:
            return
        try:
            self.transcript.record(kind, tool=result.data.get("tool"), target=result.data.get("target"),
                                   ok=result.ok, status=result.status, text=result.text)
        except (OSError, ValueError) as exc:
            log.warning("could not write the transcript: %s", exc)
