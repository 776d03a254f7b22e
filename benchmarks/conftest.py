"""Every benchmark run writes its figures to one JSON file: the machine it ran on, how loaded it was, and each
benchmark's times, ratios and same-run baselines.

Speed assertions in benchmarks/ compare with a baseline measured in the same run (timed in alternation with ours) or
are a policy bound with ample headroom; absolute times are measured, printed and written here, never a pass/fail
line, because the machines differ two-fold and are shared. The file is ``benchmarks/results/<run>.json``
(``$BENCH_RESULTS_DIR`` moves the folder), where ``<run>`` is the UTC start time; the pages of docs/benchmarks/ name the
run and machine each of their numbers came from.

A test adds figures of its own (beyond pytest-benchmark's statistics and ``extra_info``) with the ``figures``
fixture: ``figures.add("ocr_ms", 10.6, kind="absolute")``; kinds are absolute, ratio, baseline, count and spread (the
bounds of a ratio's interval within the run, beside the ratio it asserts: issue 49). A ratio of two sets of timings
goes through ``figures.ratio(name, ours, baseline)``, which records the ratio of their medians and its 95 %
bootstrap interval (``<name>_95_low``, ``<name>_95_high``), so that every run's file says how far the ratio it
asserted could move inside that run.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.sim.generate import RUN_ENV

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("absolute", "ratio", "baseline", "count", "spread")


def cpu_model() -> str:
    """The CPU's model name as the kernel reports it (x86 and most ARM boards), else what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware") and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def load_average() -> list[float] | None:
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def _commit() -> str | None:
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def ratio_interval(a: list[float], b: list[float], paired: bool = True, draws: int = 1000) -> tuple[float, float]:
    """The 95 % bootstrap interval of median(a) / median(b): the spread of the ratio inside one run (issue 49: a gain
    is claimed only when this interval stays clear of 1). Rounds timed in alternation are resampled in pairs
    (`paired`); sets timed apart, each on its own."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    rng = np.random.default_rng(0)
    if paired:
        n = min(len(x), len(y))
        picks = rng.integers(0, n, (draws, n))
        x, y = x[:n][picks], y[:n][picks]
    else:
        x, y = x[rng.integers(0, len(x), (draws, len(x)))], y[rng.integers(0, len(y), (draws, len(y)))]
    ratios = np.median(x, axis=1) / np.median(y, axis=1)
    return float(np.percentile(ratios, 2.5)), float(np.percentile(ratios, 97.5))


class Figures:
    """Figures of one run, per test: ``{nodeid: {name: {"value", "unit", "kind"}}}``."""

    def __init__(self) -> None:
        self.by_test: dict[str, dict[str, dict[str, Any]]] = {}

    def for_test(self, nodeid: str) -> TestFigures:
        return TestFigures(self.by_test.setdefault(nodeid, {}))


class TestFigures:
    """The figures one test records."""

    __test__ = False  # not a test class, whatever its name says

    def __init__(self, into: dict[str, dict[str, Any]]) -> None:
        self._into = into

    def add(self, name: str, value: float | int | None, unit: str = "ms", kind: str = "absolute") -> None:
        if kind not in KINDS:
            raise ValueError(f"figure {name}: kind must be one of {KINDS}, not {kind!r}")
        self._into[name] = {"value": value if value is None else round(float(value), 6), "unit": unit,
                            "kind": kind}

    def ratio(self, name: str, ours: list[float], baseline: list[float], paired: bool = True) -> tuple[float, float,
                                                                                                    float]:
        """Record median(ours) / median(baseline) as `name` with its 95 % interval inside the run; return all three
        (ratio, low, high)."""
        value = float(np.median(ours)) / float(np.median(baseline))
        low, high = ratio_interval(ours, baseline, paired)
        self.add(name, value, "x", kind="ratio")
        self.add(f"{name}_95_low", low, "x", kind="spread")
        self.add(f"{name}_95_high", high, "x", kind="spread")
        return value, low, high


def pytest_configure(config: pytest.Config) -> None:
    config._bench_figures = Figures()  # type: ignore[attr-defined]
    # The commit whose code the run imports, read now: one made while a long run goes on (its code not loaded)
    # was written as the run's when read at the end.
    config._bench_started = (datetime.now(timezone.utc), load_average(), _commit())  # type: ignore[attr-defined]
    config._bench_extra = {}  # type: ignore[attr-defined]
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:  # xdist's workers collect the same tests only if they draw the same seeds
        os.environ.setdefault(RUN_ENV, str(workerinput["testrunuid"]))


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> TestFigures:
    return request.config._bench_figures.for_test(request.node.nodeid)  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def extra_info_kept_on_workers(request: pytest.FixtureRequest) -> Any:
    """Where pytest-benchmark times nothing (an xdist worker: the README's first pytest runs the benchmarks that
    assert no speed beside the tests; or --benchmark-disable), what a test put in ``benchmark.extra_info`` is kept
    for the run's file."""
    yield
    bench = request.node.funcargs.get("benchmark") if "benchmark" in request.fixturenames else None
    if bench is not None and getattr(bench, "disabled", False):  # not timed: pytest-benchmark keeps nothing of it
        extra = dict(getattr(bench, "extra_info", None) or {})
        if extra:
            request.config._bench_extra[request.node.nodeid] = extra  # type: ignore[attr-defined]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """On the controller: a worker's figures and extra_info join the run's (one file for the whole run)."""
    shipped = getattr(node, "workeroutput", {}).get("bench_figures")
    if not shipped:
        return
    config = node.config
    data = json.loads(shipped)
    config._bench_figures.by_test.update(data.get("figures") or {})  # type: ignore[attr-defined]
    config._bench_extra.update(data.get("extra") or {})  # type: ignore[attr-defined]


