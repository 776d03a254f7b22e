"""Debian's real adb server on a private loopback port (never 5037), for the tests and benchmarks that drive the
simulator through it; killed at the end. It daemonises, so it is stopped by its port (`adb kill-server`).

A port is drawn by tests.ports.free_port; when `adb start-server` still fails there (another test's server took the
port in between: "protocol fault"), the server is started again on a new port, up to three times."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

from tests.ports import free_port, nobody_listens

ADB = shutil.which("adb")
STARTS = 3


def listening(port: int) -> bool:
    return not nobody_listens(port)


class AdbServer:
    """`server("devices", "-l")` runs Debian's adb client against this server; `server.port`, `server.env` (the
    environment a child process needs to reach it, adbutils included) say where it is."""

    def __init__(self) -> None:
        assert ADB is not None, "CI needs the adb client on PATH"
        self._place(free_port())
        self.failures: list[str] = []

    def _place(self, port: int) -> None:
        self.port = port
        self.env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(port), "ADBUTILS_ADB_PATH": ADB}
        self.env.pop("ANDROID_SERIAL", None)

    def __call__(self, *args: str, timeout: float = 20) -> subprocess.CompletedProcess:
        return subprocess.run([ADB, "-P", str(self.port), *args], capture_output=True, text=True, timeout=timeout,
                              env=self.env, stdin=subprocess.DEVNULL)

    def start(self) -> AdbServer:
        for _ in range(STARTS):
            started = self("start-server")
            if started.returncode == 0:
                return self
            self.failures.append(f"{self.port}: {started.stderr.strip()}")
            self._place(free_port())
        raise AssertionError(f"adb start-server failed {STARTS} times: {self.failures}")

    def stop(self) -> None:
        self("kill-server")
        deadline = time.monotonic() + 10
        while listening(self.port) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not listening(self.port), f"the adb server on {self.port} outlived kill-server"
