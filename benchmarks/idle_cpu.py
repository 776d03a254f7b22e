"""The CPU share of a scheduler with nothing due, measured in a process of its own (benchmarks/test_bench_schedule.py).

    python -m benchmarks.idle_cpu ours|naive SECONDS DB_FILE    # prints the share (CPU seconds per wall second)

In the benchmark's own pytest process the share counted every thread of that process: threads an earlier benchmark
left behind (a simulator's server, the OCR runtime's pool) added about 0.003 to both windows, and beside two busy
loops our worker (0.0007-0.001 alone) once read 0.0043 against the naive poll's 0.0037 (hunt run 24 at 07871be).
Here the process holds the worker and nothing else, and each kind runs once for half a second before the measured
window (what the worker imports lazily and does on starting is not idling).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from engine.config.schedule import Due, Entry, Retry, Schedule, parse_zone
from engine.runtime.scheduler import RealTime, Worker
from engine.schedule.store import Store


def share(kind: str, seconds: float, db: Path) -> float:
    """CPU seconds per wall second of this process while the `kind` scheduler waited `seconds` with nothing due."""
    store = Store(db)
    schedule = Schedule((Entry(task="chore", due=Due(every=3600)),), ("00:00",), parse_zone("UTC+00:00"), Retry(),
                        None)
    store.ensure_tasks("dev", ["chore"], time.time())
    store.set_next("dev", "chore", time.time() + 3600)  # nothing due for an hour
    session = SimpleNamespace(tools=None, device=None, graph=None, close=lambda: None)

    def ours(stop: threading.Event) -> None:
        Worker("dev", lambda: session, store, schedule, time=RealTime(), session=session, stop=stop).run()

    def naive(stop: threading.Event) -> None:  # looks at the database every 50 ms for something due
        while not stop.is_set():
            rows = store.tasks("dev")
            any(r["next_run"] <= time.time() for r in rows.values())
            stop.wait(0.05)

    work = ours if kind == "ours" else naive
    window(work, 0.5)  # once first: what it imports lazily and its start-up are not idling
    return window(work, seconds)


def window(work, seconds: float) -> float:
    """CPU seconds of this process per wall second while `work(stop)` ran for `seconds`."""
    stop = threading.Event()
    thread = threading.Thread(target=work, args=(stop,), daemon=True)
    cpu, wall = time.process_time(), time.monotonic()
    thread.start()
    stop.wait(seconds)
    stop.set()
    thread.join(10)
    return (time.process_time() - cpu) / (time.monotonic() - wall)


if __name__ == "__main__":
    print(share(sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])))
