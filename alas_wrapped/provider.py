"""alas_run alas:<Task>: a user's own AzurLaneAutoScript task, run by ALAS's interpreter in a killable worker.

The engine lists and runs these through engine.tasks.providers (which also verifies the screen afterwards). Here: which
names are ALAS's, which policy bounds each (``alas:<Task>`` when the policy file has one, else ``alas``), and one run:
ALAS's Python starts alas_wrapped/driver.py in its own process group, pointed at the engine's device (its serial,
and its ADB server's port through ANDROID_ADB_SERVER_PORT, which ALAS's ``adb_client`` honours); its output lines
(ALAS's log) stream into the run's transcript (and the log, on stderr); at the bound, on cancel or at engine shutdown
the whole group is killed (TERM, then KILL) and checked gone; how it ended is read as ALAS's own exception class
(alas_wrapped.outcomes).
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from alas_wrapped.checkout import LOGIN_LIKE, PREFIX, Checkout, worker_env
from alas_wrapped.driver import marked
from alas_wrapped.interpreter import PROBE_TIMEOUT_S
from alas_wrapped.outcomes import read_outcome
from alas_wrapped.worker import Worker
from engine.core.errors import ProbeTimeout
from engine.tasks.providers import ExternalRun

if TYPE_CHECKING:
    from engine.core.context import RunContext

log = logging.getLogger(__name__)

DRIVER = Path(__file__).resolve().parent / "driver.py"
ALAS_ADB_HOST = "127.0.0.1"
"""The ADB server host ALAS always uses (``AdbClient('127.0.0.1', port)`` in its module/device/connection_attr.py);
the port it takes from ANDROID_ADB_SERVER_PORT, else 5037."""
LOOPBACK = {"127.0.0.1", "localhost", "::1"}
SHOWN_LINES = 10
"""Last output lines in the result."""


class AlasProvider:
    """The tasks of one ALAS checkout."""

    def __init__(self, checkout: Checkout) -> None:
        self.checkout = checkout
        self._current: Worker | None = None
        self._task: str | None = None
        self._lock = threading.Lock()
        atexit.register(self.close)  # a backstop: however the engine exits, no worker outlives it

    # -------------------------------------------------------------------------------------------- listing

    def describe(self) -> list[dict[str, Any]]:
        """ALAS's tasks, as its files declare them: no interpreter is started, so listing answers within alas_tools'
        bound however slow ALAS's Python is (alas_run checks the interpreter, inside its own bound)."""
        return [{"name": PREFIX + t.name, "description": t.description, "kind": "alas", "menu": t.menu,
                 "enabled": t.enabled, "next_run": t.next_run} for t in self.checkout.tasks]

    def owns(self, name: str) -> bool:
        """Every name of ALAS's task.yaml (so that alas_run refuses settings groups and GUI tools with the reason,
        not "unknown"), and login-like names (refused with a pointer to ours)."""
        task = name[len(PREFIX):] if name.startswith(PREFIX) else None
        return task is not None and (self.checkout.task(task) is not None or bool(LOGIN_LIKE.search(task)))

    def policy_names(self, name: str) -> list[str]:
        return [name, "alas"]

    # -------------------------------------------------------------------------------------------- running

    def run(self, name: str, ctx: RunContext, device: Any, budget_s: float) -> ExternalRun:
        task = name[len(PREFIX):]
        refusal = self.checkout.refusal(task)
        if refusal is not None:
            return ExternalRun(False, "refused", refusal, suggested="human")
        checking = time.monotonic()
        try:  # ConfigError (bad input) when no Python here can run this ALAS; costs once per checkout and Python
            self.checkout.interpreter(timeout=min(self.checkout.probe_timeout or PROBE_TIMEOUT_S, budget_s))
        except ProbeTimeout as exc:
            return ExternalRun(False, "timeout", f"{name} did not start: checking ALAS's Python took the whole "
                               f"{budget_s:.1f} s bound ({exc}); the worker was never started",
                               {"skipped": "worker", "probe": "timeout"}, suggested="retry")
        budget_s = max(0.0, budget_s - (time.monotonic() - checking))
        if (warning := adb_warning(name, device)) is not None:
            log.warning("%s", warning)
        port = getattr(device, "port", None)  # an adb server ALAS starts there must not outlive the run
        worker = Worker(self._argv(task, device), cwd=self.checkout.root, env=self._env(device),
                        adb_port=port if isinstance(port, int) else None)
        try:
            worker.start()
        except OSError as exc:
            return ExternalRun(False, "not_started", f"{name}: cannot start {self.checkout.python}: {exc}")
        with self._lock:
            self._current, self._task = worker, name
        log.info("%s: worker %d started (bound %.1f s)", name, worker.pid, budget_s)
        end = "error"
        try:
            # The worker is a real process: its deadline is on the worker's (real) clock, whatever the run's is.
            end = worker.wait(worker.clock() + budget_s, ctx.cancel, lambda lines: self._stream(ctx, name, lines))
        finally:  # however the wait ended (even by an exception here), nothing of the group is left running
            survivors = worker.kill({"exited": "leftovers after exit"}.get(end, end))
            with self._lock:
                self._current, self._task = None, None
        self._stream(ctx, name, worker.drain())
        return self._report(name, end, worker, survivors, budget_s)

    def _argv(self, task: str, device: Any) -> list[str]:
        argv = [self.checkout.interpreter(), "-u", str(DRIVER), "--root", str(self.checkout.root), "--config",
                self.checkout.config, "--task", task]
        serial = getattr(device, "serial", None)
        return argv + (["--serial", str(serial)] if serial else [])

    @staticmethod
    def _env(device: Any) -> dict[str, str]:
        """worker_env with the port of the ADB server the engine's device is behind (ALAS's adb_client and the
        adb binary it runs read ANDROID_ADB_SERVER_PORT)."""
        env = worker_env()
        host, port = getattr(device, "host", None), getattr(device, "port", None)
        if host:
            env["ANDROID_ADB_SERVER_HOST"] = str(host)
        if port:
            env["ANDROID_ADB_SERVER_PORT"] = str(port)
        return env

    @staticmethod
    def _stream(ctx: RunContext, name: str, lines: list[str]) -> None:
        from engine.core.redact import redact

        for line in lines:
            ctx.record("worker_log", task=name, line=line)
            log.info("%s | %s", name, redact(line))

    def _report(self, name: str, end: str, worker: Worker, survivors: list[int], budget_s: float) -> ExternalRun:
        last = list(worker.last)
        verdict = marked(last)
        code = worker.returncode
        extra: dict[str, Any] = {"pid": worker.pid, "exit_code": code, "killed": worker.killed,
                                 "survivors": survivors, "last_lines": last[-SHOWN_LINES:],
                                 "dropped_lines": worker.dropped, "adb_servers_ended": worker.strays}
        if verdict is not None and verdict.get("error"):
            extra["error"] = verdict["error"]
        if end == "timeout":
            return ExternalRun(False, "timeout", f"{name} did not finish within {budget_s:.1f} s: its process "
                               f"group was killed", extra)
        if end == "cancelled":
            return ExternalRun(False, "cancelled", f"{name} was cancelled: its process group was killed", extra)
        outcome = read_outcome(verdict, last, code)
        extra["alas"] = outcome.to_dict()
        if outcome.status == "exited":
            return ExternalRun(True, "exited", f"ALAS says {name} succeeded", extra)
        said = outcome.exception or f"exit {code}"
        message = (verdict or {}).get("message") or (verdict or {}).get("error")
        return ExternalRun(False, outcome.status, f"ALAS ended {name} with {said}" + (f": {message}" if message
                                                                                      else ""), extra,
                           suggested=outcome.suggested)

    # -------------------------------------------------------------------------------------------- answers

    def state(self) -> dict[str, Any]:
        with self._lock:
            worker, task = self._current, self._task
        if worker is None:
            return {"running": None}
        since = worker.clock() - (worker.started_at or worker.clock())
        return {"running": {"task": task, "pid": worker.pid, "seconds": round(since, 2),
                            "last_lines": list(worker.last)[-SHOWN_LINES:]}}

    def health(self) -> dict[str, Any]:
        return {"alas": {**self.checkout.to_dict(), **self.state()}}

    def close(self) -> None:
        with self._lock:
            worker = self._current
        if worker is not None:
            worker.kill("engine shutdown")


def adb_warning(name: str, device: Any) -> str | None:
    """What to warn about before ALAS runs on `device`, or None: ALAS reaches any port of an ADB server on
    127.0.0.1 (the worker passes it ANDROID_ADB_SERVER_PORT), but no server on another host."""
    host, port = getattr(device, "host", None), getattr(device, "port", None)
    if host is None or str(host) in LOOPBACK:
        return None
    return (f"{name}: the device is behind the ADB server {host}:{port}, but ALAS only connects to an ADB server on "
            f"{ALAS_ADB_HOST} (its module/device/connection_attr.py); it will look for serial "
            f"{getattr(device, 'serial', None)} there")
