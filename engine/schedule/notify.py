"""The scheduler's notifications through Apprise: one URL per channel, rate-limited, never blocking the scheduler.

Channels (what a person should hear about): ``needs_human`` (a task failed in a way only a person can fix, or was
put off after its retries), ``restart`` (the game was restarted), ``device_lost`` (the device stopped answering),
``stopped`` (the scheduler stopped), ``database`` (the schedule's database server stopped answering). The user's file (``--notify FILE``, default ``$ENGINE_HOME/notify.yaml``):

    channels:
      needs_human: tgram://BOT_TOKEN/CHAT_ID        # any Apprise URL: https://github.com/caronc/apprise/wiki
      device_lost: [mailto://user:pass@example.com, json://127.0.0.1:8080/hook]
      restart: discord://WEBHOOK_ID/WEBHOOK_TOKEN
      stopped: json://127.0.0.1:8080/hook
    min_interval_s: 600    # one message per channel and device per interval; the ones held back are counted

Messages go out from one background thread through a bounded queue (the oldest is dropped when it is full), each
send bounded by Apprise's own connect/read timeouts and by SEND_BOUND_S: a dead notification service can never hold
a device. The URLs carry secrets: they are given to the redactor and never logged.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import Field, ValidationError

from engine.config.schema import Model
from engine.config.yamlmessages import problems_from_validation_error
from engine.config.yamlsrc import read_yaml
from engine.core.errors import GraphError
from engine.core.redact import add_secret

log = logging.getLogger(__name__)

CHANNELS = ("needs_human", "restart", "device_lost", "stopped", "database")
QUEUE_SIZE = 100
SEND_BOUND_S = 15.0


class NotifyFile(Model):
    channels: dict[str, str | list[str]] = Field(
        default_factory=dict, description=(
                    "An Apprise URL (or a list) per channel: needs_human, restart, device_lost, stopped, database.")
    )
    min_interval_s: float = Field(
        600, ge=0, le=86400, description="At most one message per channel and device per this many seconds."
    )


def load_notify(path: str | Path) -> NotifyFile | None:
    """The notification file at `path`; None when there is none.

    Raises:
        GraphError: a problem with file:line:col (an unknown channel included).
    """
    path = Path(path)
    if not path.is_file():
        return None
    source = read_yaml(path)
    problems = list(source.problems)
    parsed = None
    if not problems:
        try:
            parsed = NotifyFile.model_validate(source.data or {})
        except ValidationError as exc:
            problems = problems_from_validation_error(exc, str(path), source.locator, model=NotifyFile)
    if parsed is not None:
        for name in parsed.channels:
            if name not in CHANNELS:
                problems.append(source.locator.problem(("channels", name),
                                                       f"unknown channel {name!r}; channels: {', '.join(CHANNELS)}"))
    if problems:
        raise GraphError(problems, message=f"{len(problems)} problem(s) in {path.name}")
    return parsed


class Notifier:
    """Sends through Apprise in the background; `send` never blocks and never raises."""

    def __init__(self, config: NotifyFile | None, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.interval = config.min_interval_s if config is not None else 600.0
        self.urls: dict[str, list[str]] = {}
        for channel, urls in (config.channels if config is not None else {}).items():
            self.urls[channel] = [urls] if isinstance(urls, str) else list(urls)
            for url in self.urls[channel]:
                add_secret(url)
                parts = urlsplit(url)  # libraries below Apprise log paths and hosts without the scheme
                for part in (parts.netloc, parts.path.strip("/"), parts.query, parts.password):
                    if part and len(part) >= 8:
                        add_secret(part)
        self.sent: list[tuple[str, str]] = []
        """(channel, title) of every message handed to Apprise, for status and tests."""
        self.held_back = 0
        self._last: dict[tuple[str, str | None], float] = {}
        self._suppressed: dict[tuple[str, str | None], int] = {}
        self._queue: queue.Queue = queue.Queue(QUEUE_SIZE)
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        for noisy in ("apprise", "urllib3"):  # their debug lines name the URLs
            logging.getLogger(noisy).setLevel(logging.WARNING)

    def send(self, channel: str, title: str, body: str, device: str | None = None) -> bool:
        """Queue a message on `channel` (about `device`); False when the channel has no URL or the rate limit holds
        it back (it is counted in the next message that goes out)."""
        if not self.urls.get(channel):
            return False
        key = (channel, device)
        now = self.clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.interval:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                self.held_back += 1
                return False
            self._last[key] = now
            held = self._suppressed.pop(key, 0)
        if held:
            body += f"\n({held} more like this were held back in the last {self.interval:.0f} s)"
        try:
            self._queue.put_nowait((channel, title, body))
        except queue.Full:
            try:
                self._queue.get_nowait()  # the oldest goes: the newest says more about now
            except queue.Empty:
                pass
            self._queue.put_nowait((channel, title, body))
        self._start()
        return True

    def _start(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="notify", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                channel, title, body = self._queue.get(timeout=5.0)
            except queue.Empty:
                return
            self._deliver(channel, title, body)
            self._queue.task_done()

    def _deliver(self, channel: str, title: str, body: str) -> None:
        import apprise

        done = threading.Event()
        outcome: dict[str, Any] = {}

        def work() -> None:
            try:
                sender = apprise.Apprise()
                for url in self.urls[channel]:
                    sender.add(url)
                outcome["ok"] = sender.notify(title=title, body=body)
            except Exception as exc:  # noqa: BLE001 - a notification failing must not stop the scheduler
                outcome["error"] = type(exc).__name__
            finally:
                done.set()

        threading.Thread(target=work, name="notify-send", daemon=True).start()
        if not done.wait(SEND_BOUND_S):
            log.warning("notification on %s: no answer in %.0f s; given up", channel, SEND_BOUND_S)
            return
        self.sent.append((channel, title))
        if not outcome.get("ok"):
            log.warning("notification on %s was not delivered (%s)", channel, outcome.get("error", "refused"))

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued message was handed over (tests, and the scheduler's last words)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.02)
        return not self._queue.unfinished_tasks
