"""An adb server a worker's program starts daemonises out of its process group; the worker still ends it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from alas_wrapped.worker import Worker
from engine.device.procnet import adb_server_pids, listener_pids
from tests.ports import free_port

# What `adb -L tcp:PORT fork-server server` does when a client starts it (AOSP adb/client/main.cpp: the client
# forks, the child calls setsid() and serves): here a Python stand-in double-forks, leaves the group with setsid,
# listens on the port and waits. Its argv carries "tcp:PORT fork-server server", as adb's does.
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


WAIT_S = 30.0
"""How long a stand-in may take to start: a bound, not a timing (3 workers share 2 cores in CI)."""


def _wait_for(pids, seconds: float = WAIT_S) -> list[int]:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if found := pids():
            return found
        time.sleep(0.05)
    return []


def _wait_listening(port: int) -> list[int]:
    return _wait_for(lambda: listener_pids(port))


def test_an_adb_server_left_on_the_runs_port_is_ended(tmp_path):
    port = free_port()
    worker = Worker([sys.executable, "-c", DAEMON, str(port), f"tcp:{port}", "fork-server", "server"], cwd=tmp_path,
                    adb_port=port)
    worker.start()
    daemon = _wait_listening(port)
    assert daemon, "the stand-in did not listen"
    assert worker.proc.pid not in daemon  # it left the group: killing the group alone would miss it
    worker.wait(time.monotonic() + WAIT_S)
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
        worker.wait(time.monotonic() + WAIT_S)
        worker.kill("exited")
        assert worker.strays == []
        assert listener_pids(port)  # still ours, still listening


# The same daemon caught while it starts: the group is killed while ALAS's adb client waits for its server, which
# has left the group but holds no socket yet (here it never binds). Found by its argv, it is ended all the same.
STARTING = DAEMON.replace("s = socket.socket()", "time.sleep(60)\ns = socket.socket()")


def test_an_adb_server_still_starting_when_the_run_is_killed_is_ended(tmp_path):
    port = free_port()
    worker = Worker([sys.executable, "-c", STARTING, str(port), "-L", f"tcp:{port}", "fork-server", "server"],
                    cwd=tmp_path, adb_port=port)
    worker.start()
    try:
        # The run's process exits 0.5 s after its first fork; the daemon it left behind sleeps. Waiting for the run,
        # then for the daemon, holds on a loaded machine too (a fixed 5 s for both missed it once in CI).
        assert worker.wait(time.monotonic() + WAIT_S) == "exited"
        daemon = _wait_for(lambda: adb_server_pids(port))
        assert daemon and worker.pid not in daemon and listener_pids(port) == []  # left the group, not listening
        assert worker.kill("exited") == []
        assert worker.strays and worker.pid not in worker.strays
        assert adb_server_pids(port) == []
    finally:  # a failing run of this test leaves no stand-in behind either (only ours carry this free port)
        for pid in adb_server_pids(port):
            os.kill(pid, signal.SIGKILL)
        if worker.proc is not None and worker.proc.poll() is None:
            worker.kill("cancelled", grace=1)


def test_an_adb_server_for_the_port_that_was_there_before_is_left_alone(tmp_path):
    port = free_port()
    before = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "-L", f"tcp:{port}",
                               "fork-server", "server"])
    try:
        assert _wait_for(lambda: adb_server_pids(port))
        worker = Worker([sys.executable, "-c", "pass"], cwd=tmp_path, adb_port=port)
        worker.start()
        worker.wait(time.monotonic() + WAIT_S)
        worker.kill("exited")
        assert worker.strays == [] and before.poll() is None
    finally:
        before.kill()
        before.wait(5)
