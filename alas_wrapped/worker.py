"""A child program in its own process group, bounded and killable: what runs an ALAS task for the engine.

The worker starts the program with ``start_new_session`` (a new session and process group whose id is the child's
pid), so everything the task spawns stays in that group. Its output lines are read on a thread into a queue that the
engine's run thread drains (so the transcript is written from one thread). ``wait`` returns when the program exits,
the deadline comes or the run is cancelled; ``kill`` sends TERM to the whole group, waits a grace period, sends KILL
to whatever is left, and checks that no member of the group is still alive (zombies waiting to be reaped by init do
not count: they run nothing).

An adb server the program starts (``adb -L tcp:PORT fork-server server``) daemonises out of the group, so killing
the group misses it: given the ADB server port the program was told (``adb_port``), the worker ends every adb server
for that port after the run that was not there before it, whether it listens there already or is still starting
(a group killed while its adb client waited for the server: engine.device.procnet finds both).

Linux (and other POSIX systems with /proc): process groups and /proc are how the group is found and ended.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

LAST_LINES = 40
"""Output lines kept for the result."""
MAX_LINE = 2000
"""Characters kept of one output line (a task that prints a megabyte on one line cannot flood the transcript)."""
MAX_PENDING = 10_000
"""Output lines waiting to be recorded; beyond that a flood is counted (``dropped``), not kept."""
POLL_S = 0.05
TERM_GRACE_S = 2.0
"""Time the group gets to end after TERM before KILL."""
REAP_S = 1.0
"""Time given to collect the program's exit status once its group is gone: a process whose main thread has ended
shows as a zombie while its other threads are still being torn down, and cannot be reaped until they are."""


def group_members(pgid: int) -> list[int]:
    """Pids of live (not zombie) processes in process group `pgid`, read from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after the last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry.name))
    return members


