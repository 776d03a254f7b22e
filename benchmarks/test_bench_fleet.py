"""How many devices one PostgreSQL serves: 200 devices' scheduler workers (the real Worker, each on a thread with
its own connection, as 200 devices spread over hosts would hold) on one server, each run a short fake task, in
virtual time (waits take no wall time, so every worker claims as fast as the database lets it); and, in the same
run, one host's devices (8) on SQLite. Claims per second and claim latency are printed and written to a JSON file
($BENCH_FLEET_JSON, else the test's folder); nothing is asserted about them (they clock the machine)."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from engine.config.schedule import Due, Entry, Retry, Schedule, parse_zone
from engine.core.results import make_result
from engine.runtime.scheduler import Worker
from engine.schedule.store import Store

NOW = 1_800_000_000.0
RUNS = int(os.environ.get("BENCH_FLEET_RUNS", "3"))
"""Runs per device."""


class _Clock:
    """A worker's own virtual time: a wait passes at once; the worker stops after RUNS runs."""

    def __init__(self) -> None:
        self.t, self.worker = NOW, None

    def now(self) -> float:
        return self.t

    monotonic = now

    def wait(self, seconds: float, stop: threading.Event) -> None:
        self.t += seconds
        if self.worker.runs >= RUNS:
            stop.set()

    def sleep(self, seconds: float) -> None:
        self.t += seconds

    def join(self) -> None: ...

    def leave(self) -> None: ...


class _Tools:
    def __init__(self, clock: _Clock) -> None:
        self.clock = clock

    def call(self, name, arguments):
        self.clock.sleep(30.0)  # the fake task: thirty virtual seconds on the device
        return make_result(name, ok=True, status="verified", text="done")


class _TimedStore(Store):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.latencies: list[float] = []

    def claim(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return super().claim(*args, **kwargs)
        finally:
            self.latencies.append(time.perf_counter() - started)


def _fleet(url: str, devices: int) -> dict:
    store = _TimedStore(url)
    schedule = Schedule((Entry(task="chore", due=Due(every=600)),), ("00:00",), parse_zone("UTC+00:00"), Retry(),
                        None)
    workers = []
    for i in range(devices):
        clock = _Clock()
        session = SimpleNamespace(tools=_Tools(clock), device=None, graph=None, close=lambda: None)
        worker = Worker(f"dev-{i:03d}", lambda s=session: s, store, schedule, time=clock, session=session)
        clock.worker = worker
        workers.append(worker)
    threads = [threading.Thread(target=w.run, daemon=True) for w in workers]
    wall = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    wall = time.perf_counter() - wall
    store.backend.close_all()
    runs = sum(w.runs for w in workers)
    lat = sorted(store.latencies)
    return {"devices": devices, "runs": runs, "failures": [w.failure for w in workers if w.failure][:3],
            "wall_s": round(wall, 2), "claims_per_s": round(runs / wall, 1),
            "claim_p50_ms": round(1000 * lat[len(lat) // 2], 2),
            "claim_p95_ms": round(1000 * lat[min(len(lat) - 1, int(0.95 * len(lat)))], 2)}


def test_bench_fleet_claims(benchmark, tmp_path):
    from tests.postgres import Cluster

    cluster = Cluster()
    try:
        pg = benchmark.pedantic(lambda: _fleet(cluster.new_database(), 200), rounds=1, iterations=1)
    finally:
        cluster.close()
    lite = _fleet(str(tmp_path / "s.sqlite3"), 8)
    report = {"postgresql_200_devices": pg, "sqlite_8_devices": lite, "runs_per_device": RUNS}
    out = Path(os.environ.get("BENCH_FLEET_JSON") or tmp_path / "fleet.json")
    out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1), f"\nwritten to {out}")
    benchmark.extra_info.update(report)
    assert pg["runs"] == 200 * RUNS and lite["runs"] == 8 * RUNS and not pg["failures"] and not lite["failures"]
