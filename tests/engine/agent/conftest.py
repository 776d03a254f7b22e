"""A local stand-in for Gemini's generateContent that answers from a script, for the agent's model tests."""

from __future__ import annotations

import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class ScriptedGemini:
    """Answers each generateContent POST with the next scripted reply; the last one repeats.

    A reply is a dict (200 with that JSON), ``(status, dict_or_raw_text)``, or ``("hang", seconds)``.
    ``requests`` holds (path, headers, parsed JSON body) of every request received.
    """

    def __init__(self) -> None:
        self.script: list[object] = [{"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}]}]
        self.requests: list[tuple[str, dict, object]] = []
        self._lock = threading.Lock()
        self._release = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # http.server's name
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                with fake._lock:
                    fake.requests.append((self.path, dict(self.headers), body))
                    reply = fake.script.pop(0) if len(fake.script) > 1 else fake.script[0]
                status, payload = (200, reply) if isinstance(reply, dict) else reply
                if status == "hang":
                    fake._release.wait(payload)
                    return
                data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.send_response(status)
                    for header, value in (("Content-Type", "application/json"), ("Content-Length", str(len(data)))):
                        self.send_header(header, value)
                    self.end_headers()
                    self.wfile.write(data)

            def log_message(self, *args):
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        serve = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        serve.start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def close(self) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def scripted_gemini():
    with contextlib.closing(ScriptedGemini()) as server:
        yield server


@pytest.fixture
def no_wait():
    """A sleep that records the pauses asked for and returns at once."""
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)

    sleep.waits = waits  # type: ignore[attr-defined]
    return sleep
