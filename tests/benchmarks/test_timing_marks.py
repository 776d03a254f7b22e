"""The README's first pytest runs every benchmark not marked ``timing`` on xdist workers beside the tests, where
pytest-benchmark times nothing (it runs the function once) and other processes move every clock. So a benchmark
there must not be a timed one: no auto-calibrated ``benchmark(...)``, no ``pedantic`` with more than one round; a
benchmark that times (benchmarks/README.md) carries the ``timing`` mark and runs alone."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _timed_calls(source: str) -> list[str]:
    """The calls in `source` that pytest-benchmark would time over several rounds."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "benchmark":
            found.append(f"line {node.lineno}: benchmark(...)")
        if isinstance(func, ast.Attribute) and func.attr == "pedantic":
            rounds = next((k.value for k in node.keywords if k.arg == "rounds"), None)
            if not (isinstance(rounds, ast.Constant) and rounds.value == 1):
                found.append(f"line {node.lineno}: pedantic(rounds={ast.unparse(rounds) if rounds else '?'})")
    return found


def test_what_runs_beside_the_tests_times_nothing():
    done = subprocess.run([sys.executable, "-m", "pytest", "benchmarks", "-m", "not timing", "--collect-only", "-q",
                           "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    nodes = [line for line in done.stdout.splitlines() if "::" in line]
    assert nodes, done.stdout[-2000:] + done.stderr[-2000:]
    offending = {}
    for node in nodes:
        path, name = node.split("::")[0], node.split("::")[1].split("[")[0]
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        func = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
        timed = _timed_calls(ast.unparse(func))
        if timed:
            offending[f"{path}::{name}"] = timed
    assert not offending, f"timed benchmarks without the timing mark: {offending}"


def test_the_check_sees_a_timed_benchmark():
    assert _timed_calls("def t(benchmark):\n    benchmark(f)\n")
    assert _timed_calls("def t(benchmark):\n    benchmark.pedantic(f, rounds=3)\n")
    assert not _timed_calls("def t(benchmark):\n    benchmark.pedantic(f, rounds=1, iterations=1)\n")


SINGLE_MEASUREMENT = {
    "benchmarks/test_learning_new_dialog.py": "one soak's wall time per mode: no samples to resample inside a run "
                                              "(its spread over runs is in docs/benchmarks/timing-spread.md)",
    "benchmarks/test_bench_capture.py": "records the range of its back-to-back pairs as its spread (asserted on)",
}
"""Timing benchmarks that record a ratio without figures.ratio, and why."""


def _timing_marked(tree: ast.Module) -> list[ast.FunctionDef]:
    """The test functions of a module that carry the timing mark (their own decorator or the module's pytestmark)."""
    def has_timing(node: ast.AST) -> bool:
        return "mark.timing" in ast.unparse(node)

    module_marked = any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                         for t in n.targets) and has_timing(n.value)
                        for n in tree.body)
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test")
            and (module_marked or any(has_timing(d) for d in n.decorator_list))]


def _bare_ratios(func: ast.FunctionDef) -> list[str]:
    """figures.add(..., kind="ratio") calls: a ratio recorded without its interval."""
    return [f"line {n.lineno}" for n in ast.walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == "add" and any(k.arg == "kind" and isinstance(k.value, ast.Constant)
                                             and k.value.value == "ratio" for k in n.keywords)]


def test_every_ratio_a_timing_benchmark_records_carries_its_interval():
    """Issue 49 point 4: the figures JSON records the spread of each ratio a benchmark asserts. A timing benchmark
    records its ratios with figures.ratio (the ratio and its 95 % interval inside the run), unless it is listed in
    SINGLE_MEASUREMENT with the reason it cannot."""
    offending, seen = {}, 0
    for path in sorted((ROOT / "benchmarks").glob("test_*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for func in _timing_marked(ast.parse(path.read_text(encoding="utf-8"))):
            seen += 1
            if (bare := _bare_ratios(func)) and rel not in SINGLE_MEASUREMENT:
                offending[f"{rel}::{func.name}"] = bare
    assert seen >= 10, seen  # the scan finds the timing benchmarks at all
    assert not offending, f"ratios recorded without their interval (use figures.ratio): {offending}"


def test_the_ratio_check_sees_a_bare_ratio():
    func = ast.parse('@pytest.mark.timing\ndef test_t(figures):\n    figures.add("a_over_b", 1.0, "x", kind="ratio")\n')
    assert _bare_ratios(_timing_marked(func)[0]) == ["line 3"]
    assert not _timing_marked(ast.parse("def test_t(figures):\n    pass\n"))


def test_figures_ratio_records_the_ratio_and_an_interval_around_it():
    import importlib.util

    spec = importlib.util.spec_from_file_location("benchmarks_conftest", ROOT / "benchmarks" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    TestFigures = module.TestFigures
    into: dict = {}
    ours, base = [1.0, 1.1, 0.9, 1.05, 0.95] * 4, [2.0, 2.2, 1.8, 2.1, 1.9] * 4
    value, low, high = TestFigures(into).ratio("a_over_b", ours, base)
    assert low <= value <= high and abs(value - 0.5) < 1e-9
    assert {k: v["kind"] for k, v in into.items()} == {"a_over_b": "ratio", "a_over_b_95_low": "spread",
                                                       "a_over_b_95_high": "spread"}
    _, low, high = TestFigures({}).ratio("a_over_b", ours, base, paired=False)
    assert low <= 0.5 <= high
