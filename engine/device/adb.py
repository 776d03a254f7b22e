"""AdbDevice: the Device protocol over the ADB host protocol, through adbutils, every call bounded by a policy.

Screenshots use raw ``screencap`` (header + RGBA pixels) and fall back to ``screencap -p`` (PNG) when a device
sends something raw decoding cannot read; the choice is remembered for the device's lifetime. Frames of another
size of the graph's shape (1920x1080 for a 1280x720 graph) are scaled to the graph's resolution, and taps are
scaled back to the device's pixels.

Taps and swipes go through ``input`` or, when the control setting (``control=``, else the tap policy's ``control``)
allows, through a touch agent (engine.device.touch): ``auto`` starts the fastest that works (open_device does it as
the device opens, else the first touch) and health says which it took; an agent that breaks is dropped and
``input`` takes over.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

import adbutils
import numpy as np

from engine.config.policies import Policies, Policy, load_policies
from engine.core.errors import (
    AdbServerDown,
    BadFrame,
    BlackFrame,
    ConnectionLost,
    DeviceError,
    DeviceNotFound,
    DeviceOffline,
    DeviceTimeout,
)
from engine.device import frames
from engine.device.capture import Capture
from engine.device.address import adb_server_address, is_network_serial
from engine.device.base import keycode
from engine.device.client import BoundedClient
from engine.device.faults import classify
from engine.device.health import Health
from engine.device.touch import CONTROLS, TouchAgent, choose

log = logging.getLogger(__name__)

_CHUNK = 1 << 20


class AdbDevice:
    """A phone or emulator behind an ADB server.

    Args:
        serial: the device's serial as ``adb devices`` lists it (``emulator-5554``, ``127.0.0.1:21503``).
        resolution: the graph's reference (width, height); frames come back at this size.
        host, port: the ADB server (default: ANDROID_ADB_SERVER_HOST/PORT, else 127.0.0.1:5037).
        policies: retry and time bounds per tool (default: the shipped policies).
        sleep: replaces time.sleep between retries (tests).
        connect: run ``adb connect`` for a host:port serial the server does not list yet.
        control: ``adb`` (input tap), ``maatouch``, ``minitouch`` or ``auto``; default: the tap policy's control.
    """

    def __init__(
        self,
        serial: str,
        *,
        resolution: tuple[int, int] = (1280, 720),
        host: str | None = None,
        port: int | None = None,
        policies: Policies | None = None,
        sleep: Callable[[float], None] | None = None,
        connect: bool = True,
        control: str | None = None,
    ) -> None:
        self._serial = serial
        self._resolution = (int(resolution[0]), int(resolution[1]))
        self.host, self.port = adb_server_address(host, port)
        self.policies = policies or load_policies()
        self._sleep = sleep
        self._connect = connect and is_network_serial(serial)
        self._client = BoundedClient(self.host, self.port, default_bound=self.policies.get("health").timeout)
        self._adb = adbutils.AdbDevice(self._client, serial=serial)
        self.capture = Capture(self)
        """The capture methods and the order this device tries them in (engine.device.capture)."""
        self.frame_size: tuple[int, int] | None = None
        """The device's own (width, height), learnt from its frames."""
        self.frame_repairs: list[str] = []
        """What the last frame needed repaired (text before the image, CRLF damage); empty when nothing."""
        self._closed = False
        self._on_close: list[Callable[[], None]] = []
        self.sim = None
        """The embedded simulator behind this device, when open_device started one."""
        self._asked = control is not None
        self.control_wanted = control or getattr(self.policies.get("tap"), "control", None) or "adb"
        if self.control_wanted not in CONTROLS:
            raise ValueError(f"unknown control {self.control_wanted!r}; known: {', '.join(CONTROLS)}")
        self.control: str | None = None
        """What touches go through (adb, maatouch, minitouch) once chosen; None before the first touch."""
        self.control_note: str | None = None
        self._agent: TouchAgent | None = None

    # ---- Device protocol

    @property
    def serial(self) -> str:
        return self._serial

    @property
    def resolution(self) -> tuple[int, int]:
        return self._resolution

    def screenshot(self, *, allow_black: bool = False) -> np.ndarray:
        def once() -> np.ndarray:
            frame = self._screenshot_once()
            problem = None if allow_black else frames.frame_problem(frame)
            if problem:
                raise BlackFrame(f"the screen is {problem}", serial=self._serial, problem=problem)
            return frame

        return self._run("screenshot", once)

    def tap(self, x: int, y: int) -> None:
        dx, dy = self._to_device(x, y)
        self._touch("tap", lambda agent: agent.tap(dx, dy),
                    lambda: self._shell(f"input tap {dx} {dy}", doing=f"tap {x},{y}"))

    def swipe(self, x1: int, y1: int, x2: int, y2: int, duration_ms: int = 300) -> None:
        a, b = self._to_device(x1, y1), self._to_device(x2, y2)
        command = f"input swipe {a[0]} {a[1]} {b[0]} {b[1]} {int(duration_ms)}"
        self._touch("swipe", lambda agent: agent.swipe(*a, *b, int(duration_ms)),
                    lambda: self._shell(command, doing=f"swipe {x1},{y1}->{x2},{y2}"))

    def choose_control(self) -> str:
        """Start the touch agent the control setting asks for, once; returns what touches go through."""
        if self.control is None and not self._closed:
            if self.control_wanted == "adb":
                self.control, self.control_note = "adb", "adb: input tap (asked for)"
                return self.control
            screen = self.frame_size or self._device_screen()
            self._agent, self.control_note = choose(self, self.control_wanted, screen)
            self.control = self._agent.kind if self._agent else "adb"
            if self._agent is not None:
                self._agent.set_timeout(self.policies.get("tap").timeout)  # a hung agent ends inside the tap bound
            log.info("touch on %s: %s", self._serial, self.control_note)
        return self.control or "adb"

    def _device_screen(self) -> tuple[int, int]:
        try:
            with self._client.bounded(self.policies.get("health").timeout):
                text = self._adb.shell("wm size")
            size = text.strip().splitlines()[-1].split(":")[-1].strip()
            width, height = (int(v) for v in size.split("x"))
            return width, height
        except Exception:
            return self._resolution

    def _touch(self, tool: str, by_agent: Callable[[TouchAgent], None], by_input: Callable[[], object]) -> None:
        if self.choose_control() != "adb" and self._agent is not None:
            agent = self._agent

            def once() -> None:
                try:
                    by_agent(agent)
                except OSError as exc:
                    self._drop_agent(f"{agent.kind} broke ({exc}); using adb input from now on")
                    raise ConnectionLost(f"{tool} through {agent.kind}: {exc}", serial=self._serial) from exc

            try:
                self._run(tool, once)
                return
            except ConnectionLost:
                pass  # the agent is gone: this touch goes through input, like every later one
        self._run(tool, by_input)

    def _drop_agent(self, why: str) -> None:
        agent, self._agent = self._agent, None
        if agent is not None:
            agent.close()
        self.control, self.control_note = "adb", why
        log.info("touch on %s: %s", self._serial, why)

    def key(self, name_or_code: str | int) -> None:
        code = keycode(name_or_code)
        self._run("key", lambda: self._shell(f"input keyevent {code}", doing=f"key {name_or_code}"))

    def restart_app(self, package: str, activity: str | None = None) -> None:
        """Force-stop the game's app and launch it again (the scheduler's restart), each under the `app` policy."""
        import shlex

        self._run("app", lambda: self._shell(f"am force-stop {shlex.quote(package)}", doing=f"force-stop {package}"))
        launch = (f"am start -n {shlex.quote(f'{package}/{activity}')}" if activity else
                  f"monkey -p {shlex.quote(package)} -c android.intent.category.LAUNCHER 1")
        self._run("app", lambda: self._shell(launch, doing=f"launch {package}"))

    def health(self) -> Health:
        """Probe server, device and screen in that order, inside the health policy's bound; never raises."""
        bound = self.policies.get("health").timeout
        start = time.monotonic()
        found = {"adb_connected": False, "emulator_running": False}

        def done(status: str, error: BaseException | str | None = None, **more) -> Health:
            return Health(
                status=status,  # type: ignore[arg-type]
                serial=self._serial,
                error=str(error) if error else None,
                latency_ms=(time.monotonic() - start) * 1000,
                screenshot_method=self.screenshot_method,
                capture_note=self.capture.note,
                control=self.control,
                control_note=self.control_note,
                **{**found, **more},
            )

        with self._client.bounded(bound):
            try:
                state = self._device_state()
            except Exception as exc:
                err = classify(exc, self._serial, doing="health")
                return done(_HEALTH_STATUS.get(type(err), "timeout"), err)
            found["adb_connected"] = True
            if state is None:
                return done("device_missing", f"{self._serial} is not among the ADB server's devices")
            if state != "device":
                return done("device_offline", f"{self._serial} is {state}")
            found["emulator_running"] = True
            try:
                frame = self._bounded_attempt("health", self._screenshot_once)
            except Exception as exc:
                err = classify(exc, self._serial, doing="health screenshot")
                return done(_HEALTH_STATUS.get(type(err), "device_offline"), err)
        if self.control is None:  # starting an agent takes seconds on a phone: open_device or the first touch does
            if self.control_wanted == "adb":
                self.choose_control()
            else:
                self.control_note = f"{self.control_wanted}: chosen at the first touch"
        problem = frames.frame_problem(frame)
        if problem:
            return done("black_screen", f"the screen is {problem}", black_frame=True, frame_size=self.frame_size)
        return done("healthy", screenshot_ok=True, frame_size=self.frame_size)

    def listed_state(self) -> str | None:
        """The serial's state in the server's list (``device``, ``offline``, ...; a host:port serial is ``adb
        connect``-ed first), None when absent; within the health policy's bound, never raises (None then)."""
        try:
            with self._client.bounded(self.policies.get("health").timeout):
                return self._device_state()
        except Exception:  # the probe's answer is "not there"; health says why
            return None

    def _device_state(self) -> str | None:
        """The serial's state in the server's device list (``device``, ``offline``, ...), None when absent."""
        states = {info.serial: info.state for info in self._client.list()}
        if self._serial not in states and self._connect:
            try:
                self._adb_connect()
            except DeviceNotFound as exc:
                log.info("%s", exc)
                return None
            states = {info.serial: info.state for info in self._client.list()}
        return states.get(self._serial)

    def reconnect(self) -> None:
        """Forget what the server told us and, for a host:port serial, ``adb disconnect`` + ``adb connect``.

        Two tries, each bounded by the health policy; failures are logged, not raised (the next attempt reports
        them).
        """
        self._client.forget_version()
        if not self._connect:
            return
        for attempt in (1, 2):  # a reconnect that fails once (the server was busy) is tried once more
            try:
                with self._client.bounded(self.policies.get("health").timeout):
                    self._client.disconnect(self._serial)
                    answer = self._client.connect(self._serial)
                log.info("reconnect %s: %s", self._serial, answer)
                return
            except (adbutils.AdbError, OSError) as exc:
                log.info("reconnect %s failed (attempt %d): %s", self._serial, attempt, classify(exc, self._serial))

    def close(self) -> None:
        # Every call opens its own connection, so only what others attached (an embedded simulator) is released.
        if self._closed:
            return
        self._closed = True
        if self._agent is not None:
            self._agent.close()
            self._agent = None
        self.capture.close()
        for callback in reversed(self._on_close):
            callback()

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call `callback` when the device is closed (engine.runtime.devices.open_simulated stops its simulator so)."""
        self._on_close.append(callback)

    def __enter__(self) -> AdbDevice:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"AdbDevice({self._serial!r} at {self.host}:{self.port})"

    # ---- the moving parts

    def _run(self, tool: str, fn: Callable[[], object]):
        """Run `fn` under `tool`'s policy: every attempt inside the policy's hard bound, retries as it says."""
        if self._closed:
            raise DeviceError("the device was closed", serial=self._serial)
        policy: Policy = self.policies.get(tool)
        hook = (lambda state: self.reconnect()) if policy.reconnect else None
        with self._client.bounded(policy.timeout):
            retrying = policy.retrying(sleep=self._sleep, before_sleep=hook)
            return retrying(self._bounded_attempt, tool, fn)

    def _bounded_attempt(self, tool: str, fn: Callable[[], object]):
        left = self._client.remaining()
        if left is not None and left <= 0:
            raise DeviceTimeout(f"{tool}: no time left in its bound", serial=self._serial)
        try:
            return fn()
        except DeviceError:
            raise
        except Exception as exc:
            raise classify(exc, self._serial, doing=tool) from exc

    def _exec(self, command: str) -> bytes:
        """Everything `command` prints, read until the device closes the stream (or the deadline passes)."""
        try:
            conn = self._adb.open_transport()
        except adbutils.AdbError as exc:
            if self._connect and _names_missing_device(exc):
                self._adb_connect()
                conn = self._adb.open_transport()
            else:
                raise
        try:
            conn.send_command("shell:" + command)
            conn.check_okay()
            sock = conn.conn
            out = bytearray()
            buffer = bytearray(_CHUNK)
            view = memoryview(buffer)
            while True:
                n = sock.recv_into(view, _CHUNK)
                if not n:
                    return bytes(out)
                out += view[:n]
        finally:
            conn.close()

    def _shell(self, command: str, *, doing: str) -> str:
        text = self._exec(command).decode("utf-8", errors="replace").strip()
        # `input` prints nothing when it worked; an error text means the device refused the command.
        if text and ("error" in text.lower() or "exception" in text.lower()):
            raise DeviceError(f"{doing}: the device answered {text[:200]!r}", serial=self._serial)
        return text

    def _adb_connect(self) -> None:
        answer = self._client.connect(self._serial)
        log.info("adb connect %s: %s", self._serial, answer)
        if "unable" in answer or "failed" in answer or "cannot" in answer:
            raise DeviceNotFound(f"adb connect {self._serial}: {answer}", serial=self._serial)

    @property
    def screenshot_method(self) -> str | None:
        """The capture method frames come by (raw, gzip, nc, png) once one gave a frame; None before."""
        return self.capture.method

    @screenshot_method.setter
    def screenshot_method(self, method: str) -> None:
        self.capture.prefer(method)

    def _screenshot_once(self) -> np.ndarray:
        return self._fit(self.capture.grab())

    def _repaired(self, data: bytes, repairs: list[str]) -> bytes:
        if repairs and repairs != self.frame_repairs:
            log.info("frames of %s repaired: %s", self._serial, "; ".join(repairs))
        self.frame_repairs = repairs
        return data

    def _fit(self, frame: np.ndarray) -> np.ndarray:
        portrait, want_portrait = frame.shape[0] > frame.shape[1], self._resolution[1] > self._resolution[0]
        if portrait != want_portrait:  # a frame across the graph's orientation: turn it by the display's rotation
            rotation = next((r for r in (frames.display_rotation(self._exec(f"dumpsys {what}").decode(
                "utf-8", "replace")) for what in ("display", "input")) if r is not None), None)
            if rotation in (1, 3):
                frame = frames.turn(frame, rotation)
        self.frame_size = (frame.shape[1], frame.shape[0])
        return frames.fit(frame, self._resolution)

    def _to_device(self, x: int, y: int) -> tuple[int, int]:
        width, height = self._resolution
        if not (0 <= x < width and 0 <= y < height):
            raise ValueError(f"point {x},{y} is outside the {width}x{height} screen")
        if self.frame_size is None or self.frame_size == self._resolution:
            return int(x), int(y)
        fw, fh = self.frame_size
        return int(round(x * fw / width)), int(round(y * fh / height))


_HEALTH_STATUS = {
    AdbServerDown: "adb_server_down",
    DeviceNotFound: "device_missing",
    DeviceOffline: "device_offline",
    ConnectionLost: "device_offline",
    DeviceTimeout: "timeout",
    BadFrame: "bad_frame",
}


def _names_missing_device(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "not found" in text or "no such device" in text

