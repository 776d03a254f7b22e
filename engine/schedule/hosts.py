"""Who holds a device or a claim: a host id and a process instance, and whether that process still runs here.

An owner id is ``host:pid:start:random``. `start` names the process instance: the boot it runs in and its start
time in clock ticks since that boot (/proc/<pid>/stat), so a pid reused after a crash, a reboot, or a scheduler
that is pid 1 in a container both before and after a kill -9, is another owner. Only an owner of this host whose
instance can be read is judged here (running, or gone); any other owner is judged by its heartbeat lease on the
database's clock (engine.schedule.store), never by its pid.
"""

from __future__ import annotations

import os
import re
import socket
from functools import lru_cache

ENV_HOST = "ENGINE_HOST_ID"
"""A host's name in the fleet (default: its hostname); two hosts must never share one."""


def host_id() -> str:
    name = os.environ.get(ENV_HOST) or socket.gethostname() or "localhost"
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", name)[:64]


@lru_cache(maxsize=1)
def _boot() -> str:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as file:
            return file.read().strip().replace("-", "")[:8]
    except OSError:
        return ""


def process_start(pid: int) -> str | None:
    """The instance of process `pid` (boot and start tick), or None when no such process runs (or /proc is
    missing: then "-", unknown)."""
    boot = _boot()
    if not boot:
        return "-"
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as file:
            fields = file.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return f"{boot}.{fields[19]}" if len(fields) > 19 else "-"  # field 22 of stat: starttime


def new_owner() -> str:
    """An owner id for this process (the module's docstring)."""
    return f"{host_id()}:{os.getpid()}:{process_start(os.getpid()) or '-'}:{os.urandom(4).hex()}"


def owner_host(owner: str | None) -> str | None:
    return owner.split(":", 1)[0] if owner else None


def alive_here(owner: str | None) -> bool | None:
    """True/False when `owner` is a process instance of this host that is (not) running; None when it is on another
    host or its instance is unknown (an owner id of an older version, a system without /proc): the lease decides."""
    if not owner:
        return False
    parts = owner.split(":")
    if len(parts) != 4 or parts[0] != host_id() or parts[2] == "-" or not parts[1].isdigit():
        return None
    now = process_start(int(parts[1]))
    if now == "-":
        return None
    return now == parts[2]
