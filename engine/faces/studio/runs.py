"""Gotos started from the page, one at a time on a worker thread, and the server-sent event stream that shows them.

Each client of ``GET /api/events`` has its own bounded queue; a slow client loses its oldest events (and is told
how many in the next ``event: dropped``), never slows the run. The stream sends a keep-alive comment every few
seconds, the transcript's new lines as they are written, and ends when the client goes away or the app closes.
"""

from __future__ import annotations

import itertools
import json
import logging
import queue
import threading
import time
from typing import Any, AsyncIterator, Callable

import anyio
import anyio.to_thread
from starlette.responses import StreamingResponse

from engine.core.redact import redact

log = logging.getLogger(__name__)

QUEUE_SIZE = 256
"""Events kept per client before the oldest are dropped."""
KEEPALIVE_S = 10.0
POLL_S = 0.05
TRANSCRIPT_BATCH = 200
"""Transcript lines one ``event: transcript`` carries at most."""
RUN_EVENTS = 500
"""Events of the running goto kept for a tab that reattaches."""
KEPT_TABS = 32
"""Tabs whose last finished run is kept."""


def sse(event: str, data: Any) -> str:
    """One server-sent event (``event:`` and a one-line JSON ``data:``)."""
    return f"event: {event}\ndata: {json.dumps(redact(data), ensure_ascii=False, default=str)}\n\n"


class EventBus:
    """Fans events out from worker threads to every connected client's bounded queue."""

    def __init__(self, size: int = QUEUE_SIZE) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._clients: list[queue.Queue] = []
        self.dropped: dict[int, int] = {}

    def subscribe(self) -> queue.Queue:
        q: queue.Queue = queue.Queue(self.size)
        with self._lock:
            self._clients.append(q)
        return q

    def unsubscribe(self, q: queue.Queue) -> None:
        with self._lock:
            if q in self._clients:
                self._clients.remove(q)
            self.dropped.pop(id(q), None)

    @property
    def clients(self) -> int:
        with self._lock:
            return len(self._clients)

    def publish(self, event: str, data: dict[str, Any]) -> None:
        with self._lock:
            clients = list(self._clients)
        for q in clients:
            while True:
                try:
                    q.put_nowait((event, data))
                    break
                except queue.Full:
                    try:
                        q.get_nowait()
                        with self._lock:
                            self.dropped[id(q)] = self.dropped.get(id(q), 0) + 1
                    except queue.Empty:
                        pass


