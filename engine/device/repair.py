"""The repair ladder for a dropped link: reconnect, then restart the ADB server when the engine owns it, then the
emulator's own restart command for that instance; each step bounded, logged, and handed to `record` (the transcript).

Every answer of the ADB server that means a broken link is classified first, so the ladder knows which step can help:
connect's replies (connected, already connected, refused, bad port, failed), the device list's offline and
unauthorized rows, and the failures of a request ("device not found", "device offline", "closed", "unknown host
service"). Some answers stop the ladder early because no later step helps: a bad port (the serial is wrong), an
unauthorized device (a person must accept the prompt), an unknown host service (the server is another adb, which
neither a reconnect nor the emulator's restart changes).
"""

from __future__ import annotations

import logging
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

log = logging.getLogger(__name__)

RESTART_COMMAND_BOUND = 60.0
"""Seconds one of the emulator's restart commands may run."""
EMULATOR_UP_BOUND = 120.0
"""Seconds an emulator gets to answer healthy after its restart commands."""


def classify_connect(reply: str) -> str:
    """What ``adb connect``'s reply means: connected, already connected, refused, bad port, failed or unknown.

    The replies are adb's own (AOSP adb/client/adb_client / socket_spec: "connected to", "already connected to",
    "failed to connect to ...: Connection refused", "bad port number"), and the Windows wording ALAS matches
    ("(10061)" for refused)."""
    text = reply.lower()
    if text.startswith("already connected"):
        return "already connected"
    if text.startswith("connected to"):
        return "connected"
    if "bad port" in text or "invalid port" in text:
        return "bad port"
    if "refused" in text or "(10061)" in text:
        return "refused"
    if "failed" in text or "unable" in text or "cannot" in text:
        return "failed"
    return "unknown"


def classify_failure(text: str) -> str:
    """What a failed request's message means: device not found, device offline, unauthorized, closed, unknown host
    service, server down, or other. An unknown host service is looked for first: a health record's status word
    (``device_offline: ...``) may precede adb's own."""
    lower = text.lower()
    for needle, kind in (("unknown host service", "unknown host service"), ("unauthorized", "unauthorized"),
                         ("offline", "device offline"), ("not found", "device not found"),
                         ("no devices", "device not found"), ("refused", "server down"),
                         ("closed", "closed"), ("reset", "closed"), ("timed out", "timeout"),
                         ("no answer", "timeout")):
        if needle in lower:
            return kind
    return "other"


@dataclass
class Step:
    name: str
    outcome: str
    """ok, failed, skipped or stop (no later step can help)."""
    detail: str
    elapsed_ms: float = 0.0


@dataclass
class Repair:
    serial: str
    steps: list[Step] = field(default_factory=list)
    ok: bool = False
    advice: str | None = None
    """What a person should do when the ladder could not help."""

    def to_dict(self) -> dict[str, Any]:
        return {"serial": self.serial, "ok": self.ok, "advice": self.advice,
                "steps": [asdict(s) for s in self.steps]}

    def describe(self) -> str:
        done = ", ".join(f"{s.name}: {s.outcome}" for s in self.steps) or "nothing tried"
        return (f"{self.serial} repaired ({done})" if self.ok else
                f"{self.serial} not repaired ({done}){'; ' + self.advice if self.advice else ''}")


