#!/usr/bin/env python3
"""Rerun timing-sensitive tests N times and print each one's pass rate and the spread of every ratio it records.

A speed assertion is only as good as the room between its bound and the ratio's own run-to-run spread (issue 49):
a bound inside the spread fails at random. Run this before you add or tighten one, idle and beside busy loops:

    python scripts/timing-spread.py benchmarks/test_bench_verify.py --runs 5
    python scripts/timing-spread.py benchmarks/test_bench_verify.py --runs 3 --busy 2
    python scripts/timing-spread.py tests/engine/device/test_health_fast.py --runs 5 --json spread.json
    python scripts/timing-spread.py --records hunt-1.jsonl hunt-2.jsonl hunt-3.jsonl

Each run is `python -m pytest <targets> -p no:cacheprovider` in a process of its own, with its figures file
(benchmarks/conftest.py) written to a temporary folder, and the speed checks of tests/ (tests/speed.py) to a file
of its own: each reports the largest share of its bound it used. `--records F...` runs nothing and reports the
checks that runs of the README's command recorded with `SPEED_RECORD=F` set (a flake hunt). `--busy K`
keeps K busy loops running beside every run (the "two busy loops" of the flake hunts). The output is one line per
test (passes of runs) and one per ratio figure: min, median and max over the runs, and the bound-to-spread room
is for you to read against the assertion's bound.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD_ENV = "SPEED_RECORD"
"""tests/speed.py appends each speed check of tests/ to the file this names (the test, the value and its bound)."""


def _spin(stop: multiprocessing.Event) -> None:  # type: ignore[valid-type]
    while not stop.is_set():
        for _ in range(100_000):
            pass


def one_run(targets: list[str], timeout: float, extra: list[str]
            ) -> tuple[dict[str, str], dict[str, float], dict[str, float]]:
    """({nodeid: passed|failed|...}, {nodeid::figure: ratio}, {nodeid::check: share of its bound used}) of one
    pytest run."""
    with tempfile.TemporaryDirectory(prefix="spread-") as folder:
        env = {**os.environ, "BENCH_RESULTS_DIR": folder, RECORD_ENV: f"{folder}/speed.jsonl"}
        cmd = [sys.executable, "-m", "pytest", *targets, "-q", "-p", "no:cacheprovider", "-rA", *extra,
               f"--junitxml={folder}/junit.xml"]
        try:
            subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"(run)": "timeout"}, {}, {}
        outcomes = _junit(Path(folder) / "junit.xml")
        ratios: dict[str, float] = {}
        for path in Path(folder).glob("*.json"):
            data = json.loads(path.read_text())
            for test, figures in (data.get("figures") or {}).items():
                for name, figure in figures.items():
                    if figure.get("kind") == "ratio" and figure.get("value") is not None:
                        ratios[f"{test}::{name}"] = float(figure["value"])
        return outcomes, ratios, used_of_bounds([Path(folder) / "speed.jsonl"])


def used_of_bounds(paths: list[Path]) -> dict[str, float]:
    """{test::check: the largest share of its bound it used} from the lines tests/speed.py wrote (value / bound;
    for an at-least check, bound / value): 1.0 is the bound itself."""
    used: dict[str, float] = {}
    for path in paths:
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                row = json.loads(line)
                value, bound = float(row["value"]), float(row["bound"])
                share = (bound / value if value else float("inf")) if row.get("kind") == "at_least" else \
                    (value / bound if bound else float("inf"))
            except (ValueError, KeyError, TypeError):
                continue
            key = f"{row.get('test')}::{row.get('what')}"
            used[key] = max(used.get(key, 0.0), share)
    return used


def _print_used(runs: list[dict[str, float]]) -> None:
    names = sorted({n for r in runs for n in r})
    if names:
        print(f"\n{'speed check (share of its bound used)':<110} {'min':>6} {'median':>6} {'max':>6} runs")
    for name in names:
        values = [r[name] for r in runs if name in r]
        print(f"{name[:110]:<110} {min(values):6.3f} {statistics.median(values):6.3f} {max(values):6.3f} {len(values)}")


def _junit(path: Path) -> dict[str, str]:
    import xml.etree.ElementTree as ET

    if not path.is_file():
        return {"(run)": "no report"}
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        out[name] = ("failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help="pytest targets (files or node ids)")
    parser.add_argument("--records", nargs="+", metavar="JSONL", type=Path,
                        help="run nothing: report the speed checks recorded by earlier runs, one file a run (each "
                             "run of the README's command with SPEED_RECORD=<file> set)")
    parser.add_argument("--runs", type=int, default=5, help="how many times to run them (default 5)")
    parser.add_argument("--busy", type=int, default=0, help="busy loops beside each run (default 0)")
    parser.add_argument("--timeout", type=float, default=1200, help="bound of one run in seconds (default 1200)")
    parser.add_argument("--json", metavar="FILE", help="also write the per-run outcomes and ratios here")
    args, extra = parser.parse_known_args(argv)  # anything else goes to pytest (-k, -m, ...)
    extra = [a for a in extra if a != "--"]
    if args.records:
        _print_used([used_of_bounds([path]) for path in args.records])
        return 0
    if not args.targets:
        parser.error("name pytest targets, or --records")
    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(args.busy)]
    for spinner in spinners:
        spinner.start()
    runs = []
    try:
        for i in range(args.runs):
            started = time.monotonic()
            outcomes, ratios, used = one_run(args.targets, args.timeout, extra)
            failed = [t for t, o in outcomes.items() if o not in ("passed", "skipped")]
            print(f"run {i + 1}/{args.runs}: {len(outcomes)} tests, {len(failed)} not passed, "
                  f"{time.monotonic() - started:.0f} s" + (f" ({', '.join(failed)})" if failed else ""),
                  file=sys.stderr, flush=True)
            runs.append({"outcomes": outcomes, "ratios": ratios, "used": used})
    finally:
        stop.set()
        for spinner in spinners:
            spinner.join(timeout=5)
    tests = sorted({t for r in runs for t in r["outcomes"]})
    print(f"{'test':<90} passed")
    for test in tests:
        got = [r["outcomes"].get(test) for r in runs]
        print(f"{test:<90} {sum(g == 'passed' for g in got)}/{sum(g is not None and g != 'skipped' for g in got)}")
    names = sorted({n for r in runs for n in r["ratios"]})
    if names:
        print(f"\n{'ratio':<90} {'min':>7} {'median':>7} {'max':>7}")
    for name in names:
        values = [r["ratios"][name] for r in runs if name in r["ratios"]]
        print(f"{name:<90} {min(values):7.3f} {statistics.median(values):7.3f} {max(values):7.3f}")
    _print_used([r["used"] for r in runs])
    if args.json:
        Path(args.json).write_text(json.dumps({"busy": args.busy, "runs": runs}, indent=1))
    return 0 if all(all(o in ("passed", "skipped") for o in r["outcomes"].values()) for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
