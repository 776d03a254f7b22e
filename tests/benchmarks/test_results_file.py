"""The benchmarks' figures file (benchmarks/conftest.py) holds every test's figures whether the benchmarks ran alone
or on xdist workers beside the tests (the README's first pytest runs those that assert no speed that way)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = "from benchmarks.conftest import *  # noqa: F401,F403 - the hooks and fixtures under test\n"
TESTS = '''
import pytest
from engine.sim.generate import short_seeds

SEEDS = short_seeds(2, salt=__name__)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_figure(seed, figures):
    figures.add("seed", seed, unit="", kind="count")


@pytest.mark.parametrize("n", range(4))
def test_extra_info(n, benchmark):
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    benchmark.extra_info.update({"n": n})
'''


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["alone", "two_workers"])
def test_every_tests_figures_reach_the_one_file(tmp_path, workers):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_sample.py").write_text(TESTS)
    results = tmp_path / "results"
    env = {**os.environ, "BENCH_RESULTS_DIR": str(results), "PYTHONPATH": str(ROOT)}
    for name in [k for k in env if k.startswith(("PYTEST_XDIST", "GEN_SEEDS"))]:  # not this suite's worker's
        env.pop(name)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers,
                           "-o", "addopts=", str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    [written] = list(results.glob("*.json"))
    run = json.loads(written.read_text())
    figures = {node.split("::")[1]: values for node, values in run["figures"].items()}
    assert len(figures) == 2 and all(v["seed"]["kind"] == "count" for v in figures.values()), figures
    extra = {node.split("::")[1]: stats["extra_info"] for node, stats in run["benchmarks"].items()}
    assert extra == {f"test_extra_info[{n}]": {"n": n} for n in range(4)}, extra


def test_the_run_is_written_with_the_commit_it_started_at(tmp_path, monkeypatch):
    """A commit made while a long run goes on (its code never imported by the run) is not the run's: the no-key long
    form at 8456294 was written as 9c12b45's, committed ten minutes into its nineteen."""
    from types import SimpleNamespace

    import benchmarks.conftest as hooks

    monkeypatch.setenv("BENCH_RESULTS_DIR", str(tmp_path))
    monkeypatch.setattr(hooks, "_commit", lambda: "started")
    config = SimpleNamespace()
    hooks.pytest_configure(config)
    config._bench_figures.for_test("test_x.py::test_y").add("a_figure", 1.0, "", kind="count")
    monkeypatch.setattr(hooks, "_commit", lambda: "committed_since")
    monkeypatch.setattr(hooks, "_benchmark_stats", lambda config: {})
    hooks.pytest_sessionfinish(SimpleNamespace(config=config), 0)
    [written] = list(tmp_path.glob("*.json"))
    assert json.loads(written.read_text())["commit"] == "started"
