"""A local stand-in for the Gemini API's generateContent, for tests that run the real google-genai client.

It answers in the REST wire shape the service uses, taken from the real counterparts, not from memory:

- a response is google-genai's GenerateContentResponse as the SDK parses it from JSON (google/genai/types.py:
  ``candidates[].content.parts[]`` with ``text`` or ``functionCall {name, args, id}`` and ``thoughtSignature``,
  ``finishReason``, ``usageMetadata {promptTokenCount, candidatesTokenCount}``), the shape of the REST reference
  (ai.google.dev/api/generate-content);
- an error is the body google/genai/errors.py's APIError reads, ``{"error": {"code", "message", "status",
  "details"}}``, with the codes and statuses of ai.google.dev/gemini-api/docs/troubleshooting; a 429 may carry a
  Retry-After header and a ``type.googleapis.com/google.rpc.RetryInfo`` detail with ``retryDelay``.

It plays every behaviour class the agent must survive: honest answers, lies (a ``final`` while the criteria do
not hold: just a scripted call), every error code, a body trickled a byte at a time, prose, oversized answers
(with and without Content-Length), malformed bodies and arguments, and invented tool names.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STATUSES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
            429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def answer(parts: list[dict], usage: tuple[int, int] | None = (100, 5), finish: str = "STOP") -> dict:
    """A generateContent response with one candidate made of `parts`."""
    body: dict[str, Any] = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish}]}
    if usage is not None:
        body["usageMetadata"] = {"promptTokenCount": usage[0], "candidatesTokenCount": usage[1]}
    return body


def call(name: str, usage: tuple[int, int] = (100, 5), **args: Any) -> dict:
    """A response that calls function `name` with `args`."""
    return answer([{"functionCall": {"name": name, "args": args}}], usage)


def prose(text: str) -> dict:
    """A response in words, no function call (what forced function calling should prevent)."""
    return answer([{"text": text}])


def error(code: int, message: str = "", *, status: str | None = None, retry_after: float | None = None,
          details: list[dict] | None = None) -> Reply:
    """An error response as the API sends it; `retry_after` adds the header and a RetryInfo detail."""
    items = list(details or [])
    headers = {}
    if retry_after is not None:
        headers["Retry-After"] = f"{retry_after:g}"
        items.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_after:g}s"})
    body: dict[str, Any] = {"code": code, "message": message or f"error {code}", "status": status or STATUSES[code]}
    if items:
        body["details"] = items
    return Reply(status=code, body={"error": body}, headers=headers)


@dataclass
class Reply:
    """One scripted HTTP answer.

    Attributes:
        status, body, headers: the response (a dict body is sent as JSON, a str or bytes as is).
        trickle: seconds between single bytes of the body (0: all at once).
        declare_length: send Content-Length (False: the body ends when the connection closes).
        hang: seconds to wait before answering anything.
    """

    status: int = 200
    body: Any = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    trickle: float = 0.0
    declare_length: bool = True
    hang: float = 0.0

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        return self.body.encode() if isinstance(self.body, str) else json.dumps(self.body).encode()


def oversized(size: int = 5 * 1024 * 1024, *, declare_length: bool = True) -> Reply:
    """A well-formed answer of about `size` bytes (a prose part that long)."""
    return Reply(body=prose("x" * size), declare_length=declare_length)


class FakeGemini:
    """The local server. Script it with `script` (replies in order, the last one repeating: a dict is a 200
    answer, ``(status, body)`` another status, or a Reply), or, vision's way, with `answer` (every reply is a
    text answer holding it: a dict as JSON, or raw text; a callable is asked for that answer at each request,
    as a model that reads the screen now would answer) and `delay`.

    ``requests`` holds (path, headers, parsed JSON body) of each request; ``calls`` (path, raw body); a request
    whose client went away mid-answer is noted in ``disconnects`` (monotonic time).
    """

    def __init__(self) -> None:
        self.script: list[Any] = [prose("ok")]
        self.answer: Any = None
        self.delay = 0.0
        self.requests: list[tuple[str, dict, Any]] = []
        self.calls: list[tuple[str, bytes]] = []
        self.disconnects: list[float] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                with fake._lock:
                    fake.requests.append((self.path, dict(self.headers), body))
                    fake.calls.append((self.path, raw))
                    reply = fake._next()
                try:
                    fake._send(self, reply)
                except (BrokenPipeError, ConnectionResetError):
                    fake.disconnects.append(time.monotonic())

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def _next(self) -> Reply:
        if self.answer is not None:
            now = self.answer() if callable(self.answer) else self.answer
            text = now if isinstance(now, str) else json.dumps(now)
            return Reply(body=answer([{"text": text}], usage=None), hang=self.delay)
        reply = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        if isinstance(reply, Reply):
            return reply
        if isinstance(reply, tuple):
            return Reply(status=reply[0], body=reply[1])
        return Reply(body=reply)

    def _send(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        if reply.hang and self._closing.wait(reply.hang):
            return
        data = reply.payload()
        handler.send_response(reply.status)
        handler.send_header("Content-Type", "application/json; charset=UTF-8")
        if reply.declare_length:
            handler.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        if not reply.trickle:
            handler.wfile.write(data)
            return
        for i in range(len(data)):
            handler.wfile.write(data[i:i + 1])
            handler.wfile.flush()
            if self._closing.wait(reply.trickle):
                return

    def close(self) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()


@contextlib.contextmanager
def running() -> Any:
    server = FakeGemini()
    try:
        yield server
    finally:
        server.close()
