"""The MCP server's stdio wire on threads of its own: each tools/call stamped the moment it arrives, each answer
written the moment it is ready.

The SDK reads stdin one line per worker-thread hop, and only after the server has taken the previous message: under
a burst of calls beside a busy navigation, the 20th call of a burst was read 200 ms after it was written. A tool's
bound must count that wait, so a dedicated thread reads every line as it comes, notes when each ``tools/call``
arrived (by request id), and hands the lines to the event loop. Answers go the same way out: a queue and a
writing thread, instead of two worker-thread hops (write, flush) per answer.
"""

from __future__ import annotations

import json
import logging
import math
import queue
import threading
from typing import Any, BinaryIO, Callable

import anyio
import anyio.from_thread
import anyio.lowlevel

log = logging.getLogger(__name__)


class StampedStdin:
    """An async line source over a binary stream (the process's stdin), for ``mcp.server.stdio.stdio_server``.

    Args:
        stream: the bytes to read, line by line (stdin's buffer).
        clock: the clock arrivals are stamped with (the tools' clock).
    """

    def __init__(self, stream: BinaryIO, clock: Callable[[], float]) -> None:
        self.stream, self.clock = stream, clock
        self.arrivals: dict[str, float] = {}
        """When each pending tools/call was read, by request id (``pop`` it when the call is handled)."""
        self._send, self._receive = anyio.create_memory_object_stream[str](math.inf)

    def start(self) -> StampedStdin:
        """Start the reading thread (call from inside the event loop)."""
        token = anyio.lowlevel.current_token()
        threading.Thread(target=self._read, args=(token,), name="mcp-stdin", daemon=True).start()
        return self

    def _read(self, token: Any) -> None:
        try:
            for raw in iter(self.stream.readline, b""):
                self._stamp(raw)
                anyio.from_thread.run_sync(self._send.send_nowait, raw.decode("utf-8", "replace"), token=token)
        except (OSError, ValueError, RuntimeError) as exc:  # stdin closed under us, or the loop has ended
            log.debug("stdin reader stops: %s", exc)
        finally:
            try:
                anyio.from_thread.run_sync(self._send.close, token=token)
            except RuntimeError:
                pass  # the loop is gone already

    def _stamp(self, raw: bytes) -> None:
        if b'"tools/call"' not in raw:
            return
        try:
            message = json.loads(raw)
        except ValueError:
            return  # the SDK answers malformed JSON itself
        if isinstance(message, dict) and message.get("method") == "tools/call" and "id" in message:
            self.arrivals[str(message["id"])] = self.clock()

    def __aiter__(self) -> StampedStdin:
        return self

    async def __anext__(self) -> str:
        try:
            return await self._receive.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class QueuedStdout:
    """An async text sink for ``stdio_server`` whose writes go to a queue that a thread of its own drains into
    `stream`: an answer leaves the moment it is ready, not one worker-thread hop per write and per flush later."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._drain, name="mcp-stdout", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        while (data := self._queue.get()) is not None:
            try:
                self.stream.write(data)
                self.stream.flush()
            except (OSError, ValueError) as exc:  # the client has gone
                log.debug("stdout writer stops: %s", exc)
                return

    async def write(self, text: str) -> None:
        self._queue.put(text.encode("utf-8"))

    async def flush(self) -> None:
        """Writes are flushed by the draining thread, message by message."""

    def close(self, timeout: float = 5.0) -> None:
        """Let the queued answers out, then stop the thread."""
        self._queue.put(None)
        self._thread.join(timeout)
