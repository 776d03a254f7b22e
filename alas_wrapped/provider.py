"""alas_run alas:<Task>: a user's own AzurLaneAutoScript task, run by ALAS's interpreter in a killable worker.

The engine lists and runs these through engine.providers (which also verifies the screen afterwards). Here: which
names are ALAS's, which policy bounds each (``alas:<Task>`` when the policy file has one, else ``alas``), and one run:
ALAS's Python starts alas_wrapped/driver.py in its own process group, pointed at the same device serial and ADB
server as the engine; its output lines stream into the run's transcript (and the log, on stderr); at the bound, on
cancel or at engine shutdown the whole group is killed (TERM, then KILL) and checked gone.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from alas_wrapped.checkout import LOGIN_LIKE, PREFIX, Checkout
from alas_wrapped.driver import MARK
from alas_wrapped.worker import Worker
from engine.providers import ExternalRun

if TYPE_CHECKING:
    from engine.context import RunContext

log = logging.getLogger(__name__)

DRIVER = Path(__file__).resolve().parent / "driver.py"
LOGIN_TASK = "login"
"""Our own bounded login task, which the refusal of ALAS's login-like tasks points to."""
ALAS_ADB_SERVER = ("127.0.0.1", 5037)
"""The ADB server real ALAS always uses (``AdbClient('127.0.0.1', 5037)``); adbutils-based tools read the
ANDROID_ADB_SERVER_* variables the worker also gets."""
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
        return [{"name": PREFIX + t.name, "description": t.description, "kind": "alas"}
                for t in self.checkout.tasks if not LOGIN_LIKE.search(t.name)]

    def owns(self, name: str) -> bool:
        """ALAS's tasks, and its login-like ones (so that alas_run refuses them with a pointer, not "unknown")."""
        task = name[len(PREFIX):] if name.startswith(PREFIX) else None
        return task is not None and (task in {t.name for t in self.checkout.tasks} or bool(LOGIN_LIKE.search(task)))

    def policy_names(self, name: str) -> list[str]:
        return [name, "alas"]

    # -------------------------------------------------------------------------------------------- running

    def run(self, name: str, ctx: RunContext, device: Any, budget_s: float) -> ExternalRun:
        task = name[len(PREFIX):]
        known = {t.name for t in self.checkout.tasks}
        if LOGIN_LIKE.search(task):
            return ExternalRun(False, "refused", f"{name} runs ALAS's blocking login loop (a `while 1` of up to "
                               f"300 s), which is never a tool: use our bounded `{LOGIN_TASK}` task instead")
        if task not in known:
            return ExternalRun(False, "not_started", f"{name}: ALAS at {self.checkout.root} declares no task "
                               f"{task!r}")
        server = (getattr(device, "host", None), getattr(device, "port", None))
        if server[0] is not None and server != ALAS_ADB_SERVER:
            log.warning("%s: the device is behind the ADB server %s:%s, but ALAS connects to %s:%s (hard-coded in "
                        "its module/device/connection.py); serve the device there for ALAS to reach it",
                        name, *server, *ALAS_ADB_SERVER)
        worker = Worker(self._argv(task, device), cwd=self.checkout.root, env=self._env(device))
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
        argv = [self.checkout.python, "-u", str(DRIVER), "--root", str(self.checkout.root), "--config",
                self.checkout.config, "--task", task]
        serial = getattr(device, "serial", None)
        return argv + (["--serial", str(serial)] if serial else [])

    @staticmethod
    def _env(device: Any) -> dict[str, str]:
        """Our environment without its secrets (API keys are none of ALAS's business), with the ADB server the
        engine's device uses (ALAS's adbutils reads these)."""
        from engine.redact import is_secret_key

        env = {k: v for k, v in os.environ.items() if not is_secret_key(k)}
        env.update(PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8")
        host, port = getattr(device, "host", None), getattr(device, "port", None)
        if host:
            env["ANDROID_ADB_SERVER_HOST"] = str(host)
        if port:
            env["ANDROID_ADB_SERVER_PORT"] = str(port)
        return env

    @staticmethod
    def _stream(ctx: RunContext, name: str, lines: list[str]) -> None:
        from engine.redact import redact

        for line in lines:
            ctx.record("worker_log", task=name, line=line)
            log.info("%s | %s", name, redact(line))

    def _report(self, name: str, end: str, worker: Worker, survivors: list[int], budget_s: float) -> ExternalRun:
        last = list(worker.last)
        verdict = _verdict(last)
        code = worker.returncode
        extra = {"pid": worker.pid, "exit_code": code, "killed": worker.killed,
                 "survivors": survivors, "last_lines": last[-SHOWN_LINES:], "dropped_lines": worker.dropped}
        if verdict is not None and verdict.get("error"):
            extra["error"] = verdict["error"]
        if end == "timeout":
            return ExternalRun(False, "timeout", f"{name} did not finish within {budget_s:.1f} s: its process "
                               f"group was killed", extra)
        if end == "cancelled":
            return ExternalRun(False, "cancelled", f"{name} was cancelled: its process group was killed", extra)
        claimed = code == 0 and bool(verdict and verdict.get("ok"))
        said = "succeeded" if claimed else f"failed (exit {code}" + (f": {verdict['error']}" if verdict and
                                                                    verdict.get("error") else "") + ")"
        return ExternalRun(claimed, "exited", f"ALAS says {name} {said}", extra)

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


def _verdict(lines: list[str]) -> dict[str, Any] | None:
    """The driver's ALAS_WRAPPED_RESULT line, if it printed one."""
    for line in reversed(lines):
        if line.startswith(MARK + " "):
            try:
                value = json.loads(line[len(MARK) + 1:])
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None
