"""Notifications go through Apprise to any service it knows; here a local HTTP endpoint (Apprise's json:// URL)."""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engine.core.errors import GraphError
from engine.schedule.notify import Notifier, NotifyFile, load_notify


@pytest.fixture()
def endpoint():
    received: list[dict] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            received.append({"path": self.path, "body": json.loads(body)})
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    server.server_close()


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_each_channel_posts_through_apprise_and_a_loop_cannot_spam(endpoint, caplog):
    address, received = endpoint
    clock = Clock()
    secret_url = f"json://{address}/hook-with-secret-token"
    notifier = Notifier(NotifyFile(channels={"restart": secret_url, "device_lost": [f"json://{address}/lost"]},
                                   min_interval_s=600), clock=clock)
    caplog.set_level(logging.DEBUG)
    assert notifier.send("restart", "game restarted on sim-0", "commission failed: stuck", device="sim-0")
    for _ in range(20):  # a loop restarting every second
        clock.t += 1
        assert not notifier.send("restart", "game restarted on sim-0", "again", device="sim-0")
    assert notifier.send("restart", "game restarted on sim-1", "other device", device="sim-1")
    assert notifier.send("device_lost", "sim-0 lost", "device_offline", device="sim-0")
    assert not notifier.send("needs_human", "no URL for this channel", "")
    clock.t += 600
    assert notifier.send("restart", "game restarted on sim-0", "later", device="sim-0")
    assert notifier.flush(10)
    bodies = [(r["path"], r["body"]["title"], r["body"]["message"]) for r in received]
    assert len(bodies) == 4
    assert ("/lost", "sim-0 lost", "device_offline") in bodies
    later = next(b for b in bodies if b[2].startswith("later"))
    assert "20 more like this were held back" in later[2]
    assert "secret-token" not in caplog.text


def test_a_dead_service_never_blocks_the_sender(endpoint):
    notifier = Notifier(NotifyFile(channels={"stopped": "json://127.0.0.1:9/nothing-listens"}))
    assert notifier.send("stopped", "scheduler stopped", "bye")  # returns at once; delivery fails in the background
    assert notifier.flush(30)


def test_the_notify_file_names_known_channels_only(tmp_path):
    path = tmp_path / "notify.yaml"
    path.write_text("channels:\n  restart: json://127.0.0.1/x\n  resart: json://127.0.0.1/y\n")
    with pytest.raises(GraphError) as caught:
        load_notify(path)
    assert "notify.yaml:3:" in str(caught.value) and "unknown channel 'resart'" in str(caught.value)
    assert load_notify(tmp_path / "absent.yaml") is None