class Worker:
    """One run of a program in its own process group."""

    def __init__(self, argv: Sequence[str], *, cwd: str | Path | None = None, env: dict[str, str] | None = None,
                 clock: Callable[[], float] = time.monotonic, adb_port: int | None = None) -> None:
        self.argv, self.cwd, self.env, self.clock = list(argv), cwd, env, clock
        self.adb_port = adb_port
        self._port_pids_before: set[int] = set()
        """What was on `adb_port` before the run (its listeners, and adb servers started for it, listening yet or
        not): never ended as strays."""
        self.strays: list[int] = []
        """Pids of adb servers the run left on `adb_port` that were ended after it."""
        self.proc: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str] = queue.Queue()
        self.last: deque[str] = deque(maxlen=LAST_LINES)
        self.started_at: float | None = None
        self.dropped = 0
        """Output lines not recorded because too many were waiting (a task printing faster than we record)."""
        self.killed: str | None = None
        """Why the group was killed (timeout, cancelled, shutdown), or None."""
        self._reader: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> None:
        """Start the program (OSError when it cannot be started: no such interpreter, not executable)."""
        if self.adb_port:
            from engine.device.procnet import adb_server_pids, listener_pids

            self._port_pids_before = set(listener_pids(self.adb_port)) | set(adb_server_pids(self.adb_port))
        self.proc = subprocess.Popen(self.argv, cwd=self.cwd, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                     bufsize=1, start_new_session=True)
        self.started_at = self.clock()
        self._reader = threading.Thread(target=self._read, name=f"worker-{self.proc.pid}-out", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        """Lines of at most MAX_LINE characters (the rest of a longer one is skipped, never held in memory);
        while more than MAX_PENDING wait to be recorded, new ones are counted and dropped, not queued."""
        assert self.proc is not None and self.proc.stdout is not None
        out, skipping = self.proc.stdout, False
        while chunk := out.readline(MAX_LINE + 1):
            ended = chunk.endswith("\n")
            if skipping:
                skipping = not ended
                continue
            line = chunk.rstrip("\r\n")[:MAX_LINE]
            skipping = not ended and len(chunk) > MAX_LINE
            self.last.append(line)
            if self.lines.qsize() < MAX_PENDING:
                self.lines.put(line)
            else:
                self.dropped += 1

    def drain(self) -> list[str]:
        """The output lines read since the last drain."""
        out = []
        while True:
            try:
                out.append(self.lines.get_nowait())
            except queue.Empty:
                return out

    def wait(self, deadline: float, stop: threading.Event | None = None,
             on_lines: Callable[[list[str]], None] | None = None) -> str:
        """Until the program exits ("exited"), the deadline ("timeout") or `stop` ("cancelled"); lines read
        meanwhile go to `on_lines` from this thread."""
        assert self.proc is not None
        while True:
            if on_lines is not None and (lines := self.drain()):
                on_lines(lines)
            if self.proc.poll() is not None:
                self._finish_reading()
                if on_lines is not None and (lines := self.drain()):
                    on_lines(lines)
                return "exited"
            if stop is not None and stop.is_set():
                return "cancelled"
            if self.clock() >= deadline:
                return "timeout"
            time.sleep(POLL_S)

    def _finish_reading(self) -> None:
        """Let the reader take the last lines; a grandchild may hold the pipe open, so never wait long."""
        if self._reader is not None:
            self._reader.join(0.5)
            if not self._reader.is_alive() and self.proc is not None and self.proc.stdout is not None:
                self.proc.stdout.close()

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode if self.proc is not None else None

    def alive(self) -> list[int]:
        """Live members of the worker's group (the program and anything it spawned)."""
        return group_members(self.proc.pid) if self.proc is not None else []

    def kill(self, why: str, grace: float = TERM_GRACE_S) -> list[int]:
        """End the whole group: TERM, up to `grace` seconds, then KILL. Returns pids that survived (none, normally)."""
        if self.proc is None:
            return []
        try:
            return self._kill_group(why, grace)
        finally:
            self.strays = self._end_strays(grace)
            self._finish_reading()  # after the strays: a daemon keeps the output pipe open while it lives

    def _end_strays(self, grace: float) -> list[int]:
        """TERM (then KILL) every adb server for `adb_port` (listening there, or started for it) that was not
        there before the run."""
        if not self.adb_port:
            return []
        from engine.device.procnet import adb_server_pids, cmdline, listener_pids

        listening = [pid for pid in listener_pids(self.adb_port) if "fork-server" in cmdline(pid)]
        strays = sorted(pid for pid in {*listening, *adb_server_pids(self.adb_port)}
                        if pid not in self._port_pids_before and pid != os.getpid())
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in strays:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            end = self.clock() + grace
            while any(_running(pid) for pid in strays) and self.clock() < end:
                time.sleep(POLL_S)
            if not any(_running(pid) for pid in strays):
                break
        for pid in strays:
            log.warning("ended the adb server %d the run left on port %d: %s", pid, self.adb_port,
                        " ".join(cmdline(pid)) or "(gone)")
        return strays

    def _kill_group(self, why: str, grace: float) -> list[int]:
        pgid = self.proc.pid
        if not self.alive():
            self._reap(REAP_S)
            return []
        self.killed = self.killed or why
        log.warning("killing the worker's process group %d (%s)", pgid, why)
        self._signal(pgid, signal.SIGTERM)
        end = self.clock() + grace
        while self.alive() and self.clock() < end:
            self._reap()
            time.sleep(POLL_S)
        if self.alive():
            self._signal(pgid, signal.SIGKILL)
            end = self.clock() + 1.0
            while self.alive() and self.clock() < end:
                self._reap()
                time.sleep(POLL_S)
        self._reap(REAP_S)
        left = self.alive()
        if left:
            log.error("processes %s of group %d survived KILL", left, pgid)
        return left

    def _reap(self, timeout: float = 0.0) -> None:
        if self.proc is not None:
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                pass

    @staticmethod
    def _signal(pgid: int, sig: int) -> None:
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
        except PermissionError as exc:
            log.error("cannot signal process group %d: %s", pgid, exc)


def _running(pid: int) -> bool:
    """Whether `pid` runs (a zombie, whose parent has not reaped it yet, runs nothing)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2:][:1] not in ("Z", "X")
