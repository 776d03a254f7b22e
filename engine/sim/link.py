"""The transport between an adb server and a simulated emulator: its bandwidth and each command's start-up.

A real emulator's adbd moves a stream's bytes no faster than its link (a pipe into a VM, a virtual NIC, USB) and
starts a process for every ``shell:`` or ``exec:`` stream. The simulator's adbd charges both from the scenario's
profile (engine/sim/profiles: ``link_mb_s`` and ``command_ms``): every WRTE to the host waits for its bytes to pass
the link, one message after another as on the wire (streams share it), and every shell or exec stream waits
``command_ms`` before its command runs. Zero means no limit (the loopback's own speed).
"""

from __future__ import annotations

import threading
import time


class Link:
    """One transport's bandwidth (MB/s, 0: unlimited) and per-command latency (ms)."""

    def __init__(self, mb_s: float = 0.0, command_ms: float = 0.0, sleep=time.sleep, clock=time.monotonic) -> None:
        self.bytes_per_s = mb_s * 1e6
        self.command_s = command_ms / 1000.0
        self._sleep = sleep
        self._clock = clock
        self._lock = threading.Lock()
        self._free_at = 0.0

    @classmethod
    def of(cls, scenario) -> Link:
        return cls(getattr(scenario, "link_mb_s", 0.0), getattr(scenario, "command_ms", 0.0))

    def send(self, nbytes: int) -> None:
        """Wait until `nbytes` have passed the link after everything queued before them."""
        if self.bytes_per_s <= 0 or nbytes <= 0:
            return
        with self._lock:
            start = max(self._clock(), self._free_at)
            self._free_at = start + nbytes / self.bytes_per_s
            done = self._free_at
        left = done - self._clock()
        if left > 0:
            self._sleep(left)

    def command(self) -> None:
        """A shell or exec stream's process start."""
        if self.command_s > 0:
            self._sleep(self.command_s)
