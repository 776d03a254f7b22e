"""The tool surface: eight bounded tools shared by the CLI and the MCP server, each answering a ToolResult.

    adb_health      is the device there and answering          (bound: policy health,     < 2 s)
    adb_screenshot  the frame as PNG plus a black-frame flag    (bound: policy screenshot, < 3 s)
    adb_tap         tap a point, then observe                   (bound: policy tap,        < 1 s)
    adb_swipe       swipe, then observe                         (bound: policy swipe,      < 1 s)
    alas_state      which page is showing, and the belief       (bound: policy state,      < 3 s)
    alas_goto       navigate to a page and verify it            (bound: policy goto,       30 s)
    alas_tools      the tasks alas_run can run                  (bound: 1 s)
    alas_run        run a named task (login is one)             (bound: policy run,        60 s)

Bounding: each call's work runs on its own worker thread and the caller waits at most the tool's bound (the
``timeout`` of its policy in policies/). When the bound or the caller's cancel Event fires first, the caller gets
a ``timeout`` (or ``cancelled``) result at once and the worker is told to stop: goto and run get a cancel Event
they check at every hop, device actions check it before touching the device, so no orphan keeps tapping.

Ownership: device actions (tap, swipe, goto, run) are serialised by one lock per device, one at a time. Reads do
not take it: health never waits for the lock (it must answer while a goto runs), screenshots are reads, and
state relocalises the belief only when the device is free, otherwise it reports a fresh frame's observation
beside the belief the running goto holds.
"""

from __future__ import annotations

import difflib
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from engine.errors import DeviceError, EngineError
from engine.navigator import canonical_page
from engine.results import Observation, ToolResult

log = logging.getLogger(__name__)

Work = Callable[[threading.Event], ToolResult]

POLL_S = 0.02
"""How often a waiting caller looks at its cancel Event; the bound itself is waited on exactly."""
SWIPE_MARGIN_S = 0.15
"""Room a swipe's bound keeps beyond the gesture's own duration (the command round trip)."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, the policy that bounds it, and what it does (the MCP description)."""

    name: str
    policy: str | None
    default_bound: float
    summary: str
    acts: bool
    """Whether it moves the game (and so takes the device lock)."""


SPECS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec("adb_health", "health", 1.8, "Check the device and the ADB connection; answers even mid-goto.",
                 False),
        ToolSpec("adb_screenshot", "screenshot", 2.8, "Take a screenshot: the frame as PNG and a black-frame flag.",
                 False),
        ToolSpec("adb_tap", "tap", 0.9, "Tap the point (x, y) in screen pixels, then observe the screen.", True),
        ToolSpec("adb_swipe", "swipe", 0.95,
                 "Swipe from (x1, y1) to (x2, y2) over duration_ms milliseconds, then observe the screen.", True),
        ToolSpec("alas_state", "state", 2.9,
                 "Observe the current page (popups, loading, evidence) and report the engine's belief.", False),
        ToolSpec("alas_goto", "goto", 30.0,
                 "Navigate to a page of the game graph and verify arrival by looking at the screen.", True),
        ToolSpec("alas_tools", None, 1.0, "List the tasks alas_run can run, with their descriptions.", False),
        ToolSpec("alas_run", "run", 60.0, "Run a named task (for example login) and verify its outcome.", True),
    )
}
TOOL_NAMES = tuple(SPECS)

_SUGGEST = {
    "timeout": "retry",
    "cancelled": "retry",
    "busy": "retry",
    "device_error": "reconnect",
    "device_offline": "reconnect",
    "connection_lost": "reconnect",
    "adb_server_down": "reconnect",
    "device_not_found": "reconnect",
    "unhealthy": "reconnect",
    "device_missing": "reconnect",
    "black_screen": "restart_app",
    "black_frame": "restart_app",
    "bad_frame": "human",
    "unknown_screen": "use_vision",
    "popup_blocking": "dismiss_popup_then_retry",
    "bad_argument": "human",
    "unknown_page": "human",
    "unknown_task": "human",
    "not_implemented": "human",
    "error": "human",
}


