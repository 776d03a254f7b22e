"""An adb server a worker's program starts daemonises out of its process group; the worker still ends it."""

from __future__ import annotations

import socket
import sys
import time

from alas_wrapped.worker import Worker
from engine.device.procnet import listener_pids

# What `adb -L tcp:PORT fork-server server` does when a client starts it (AOSP adb/client/main.cpp: the client
# forks, the child calls setsid() and serves): here a Python stand-in double-forks, leaves the group with setsid,
# listens on the port and waits. Its argv carries "fork-server server", as adb's does.
DAEMON = """
import os, socket, sys, time
port = int(sys.argv[1])
if os.fork():
    time.sleep(0.5)
    os._exit(0)
os.setsid()
if os.fork():
    os._exit(0)
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port)); s.listen(4)
time.sleep(60)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_listening(port: int, seconds: float = 5.0) -> list[int]:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pids = listener_pids(port)
        if pids:
            return pids
        time.sleep(0.05)
    return []


def test_an_adb_server_left_on_the_runs_port_is_ended(tmp_path):
    port = _free_port()
    worker = Worker([sys.executable, "-c", DAEMON, str(port), "fork-server", "server"], cwd=tmp_path, adb_port=port)
    worker.start()
    daemon = _wait_listening(port)
    assert daemon, "the stand-in did not listen"
    assert worker.proc.pid not in daemon  # it left the group: killing the group alone would miss it
    worker.wait(time.monotonic() + 5)
    assert worker.kill("exited") == []
    assert worker.strays == daemon
    assert listener_pids(port) == []


def test_a_listener_that_was_there_before_the_run_is_left_alone(tmp_path):
    with socket.socket() as mine:
        mine.bind(("127.0.0.1", 0))
        mine.listen(1)
        port = mine.getsockname()[1]
        worker = Worker([sys.executable, "-c", "pass"], cwd=tmp_path, adb_port=port)
        worker.start()
        worker.wait(time.monotonic() + 5)
        worker.kill("exited")
        assert worker.strays == []
        assert listener_pids(port)  # still ours, still listening
