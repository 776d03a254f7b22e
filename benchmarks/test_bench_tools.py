"""Tool-surface benchmarks: adb_health while a goto owns the device, and the bounding overhead of a tool call.

Target: adb_health answers within 100 ms (median) while gotos keep the device busy.
"""

from __future__ import annotations

import threading

import pytest

from engine.runtime.tools import Tools

HEALTH_BESIDE_GOTO_S = 0.100


@pytest.fixture(scope="module")
def tools():
    from engine.runtime.session import open_session
    from engine.sim.scenario import Scenario

    session = open_session(scenario=Scenario(loading_min=0.3, loading_max=0.3), seed=3)
    tools = Tools.from_session(session)
    yield tools
    tools.close()
    session.close()


def _median(benchmark) -> float | None:
    stats = getattr(benchmark, "stats", None)
    return stats.stats.median if stats is not None else None


def test_health_while_a_goto_runs(benchmark, tools):
    stop = threading.Event()
    pages = [p for p in ("page_main", "page_commission") if p in tools.graph.page_names]

    def navigate() -> None:
        for i in range(500):  # bounded: the benchmark stops it long before
            if stop.is_set():
                return
            tools.alas_goto(pages[i % len(pages)])

    runner = threading.Thread(target=navigate, daemon=True)
    runner.start()
    try:
        result = benchmark.pedantic(tools.adb_health, rounds=25, iterations=1, warmup_rounds=2)
        busy = tools.device_lock.locked()
    finally:
        stop.set()
        runner.join(60)
    assert result.ok, result.text
    assert busy  # measured beside a goto, not after it
    median = _median(benchmark)
    if median is not None:
        assert median < HEALTH_BESIDE_GOTO_S


def test_tool_call_overhead(benchmark, tools):
    """alas_tools never touches the device: what is left is the worker thread and result building."""
    result = benchmark.pedantic(tools.alas_tools, rounds=200, iterations=1, warmup_rounds=5)
    assert result.data["tool"] == "alas_tools"