def _benchmark_stats(config: pytest.Config) -> dict[str, Any]:
    session = getattr(config, "_benchmarksession", None)
    rows: dict[str, Any] = {node: {"extra_info": extra}
                            for node, extra in getattr(config, "_bench_extra", {}).items()}
    for bench in getattr(session, "benchmarks", None) or []:
        stats = getattr(bench, "stats", None)
        row: dict[str, Any] = {"extra_info": dict(getattr(bench, "extra_info", {}) or {})}
        if stats is not None and getattr(stats, "rounds", 0):
            row.update({f"{key}_ms": round(getattr(stats, key) * 1000.0, 6)
                        for key in ("min", "median", "mean", "max") if hasattr(stats, key)})
            row["rounds"] = stats.rounds
        rows[bench.fullname] = row
    return rows


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if not hasattr(config, "_bench_figures"):
        return
    if getattr(config, "workerinput", None) is not None:  # an xdist worker: the controller writes the file
        config.workeroutput["bench_figures"] = json.dumps(  # type: ignore[attr-defined]
            {"figures": config._bench_figures.by_test, "extra": config._bench_extra}, default=str)  # type: ignore
        return
    started, load_at_start, commit = config._bench_started  # type: ignore[attr-defined]
    benchmarks = _benchmark_stats(config)
    figures = config._bench_figures.by_test  # type: ignore[attr-defined]
    if not benchmarks and not figures:
        return
    run = started.strftime("%Y-%m-%dT%H-%M-%SZ")
    report = {
        "run": run,
        "started": started.isoformat(timespec="seconds"),
        "seconds": round((datetime.now(timezone.utc) - started).total_seconds(), 1),
        "exit_status": int(exitstatus),
        "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "python": platform.python_version(),
                    "system": f"{platform.system()} {platform.release()}",
                    "load_average_at_start": load_at_start, "load_average_at_end": load_average()},
        "commit": commit,
        "benchmarks": benchmarks,
        "figures": figures,
    }
    folder = Path(os.environ.get("BENCH_RESULTS_DIR") or ROOT / "benchmarks" / "results")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{run}.json"
        path.write_text(json.dumps(report, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    except OSError as exc:
        print(f"\nbenchmark figures not written ({folder}): {exc}")
        return
    config._bench_figures_path = path  # type: ignore[attr-defined]


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    path = getattr(config, "_bench_figures_path", None)
    if path is not None:
        terminalreporter.write_line(f"benchmark figures of this run: {path}")
