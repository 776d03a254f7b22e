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