def suggested_action(status: str) -> str | None:
    """The next step an agent should take after a result with `status` (None when it succeeded)."""
    return _SUGGEST.get(status, "retry") if status not in ("ok", "verified", "healthy", "observed") else None


def closest(name: str, names: list[str], n: int = 3) -> list[str]:
    """The known names closest to a mistyped one."""
    return difflib.get_close_matches(name, names, n=n, cutoff=0.4)


def is_black(frame: np.ndarray) -> bool:
    """A frame that is black or one flat colour (a screen that is off, loading, or a failed capture)."""
    from engine.device.frames import frame_problem

    return frame.size == 0 or frame_problem(frame) is not None


def encode_png(frame: np.ndarray) -> bytes:
    import cv2

    ok, encoded = cv2.imencode(".png", np.ascontiguousarray(frame))
    if not ok:
        raise ValueError("the frame could not be encoded as PNG")
    return encoded.tobytes()


@dataclass
class ImageResult(ToolResult):
    """A ToolResult that carries an image (not part of ``to_dict``: faces send it as image content or a file)."""

    png: bytes = field(default=b"", repr=False)


class Tools:
    """The eight tools over one device, graph and observer (and the navigator, once there is one).

    Args:
        device: an engine.device Device (screenshot, tap, swipe, health).
        graph: the server-resolved graph (its resolution bounds taps and swipes).
        observer: an engine.observe.Observer, or None (actions then report no observation).
        policies: engine.policies.Policies; ``get(name).timeout`` is each tool's bound.
        navigator: an engine.navigator.Navigator, or None (state falls back to the observer; goto, run and tools
            answer ``not_implemented``).
        health: the health probe; defaults to ``device.health``. It is called without the device lock.
        transcript: an engine.transcript.Transcript for the tools' own events, or None.
        clock: monotonic clock (injectable for tests).
    """

    def __init__(
        self,
        device: Any,
        graph: Any,
        observer: Any = None,
        policies: Any = None,
        *,
        navigator: Any = None,
        health: Callable[[], Any] | None = None,
        transcript: Any = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.device = device
        self.graph = graph
        self.observer = observer
        self.policies = policies
        self.navigator = navigator
        self.transcript = transcript
        self._health = health or getattr(device, "health", None)
        self._clock = clock
        self.device_lock = threading.Lock()
        self._workers: set[threading.Thread] = set()
        self._workers_lock = threading.Lock()

    @classmethod
    def from_session(cls, session: Any) -> Tools:
        """Tools over an engine.session Session (device, graph, observer, policies, navigator, transcript)."""
        return cls(
            session.device,
            session.graph,
            getattr(session, "observer", None),
            getattr(session, "policies", None),
            navigator=getattr(session, "navigator", None),
            health=getattr(session, "health", None),
            transcript=getattr(session, "transcript", None),
        )

    # ------------------------------------------------------------------------------------------- public

    def bound(self, name: str) -> float:
        """The tool's hard bound in seconds: its policy's timeout, else the built-in default."""
        spec = SPECS[name]
        if spec.policy is not None and self.policies is not None:
            try:
                return float(self.policies.get(spec.policy).timeout)
            except (EngineError, KeyError, AttributeError):
                log.debug("no policy %r; %s keeps its default bound", spec.policy, name)
        return spec.default_bound

    def call(self, name: str, arguments: dict[str, Any] | None = None, *, cancel: threading.Event | None = None
             ) -> ToolResult:
        """Run tool `name` with `arguments`, bounded; never raises for a device or navigation failure."""
        if name not in SPECS:
            options = closest(name, list(SPECS))
            hint = f"; did you mean {', '.join(options)}?" if options else f"; tools: {', '.join(SPECS)}"
            return self._result(name, self._clock(), ok=False, status="bad_argument",
                                text=f"unknown tool {name!r}{hint}", extra={"suggestions": options})
        method = getattr(self, name)
        try:
            return method(**(arguments or {}), cancel=cancel)
        except TypeError as exc:
            return self._result(name, self._clock(), ok=False, status="bad_argument", text=f"{name}: {exc}")

    def adb_health(self, *, cancel: threading.Event | None = None) -> ToolResult:
        started = self._clock()

        def work(stop: threading.Event) -> ToolResult:
            if self._health is None:
                return self._result("adb_health", started, ok=False, status="not_implemented",
                                    text="this device has no health probe")
            health = self._health()
            body = health.to_dict() if hasattr(health, "to_dict") else dict(health)
            status = str(body.get("status") or getattr(health, "status", "unknown"))
            ok = bool(body.get("ok", status == "healthy"))
            detail = body.get("detail") or body.get("message") or ""
            text = f"device {status}" + (f": {detail}" if detail else "")
            return self._result("adb_health", started, ok=ok, status=status, text=text, tool_success=True,
                                state_verification="not_checked", extra={"health": body})

        return self._bounded("adb_health", work, cancel, started)

    def adb_screenshot(self, *, cancel: threading.Event | None = None) -> ToolResult:
        started = self._clock()

        def work(stop: threading.Event) -> ToolResult:
            frame = self.device.screenshot(allow_black=True)  # a black frame is an answer here, not an error
            black = is_black(frame)
            png = encode_png(frame)
            h, w = frame.shape[:2]
            text = f"{w}x{h} screenshot" + (" (black frame)" if black else "")
            result = self._result(
                "adb_screenshot", started, ok=True, status="black_frame" if black else "ok", text=text,
                tool_success=True, state_verification="not_checked",
                extra={"black_frame": black, "width": w, "height": h, "png_bytes": len(png)},
            )
            if black:
                result.data["screenshot_analysis"]["suggested_action"] = "restart_app"
            return ImageResult(result.ok, result.status, result.text, result.data, png=png)

        return self._bounded("adb_screenshot", work, cancel, started)

    def adb_tap(self, x: int, y: int, *, cancel: threading.Event | None = None) -> ToolResult:
        started = self._clock()
        problem = self._off_screen("tap", [(x, y)])
        if problem:
            return self._result("adb_tap", started, ok=False, status="bad_argument", text=problem,
                                target={"x": x, "y": y}, tool_success=False)

        def act() -> None:
            self.device.tap(int(x), int(y))

        return self._act("adb_tap", {"x": x, "y": y}, f"tapped ({x}, {y})", act, cancel, started)

    def adb_swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300, *,
                  cancel: threading.Event | None = None) -> ToolResult:
        started = self._clock()
        target = {"x1": x1, "y1": y1, "x2": x2, "y2": y2, "duration_ms": duration_ms}
        longest = int((self.bound("adb_swipe") - SWIPE_MARGIN_S) * 1000)
        problem = self._off_screen("swipe", [(x1, y1), (x2, y2)])
        if problem is None and not 1 <= duration_ms <= longest:
            problem = (f"swipe duration_ms={duration_ms} must be between 1 and {longest} "
                       f"so the swipe fits its {self.bound('adb_swipe'):g} s bound")
        if problem:
            return self._result("adb_swipe", started, ok=False, status="bad_argument", text=problem,
                                target=target, tool_success=False)

        def act() -> None:
            self.device.swipe(int(x1), int(y1), int(x2), int(y2), int(duration_ms))

        return self._act("adb_swipe", target, f"swiped ({x1}, {y1}) -> ({x2}, {y2}) in {duration_ms} ms", act,
                         cancel, started)

    def alas_state(self, *, cancel: threading.Event | None = None) -> ToolResult:
        started = self._clock()

        def work(stop: threading.Event) -> ToolResult:
            if self.navigator is not None and self.device_lock.acquire(blocking=False):
                try:
                    return self._renamed("alas_state", self.navigator.state(), started)
                finally:
                    self.device_lock.release()
            # A goto owns the device: look without moving its belief.
            obs = self._observe()
            busy = self.device_lock.locked()
            page = obs.page if obs is not None else None
            text = f"on {page}" if page else "on an unknown screen"
            if obs is not None and obs.popups:
                text += f" with {', '.join(obs.popups)}"
            if busy:
                text += " (an action is running; the belief is its own)"
            extra: dict[str, Any] = {"busy": busy}
            if self.navigator is not None:
                extra["belief"] = self.navigator.belief.to_dict(self._clock())
            return self._result("alas_state", started, ok=page is not None,
                                status="verified" if page else "unknown_screen", text=text, observation=obs,
                                tool_success=True, state_verification="observed", extra=extra)

        return self._bounded("alas_state", work, cancel, started)

    def alas_goto(self, page: str, *, cancel: threading.Event | None = None) -> ToolResult:
        started = self._clock()
        names = [p for p in self.graph.page_names if p != self.graph.unknown_page]
        page = canonical_page(self.graph, page)
        if page not in names:
            return self._unknown("alas_goto", started, "page", page, names)
        if self.navigator is None:
            return self._not_implemented("alas_goto", started, page)

        def work(stop: threading.Event) -> ToolResult:
            return self._renamed("alas_goto", self.navigator.goto(page, cancel=stop), started)

        return self._bounded("alas_goto", work, cancel, started, target=page, exclusive=True)

    def alas_tools(self, *, cancel: threading.Event | None = None) -> ToolResult:
        started = self._clock()
        if self.navigator is None:
            return self._not_implemented("alas_tools", started, None)

        def work(stop: threading.Event) -> ToolResult:
            tasks = [dict(t) for t in self.navigator.task_list()]
            names = ", ".join(t.get("name", "?") for t in tasks)
            return self._result("alas_tools", started, ok=True, status="ok",
                                text=f"{len(tasks)} task(s): {names}" if tasks else "no tasks",
                                tool_success=True, state_verification="not_checked", extra={"tasks": tasks})

        return self._bounded("alas_tools", work, cancel, started)

    def alas_run(self, name: str, *, cancel: threading.Event | None = None) -> ToolResult:
        started = self._clock()
        if self.navigator is None:
            return self._not_implemented("alas_run", started, name)
        try:
            names = [t["name"] for t in self.navigator.task_list()]
        except (EngineError, KeyError, TypeError) as exc:
            return self._result("alas_run", started, ok=False, status="error", text=f"cannot list tasks: {exc}")
        if name not in names:
            return self._unknown("alas_run", started, "task", name, names)

        def work(stop: threading.Event) -> ToolResult:
            return self._renamed("alas_run", self.navigator.run(name, cancel=stop), started)

        return self._bounded("alas_run", work, cancel, started, target=name, exclusive=True)

    def close(self, timeout: float = 2.0) -> None:
        """Wait a little for workers that are still finishing (they were told to stop when they timed out)."""
        deadline = self._clock() + timeout
        with self._workers_lock:
            workers = list(self._workers)
        for worker in workers:
            worker.join(max(0.0, deadline - self._clock()))

    # ------------------------------------------------------------------------------------------- bounding

    def _bounded(self, name: str, work: Work, cancel: threading.Event | None, started: float, *,
                 target: Any = None, exclusive: bool = False) -> ToolResult:
        """Run `work` on a worker thread; wait at most the tool's bound (or until `cancel`)."""
        bound = self.bound(name)
        deadline = started + bound
        stop = threading.Event()
        done = threading.Event()
        box: dict[str, Any] = {"phase": "starting"}

        def runner() -> None:
            try:
                if exclusive:
                    box["phase"] = "waiting for the device"
                    if not self._acquire(stop, deadline):
                        return
                    try:
                        box["phase"] = "running"
                        box["result"] = work(stop)
                    finally:
                        self.device_lock.release()
                else:
                    box["phase"] = "running"
                    box["result"] = work(stop)
            except DeviceError as exc:
                box["result"] = self._device_error(name, started, exc, target)
            except EngineError as exc:
                box["result"] = self._result(name, started, ok=False, status=exc.status, text=f"{name}: {exc}",
                                             target=target, extra={"error": exc.to_dict()})
            except Exception as exc:  # a bug must still come back as a result, never hang the caller
                log.exception("%s failed unexpectedly", name)
                box["result"] = self._result(name, started, ok=False, status="error",
                                             text=f"{name} failed: {type(exc).__name__}: {exc}", target=target)
            finally:
                done.set()
                with self._workers_lock:
                    self._workers.discard(threading.current_thread())

        worker = threading.Thread(target=runner, name=f"tool-{name}", daemon=True)
        with self._workers_lock:
            self._workers.add(worker)
        worker.start()
        while not done.is_set():
            remaining = deadline - self._clock()
            if remaining <= 0 or (cancel is not None and cancel.is_set()):
                break
            done.wait(min(remaining, POLL_S) if cancel is not None else remaining)
        if done.is_set() and "result" in box:
            return box["result"]
        stop.set()
        cancelled = cancel is not None and cancel.is_set() and not done.is_set()
        status = "cancelled" if cancelled else "timeout"
        what = f"{name}" + (f" {target}" if isinstance(target, str) else "")
        if cancelled:
            text = f"{what} was cancelled; it stops at its next checkpoint"
        else:
            text = f"{what} did not finish within {bound:g} s ({box['phase']})"
        result = self._result(name, started, ok=False, status=status, text=text, target=target,
                              tool_success=False, state_verification="not_checked",
                              suggested="retry" if box["phase"] == "waiting for the device" else None)
        if status == "timeout" and box["phase"] != "waiting for the device" and name.startswith("adb_"):
            result.data["screenshot_analysis"]["suggested_action"] = "reconnect"
        self._log_event("result", result)
        return result

    def _acquire(self, stop: threading.Event, deadline: float) -> bool:
        while not stop.is_set():
            remaining = deadline - self._clock()
            if remaining <= 0:
                return False
            if self.device_lock.acquire(timeout=min(remaining, POLL_S)):
                if stop.is_set():  # told to stop while waiting: do not act after all
                    self.device_lock.release()
                    return False
                return True
        return False

    def _act(self, name: str, target: dict[str, Any], done_text: str, act: Callable[[], None],
             cancel: threading.Event | None, started: float) -> ToolResult:
        """A device action under the lock, then an observation of its effect."""

        def work(stop: threading.Event) -> ToolResult:
            if stop.is_set():
                raise _Stopped()
            self._log_event("action", None, tool=name, target=target)
            act()
            if stop.is_set():
                raise _Stopped()
            obs = self._observe()
            if self.navigator is not None and obs is not None:
                self._relocalise(obs)
            page = obs.page if obs is not None else None
            text = done_text + (f"; now on {page}" if page else "; now on an unknown screen" if obs else "")
            result = self._result(name, started, ok=True, status="ok", text=text, target=target,
                                  observation=obs, tool_success=True, state_verification="observed")
            self._log_event("result", result)
            return result

        def guarded(stop: threading.Event) -> ToolResult:
            try:
                return work(stop)
            except _Stopped:
                return self._result(name, started, ok=False, status="cancelled",
                                    text=f"{name} stopped before acting", target=target, tool_success=False)

        return self._bounded(name, guarded, cancel, started, target=target, exclusive=True)

    # ------------------------------------------------------------------------------------------- helpers

    def _observe(self) -> Observation | None:
        if self.observer is None:
            return None
        frame = self.device.screenshot(allow_black=True)  # the observer reports black frames itself
        return self.observer.observe(frame)

    def _relocalise(self, obs: Observation) -> None:
        """A raw tap moved the game behind the navigator's back: the belief follows what was seen."""
        machine = getattr(self.navigator, "machine", None)
        relocalise = getattr(machine, "relocalise", None)
        if relocalise is None:
            return
        try:
            relocalise(obs.page if obs.page else self.graph.unknown_page, obs.confidence)
        except Exception as exc:  # the belief is advisory here; the observation already answered the caller
            log.debug("could not relocalise the belief to %s: %s", obs.page, exc)

    def _off_screen(self, what: str, points: list[tuple[int, int]]) -> str | None:
        width, height = self.graph.resolution
        for x, y in points:
            if not (0 <= x < width and 0 <= y < height):
                return (f"{what} point ({x}, {y}) is off the {width}x{height} screen: "
                        f"x must be in 0..{width - 1} and y in 0..{height - 1}")
        return None

    def _unknown(self, name: str, started: float, what: str, value: str, names: list[str]) -> ToolResult:
        options = closest(value, names)
        hint = f"; did you mean {', '.join(options)}?" if options else ""
        return self._result(name, started, ok=False, status=f"unknown_{what}", text=f"unknown {what} {value!r}{hint}",
                            target=value, expected=value, tool_success=False, extra={"suggestions": options})

    def _not_implemented(self, name: str, started: float, target: Any) -> ToolResult:
        return self._result(name, started, ok=False, status="not_implemented",
                            text=f"{name} needs the navigator, which this session does not have", target=target,
                            tool_success=False)

    def _device_error(self, name: str, started: float, exc: DeviceError, target: Any) -> ToolResult:
        return self._result(name, started, ok=False, status=exc.status, text=f"{name}: {exc}", target=target,
                            tool_success=False, state_verification="not_checked", extra={"error": exc.to_dict()})

    def _renamed(self, name: str, result: ToolResult, started: float) -> ToolResult:
        """A navigator result under the tool's name, with every documented data key present."""
        data = dict(result.data)
        data["tool"] = name
        data["elapsed_ms"] = round((self._clock() - started) * 1000, 1)
        base = self._result(name, started, ok=result.ok, status=result.status, text=result.text).data
        for key, value in base.items():
            data.setdefault(key, value)
        analysis = dict(base["screenshot_analysis"])
        analysis.update(data.get("screenshot_analysis") or {})
        data["screenshot_analysis"] = analysis
        return ToolResult(result.ok, result.status, result.text, data)

    def _result(self, name: str, started: float, *, ok: bool, status: str, text: str, target: Any = None,
                expected: Any = None, observation: Observation | None = None, attempts: int = 1,
                tool_success: bool | None = None, state_verification: str | None = None,
                suggested: str | None = None, extra: dict[str, Any] | None = None) -> ToolResult:
        obs = observation
        data: dict[str, Any] = {
            "tool": name,
            "target": target,
            "tool_success": ok if tool_success is None else tool_success,
            "state_verification": state_verification or ("verified" if ok else status),
            "expected": expected,
            "observed": obs.page if obs is not None else None,
            "attempts": attempts,
            "elapsed_ms": round((self._clock() - started) * 1000, 1),
            "evidence": [e.to_dict() for e in obs.evidence] if obs is not None else [],
            "screenshot_analysis": {
                "blocking_element": obs.popups[0] if obs is not None and obs.popups else None,
                "ocr_detected": [e.text for e in obs.evidence if e.text] if obs is not None else [],
                "suggested_action": suggested or (None if ok else suggested_action(status)),
            },
            "observation": obs.to_dict() if obs is not None else None,
        }
        if extra:
            data.update(extra)
        return ToolResult(ok=ok, status=status, text=text, data=data)

    def _log_event(self, kind: str, result: ToolResult | None, **fields: Any) -> None:
        if self.transcript is None:
            return
        if result is not None:
            fields = {"tool": result.data.get("tool"), "target": result.data.get("target"), "ok": result.ok,
                      "status": result.status, "text": result.text, **fields}
        try:
            self.transcript.record(kind, **fields)
        except (OSError, ValueError) as exc:
            log.warning("could not write the transcript: %s", exc)


class _Stopped(Exception):
    """The caller gave up before the action was sent."""