class Ladder:
    """The ladder for one device.

    Args:
        device: an engine.device.AdbDevice (its health(), serial, host, port and client are used).
        restart: the instance's restart commands (the devices file's ``restart:``), run in order.
        record: called with ("repair", entry) for every step (the session's transcript).
        sleep: waits between health probes while the emulator comes up (tests pass a fake).
        run: runs one restart command (default: subprocess.run, bounded).
    """

    def __init__(self, device: Any, *, restart: Sequence[str] = (), record: Callable[[str, dict], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep, run: Callable[..., Any] | None = None,
                 emulator_up_bound: float = EMULATOR_UP_BOUND) -> None:
        self.device, self.restart = device, list(restart)
        self.record, self.sleep, self.run = record, sleep, run or subprocess.run
        self.emulator_up_bound = emulator_up_bound

    def repair(self) -> Repair:
        result = Repair(self.device.serial)
        for name, step in (("reconnect", self._reconnect), ("restart_adb_server", self._restart_server),
                           ("restart_emulator", self._restart_emulator)):
            done = self._step(result, name, step)
            if done.outcome == "ok":
                result.ok = True
                return result
            if done.outcome == "stop":
                result.advice = done.detail
                return result
        result.advice = ("the device did not come back: check the emulator, or declare its restart commands in the "
                         "devices file (`python -m engine devices` prints them)") if not self.restart else \
            "the device did not come back after the emulator's restart: it needs a look"
        return result

    def restart_instance(self) -> Repair:
        """Only the last step: the emulator's restart commands, then wait for the device (the scheduler's step after
        a game restart that did not help)."""
        result = Repair(self.device.serial)
        result.ok = self._step(result, "restart_emulator", self._restart_emulator).outcome == "ok"
        return result

    def _step(self, result: Repair, name: str, step: Callable[[], tuple[str, str]]) -> Step:
        start = time.monotonic()
        try:
            outcome, detail = step()
        except Exception as exc:  # noqa: BLE001 - a step that breaks is a failed step, never a crash
            outcome, detail = "failed", f"{type(exc).__name__}: {exc}"
        done = Step(name, outcome, detail, (time.monotonic() - start) * 1000)
        self._note(result, done)
        return done

    def _note(self, result: Repair, step: Step) -> None:
        result.steps.append(step)
        log.info("repair %s: %s %s (%s, %.0f ms)", result.serial, step.name, step.outcome, step.detail,
                 step.elapsed_ms)
        if self.record is not None:
            self.record("repair", {"serial": result.serial, **asdict(step)})

    def _healthy(self) -> tuple[bool, str]:
        health = self.device.health()
        return health.ok, f"{health.status}{': ' + health.error if health.error else ''}"

    # ---- the steps

    def _reconnect(self) -> tuple[str, str]:
        from engine.device.adb import is_network_serial

        client, serial = getattr(self.device, "_client", None), self.device.serial
        if client is None:  # a Device with no adbutils client underneath: its own reconnect, then a look
            self.device.reconnect()
            ok, health = self._healthy()
            return ("ok" if ok else "failed"), f"reconnected; health {health}"
        with client.bounded(self.device.policies.get("health").timeout):
            try:
                states = {info.serial: info.state for info in client.list()}
            except Exception as exc:  # noqa: BLE001 - the server itself is unreachable: the next step's business
                if classify_failure(str(exc)) == "unknown host service":
                    return "stop", self._foreign_server(str(exc))
                return "failed", f"the ADB server does not answer ({classify_failure(str(exc))}: {exc})"
            state = states.get(serial)
            if state == "unauthorized":
                return "stop", "the device is unauthorized: accept the USB debugging prompt on its screen"
            reply = "not a host:port serial: nothing to connect"
            if is_network_serial(serial):
                if state is not None and state != "device":
                    client.disconnect(serial)  # ALAS adb_connect: an offline row is disconnected first
                reply = client.connect(serial)
                kind = classify_connect(reply)
                if kind == "bad port":
                    return "stop", f"adb connect {serial}: {reply}: the serial is wrong"
                if kind in ("refused", "failed"):
                    return "failed", f"adb connect {serial}: {reply} ({kind})"
        client.forget_version()
        ok, health = self._healthy()
        if not ok and classify_failure(health) == "unknown host service":  # no later step teaches it the request
            return "stop", self._foreign_server(health)
        return ("ok" if ok else "failed"), f"{reply}; health {health}"

    def _foreign_server(self, error: str) -> str:
        port = getattr(self.device, "port", None)
        return (f"the ADB server{f' on port {port}' if port else ''} does not know a request of the engine's adb "
                f"({error}): it is another adb; `python -m engine devices` prints both versions: set ENGINE_ADB to "
                f"the server's adb, or stop that server (ENGINE_ADB_TAKEOVER=1 lets the engine restart it)")

    def _restart_server(self) -> tuple[str, str]:
        from engine.device import adbserver

        host, port = getattr(self.device, "host", None), getattr(self.device, "port", None)
        if port is None:
            return "skipped", "the device is behind no ADB server the engine can restart"
        if not (adbserver.is_owned(port) or adbserver.takeover_allowed()):
            return "skipped", (f"the ADB server on port {port} is not the engine's: not restarted "
                               f"({adbserver.TAKEOVER_ENV}=1 allows it)")
        adbserver.kill(host, port, force=True)
        version = adbserver.start(host, port)
        outcome, detail = self._reconnect()
        return outcome, f"server restarted (1.0.{version}); {detail}"

    def _restart_emulator(self) -> tuple[str, str]:
        if not self.restart:
            return "skipped", "no restart command declared for this device (the devices file's restart:)"
        for command in self.restart:
            argv = [a[1:-1] if len(a) > 1 and a[0] == a[-1] == '"' else a  # Windows keeps quotes in tokens
                    for a in shlex.split(command, posix=sys.platform != "win32")]
            done = self.run(argv, capture_output=True, text=True, timeout=RESTART_COMMAND_BOUND)
            code = getattr(done, "returncode", 0)
            if code:
                return "failed", f"{command!r} exited {code}: {(getattr(done, 'stderr', '') or '').strip()[:200]}"
        end = time.monotonic() + self.emulator_up_bound
        detail = "not probed"
        while time.monotonic() < end:
            outcome, detail = self._reconnect()
            if outcome in ("ok", "stop"):
                return outcome, f"emulator restarted; {detail}"
            self.sleep(2.0)
        return "failed", f"emulator restarted but the device did not answer within {self.emulator_up_bound:.0f} s " \
                         f"({detail})"
