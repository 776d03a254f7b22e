"""Which processes listen on a loopback TCP port, or are adb servers started for one, from Linux's /proc (an adb
server left behind is found so)."""

from __future__ import annotations

import os
from pathlib import Path

_LISTEN = "0A"


def _inodes(port: int) -> set[str]:
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    return inodes


def listener_pids(port: int) -> list[int]:
    """Pids holding a listening socket on `port` (empty off Linux, or for processes we may not inspect)."""
    inodes = _inodes(port)
    if not inodes:
        return []
    wanted = {f"socket:[{i}]" for i in inodes}
    pids = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{name}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{name}/fd/{fd}") in wanted:
                    pids.append(int(name))
                    break
            except OSError:
                continue
    return sorted(pids)


def cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def adb_server_pids(port: int) -> list[int]:
    """Pids of adb servers started for `port`, listening yet or not: adb's client starts its server as
    ``adb -L tcp:PORT fork-server server --reply-fd N`` (AOSP adb/client/main.cpp, launch_server), and a server
    still starting (or waiting to bind) holds no socket yet. Empty off Linux."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    pids = []
    for name in names:
        if name.isdigit():
            argv = cmdline(int(name))
            if "fork-server" in argv and any(a.startswith("tcp:") and a.endswith(f":{port}") for a in argv):
                pids.append(int(name))
    return sorted(pids)