class GotoRunner:
    """Runs one ``alas_goto`` at a time on a worker thread; its hops, looks and result go to the bus.

    A run belongs to the tab that started it (the page keeps a tab id in sessionStorage and sends it): every event
    names the run and its tab, ``snapshot(tab)`` gives the running run with its events so far and that tab's last
    finished run, so a reloaded tab reattaches and other tabs label the run as someone else's. `on_look` is called
    with each look a run records (the studio keeps its frame for the recognition view).
    """

    def __init__(self, tools: Any, bus: EventBus, navigator: Any = None,
                 on_look: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.tools, self.bus, self.navigator, self.on_look = tools, bus, navigator, on_look
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.current: dict[str, Any] | None = None
        self.last: dict[str, Any] | None = None
        self._events: list[tuple[str, dict[str, Any]]] = []
        self._count = 0
        self._finished: dict[str, dict[str, Any]] = {}
        self._thread: threading.Thread | None = None
        tools.on_event = self._on_event

    def start(self, page: str, tab: str | None = None) -> dict[str, Any] | None:
        """Start a goto to `page` for `tab`; its run record, or None when one is running."""
        with self._lock:
            if self.current is not None:
                return None
            run = {"run": next(self._ids), "page": page, "tab": tab, "started": time.time()}
            self.current, self._events, self._count = run, [], 0
        self._thread = threading.Thread(target=self._work, args=(run,), name=f"studio-goto-{run['run']}",
                                        daemon=True)
        self._thread.start()
        return run

    def snapshot(self, tab: str | None) -> dict[str, Any]:
        """The running run (with its events so far and whether `tab` started it) and `tab`'s last finished run."""
        with self._lock:
            current = dict(self.current, events=[{"event": e, **d} for e, d in self._events],
                           mine=tab is not None and self.current.get("tab") == tab) if self.current else None
            last = self._finished.get(tab) if tab else None
        return {"current": current, "last": last}

    def _publish(self, event: str, data: dict[str, Any]) -> None:
        with self._lock:
            self._count += 1
            data = {**data, "n": self._count}  # the page replays a snapshot and skips what it had already
            if len(self._events) < RUN_EVENTS:
                self._events.append((event, data))
        self.bus.publish(event, data)

    def _work(self, run: dict[str, Any]) -> None:
        try:
            result = self.tools.call("alas_goto", {"page": run["page"]})
            data = result.data
            body = {"run": run["run"], "tab": run["tab"], "page": run["page"], "ok": result.ok,
                    "status": result.status, "text": result.text, "observed": data.get("observed"),
                    "hops": data.get("hops"), "elapsed_ms": data.get("elapsed_ms"), "belief": data.get("belief")}
        except Exception as exc:  # noqa: BLE001 - a bug still ends the run with a result the page can show
            log.exception("studio goto failed")
            body = {"run": run["run"], "tab": run["tab"], "page": run["page"], "ok": False, "status": "error",
                    "text": f"{type(exc).__name__}: {exc}", "observed": None, "hops": None}
        with self._lock:
            events = [{"event": e, **d} for e, d in self._events]
            if run["tab"]:
                self._finished.pop(run["tab"], None)
                self._finished[run["tab"]] = {**run, "events": events, "result": body}
                while len(self._finished) > KEPT_TABS:
                    self._finished.pop(next(iter(self._finished)))
            self.current, self.last = None, body
        self.bus.publish("result", body)

    def _on_event(self, kind: str, entry: dict[str, Any]) -> None:
        run = self.current
        ids = {"run": run["run"] if run else None, "tab": run["tab"] if run else None,
               "target": run["page"] if run else None}
        if kind == "action" and "hop" in entry:
            self._publish("hop", {**ids, "hop": entry.get("hop"), "from": entry.get("source"), "to": entry.get("to"),
                                  "action": entry.get("action")})
        elif kind == "verdict":
            # The belief moves to what a verified or mismatched look shows (engine.navigation.navigator).
            moved = entry.get("verdict") in ("verified", "mismatch") and entry.get("observed")
            believed = entry.get("observed") if moved else getattr(getattr(self.navigator, "belief", None),
                                                                    "state", None)
            self._publish("look", {**ids, "verdict": entry.get("verdict"), "expected": entry.get("expected"),
                                   "observed": entry.get("observed"), "popups": entry.get("popups"),
                                   "believed": believed})
        elif kind in ("dismiss", "recover"):
            self._publish("step", {**ids, "kind": kind, **entry})
        if kind == "observation" and self.on_look is not None:
            self.on_look(entry)

    def wait(self, timeout: float) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)


class EventStreamResponse(StreamingResponse):
    """A text/event-stream response that closes its generator however the response ends: a client that goes
    away cancels the send, which would otherwise leave the generator suspended (and subscribed) until collected."""

    media_type = "text/event-stream"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self.body_iterator.aclose()  # type: ignore[union-attr]


async def event_stream(bus: EventBus, transcript: Any, is_disconnected: Callable[[], Any],
                       closing: threading.Event, *, max_seconds: float | None = None,
                       keepalive: float = KEEPALIVE_S) -> AsyncIterator[str]:
    """The text of ``GET /api/events`` for one client, until it disconnects, the app closes or `max_seconds`."""
    q = bus.subscribe()
    seq = transcript.seq if transcript is not None else 0
    start = last_sent = time.monotonic()
    try:
        yield ": connected\n\n"
        while not closing.is_set():
            now = time.monotonic()
            if max_seconds is not None and now - start >= max_seconds:
                break
            if await is_disconnected():
                break
            sent = False
            dropped = bus.dropped.pop(id(q), 0)
            if dropped:
                yield sse("dropped", {"count": dropped})
            while True:
                try:
                    event, data = q.get_nowait()
                except queue.Empty:
                    break
                yield sse(event, data)
                sent = True
            if transcript is not None and transcript.seq > seq:
                lines = (await anyio.to_thread.run_sync(transcript.since, seq))[:TRANSCRIPT_BATCH]
                seq = int(lines[-1].get("seq", transcript.seq)) if lines else transcript.seq
                yield sse("transcript", {"lines": lines, "seq": seq})
                sent = True
            if sent:
                last_sent = now
            elif now - last_sent >= keepalive:
                yield ": keep-alive\n\n"
                last_sent = now
            await anyio.sleep(POLL_S)
    finally:
        bus.unsubscribe(q)
