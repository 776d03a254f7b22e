"""The scheduler's costs: CPU while nothing is due (issue 27: <= 1 %), against a scheduler that polls its database
every 50 ms (the naive way) measured in the same run; and `schedule simulate` (short here; SCHEDULE_SIM_DAYS=2 for
the issue's two days on two devices under the chaos scenario)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
IDLE_S = 3.0


def _cpu_share(kind: str, db: Path) -> float:
    """The share measured in a process of its own (benchmarks.idle_cpu: threads of this one are not counted)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "benchmarks.idle_cpu", kind, str(IDLE_S), str(db)], cwd=ROOT,
                          capture_output=True, text=True, timeout=IDLE_S + 60, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    return float(done.stdout.strip().splitlines()[-1])


@pytest.mark.timing  # a CPU share against a same-run baseline: runs alone (the README's last pytest)
def test_bench_idle_scheduler_cpu(benchmark, tmp_path):
    ours = benchmark.pedantic(lambda: _cpu_share("ours", tmp_path / "ours.sqlite3"), rounds=1, iterations=1)
    baseline = _cpu_share("naive", tmp_path / "naive.sqlite3")
    benchmark.extra_info.update({"idle_cpu_share": ours, "naive_cpu_share": baseline, "ratio": ours / baseline})
    assert ours <= 0.01, ours  # issue 27's bound; each in a process of its own: 0.0022-0.0036 idle and busy
    # Not more than the naive poll, with room: ours over it read 0.27-0.48 idle and 0.50-1.0 beside two busy loops
    # (the poll runs less often there); in one process with the run's other threads it once read 1.17.
    assert ours <= 2 * baseline, (ours, baseline)


def test_bench_schedule_simulate(benchmark):
    from engine.runtime.schedsim import simulate

    days = float(os.environ.get("SCHEDULE_SIM_DAYS", "0.1"))
    report = benchmark.pedantic(lambda: simulate(days=days, seed=11, devices=2, kills=1,
                                                 scenario=str(ROOT / "tests/data/scenarios/chaos.yaml")),
                                rounds=1, iterations=1)
    benchmark.extra_info.update(report)
    assert report["missed_days"] == 0 and report["double_claims"] == 0 and report["false_successes"] == 0
    assert report["collect_delay_p95_s"] <= 600 and report["ok"]
