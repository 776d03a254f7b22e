"""Connecting end to end, with no real emulator: simulated emulators (`sim serve --adbd`, one on MEmu's own default
port when it is free), Debian's adb server on a port of its own, and fake install folders holding the emulators'
instance files. Every instance is found with its name, goto with no --serial takes the only device and refuses
two, and nothing is left running."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from tests.engine.device import emulator_installs as installs
from tests.engine.sim.test_adbd import (
    ADB,
    ROOT,
    AdbServer,
    free_port,
    launch_emulator,
    listening,
    stop_emulator,
    wait_emulator,
    write_synthetic_pack,
)

pytestmark = pytest.mark.skipif(ADB is None and not os.environ.get("CI"), reason="the adb client is not installed")


def _memu_default_port() -> int:
    """A MEmu default port (21503 + 10 n) nothing holds, else any free port."""
    for port in range(21503, 21603, 10):
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    return free_port()


def _engine(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=180)


def test_instances_are_found_by_name_and_goto_picks_the_only_one(tmp_path):
    adb = AdbServer().start()
    first = _memu_default_port()
    launched = [launch_emulator(first), launch_emulator(0, "--notify-adb-server", str(adb.port))]
    emulators = []
    try:
        pack = tmp_path / "pack"
        write_synthetic_pack(pack)
        emulators = [wait_emulator(proc) for proc in launched]
        second = emulators[1][1]
        memu = installs.memu(tmp_path / "Microvirt" / "MEmu", {"MEmu_3": first})
        nox = installs.nox(tmp_path / "Nox" / "bin", {"Nox_7": second})
        env = {k: v for k, v in os.environ.items() if k not in ("ENGINE_SERIAL", "ENGINE_EMULATOR_PATHS")}
        env.update(PYTHONPATH=str(ROOT), ANDROID_ADB_SERVER_PORT=str(adb.port), ENGINE_DISCOVERY_PORTS="",
                   ENGINE_ADB=ADB or "adb")
        # The second emulator told the server it is up (emulator-N, as adb names local emulators); connecting it
        # by port too lists it twice. The first is not connected: only its instance file and the probe know it.
        assert adb("connect", f"127.0.0.1:{second}").returncode == 0
        assert adb("-s", f"127.0.0.1:{second}", "wait-for-device").returncode == 0

        scan = _engine(["devices", "--json", "--emulator-path", str(memu), "--emulator-path", str(nox)], env)
        assert scan.returncode == 0, scan.stderr[-2000:]
        rows = {row["serial"]: row for row in json.loads(scan.stdout)["rows"]}
        assert set(rows) == {f"127.0.0.1:{first}", f"127.0.0.1:{second}"}, rows  # one row for the pair
        memu_row, nox_row = rows[f"127.0.0.1:{first}"], rows[f"127.0.0.1:{second}"]
        assert (memu_row["emulator"], memu_row["instance"], memu_row["state"]) == ("MEmu", "MEmu_3", "not connected")
        assert (nox_row["emulator"], nox_row["instance"], nox_row["state"]) == ("Nox", "Nox_7", "device")
        assert nox_row["aliases"] == [f"emulator-{second - 1}"] and nox_row["resolution"] == "1280x720"
        assert json.loads(scan.stdout)["adb"]["problem"] is None  # one adb version: Debian's, both sides

        two = _engine(["goto", "page_commission", "--assets", str(pack)],
                      {**env, "ENGINE_EMULATOR_PATHS": os.pathsep.join([str(memu), str(nox)])})
        assert two.returncode == 2 and "2 devices found" in two.stderr and "--serial" in two.stderr

        adb("disconnect", f"127.0.0.1:{second}")
        proc, port, _ = emulators.pop()
        stop_emulator(proc, port)  # one emulator left: goto takes it without being told
        one = _engine(["goto", "page_commission", "--assets", str(pack), "--json"],
                      {**env, "ENGINE_EMULATOR_PATHS": str(memu)})
        assert one.returncode == 0, one.stdout + one.stderr[-2000:]
        assert f"using 127.0.0.1:{first}" in one.stderr and '"status": "verified"' in one.stdout
    finally:
        for proc, port, _ in emulators:
            stop_emulator(proc, port)
        for proc in launched:
            if proc.poll() is None:
                stop_emulator(proc, None)
        adb.stop()
    assert not listening(first) and not listening(adb.port)
