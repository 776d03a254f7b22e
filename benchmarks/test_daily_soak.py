"""The daily soak: `daily` runs on the simulator under the navigation soak's chaos, every chore's claim checked
against the simulator's truth.

Each run opens a fresh session (so the game holds a full day's chores: engine.config.simstate from the graph's
sim_state*.yaml) under ``benchmarks.test_soak.chaos`` with its own seed, runs ``alas_run daily`` once, and reads the
simulator's state before and after. For every page a chore works on (the page of its first goto):

- what the chores claim they collected there (``data.chores[*].collected``) must equal what the taps on that page
  really took (``truth.state.taken``: mails, missions, commissions, research projects...): no claim without an
  effect, no effect left unreported;
- a chore that ended ok (done or nothing to collect) must leave nothing on its page that a tap would still change
  (``truth.state.actionable``): zero false successes.

DAILY_SOAK_RUNS sets the number of runs (default 1, the CI form; 50 is the issue's soak). The report prints, per
chore, how often it ended done / nothing / failed, its median time and its median device round trips (the run
context's device calls). Time is real: loading screens cost real seconds, as in the agent soak.
"""

from __future__ import annotations

import os
import statistics
from collections import defaultdict

import pytest

from benchmarks.test_soak import chaos
from engine.config.tasks import GotoStep
from engine.runtime.session import open_session

RUNS = int(os.environ.get("DAILY_SOAK_RUNS", "1"))


def _chore_pages(session) -> dict[str, str]:
    book = session.tasks.book
    daily = book.get("daily")
    pages = {}
    for step in daily.steps:
        if step.type == "run":
            first = next((s for s in book.get(step.task).steps if isinstance(s, GotoStep)), None)
            pages[step.task] = first.page if first is not None else None
    return pages


def run_daily(seed: int) -> dict:
    """One daily under chaos: the chores' entries and what the truth says about each page."""
    with open_session(scenario=chaos(_graph()), seed=seed) as session:
        pages = _chore_pages(session)
        before = session.sim.game.truth()["state"]
        result = session.tools.alas_run("daily")
        after = session.sim.game.truth()["state"]
    claimed: dict[str, int] = defaultdict(int)
    page_ok: dict[str, bool] = {}
    for chore in result.data.get("chores", []):
        page = pages.get(chore["task"])
        claimed[page] += int(chore.get("collected") or 0)
        page_ok[page] = page_ok.get(page, True) and chore["outcome"] == "done"  # every chore there claims ok
    ok_pages = {p for p, ok in page_ok.items() if ok}
    taken = {p: after["taken"].get(p, 0) - before["taken"].get(p, 0) for p in set(pages.values())}
    mismatches = {p: (claimed.get(p, 0), taken[p]) for p in taken if claimed.get(p, 0) != taken[p]}
    false = {p: after["actionable"][p] for p in ok_pages if after["actionable"].get(p)}
    return {"seed": seed, "status": result.status, "text": result.text, "chores": result.data.get("chores", []),
            "mismatches": mismatches, "false_successes": false}


_GRAPH = []


def _graph():
    if not _GRAPH:
        from engine.config.loader import load_graph

        _GRAPH.append(load_graph().resolve())
    return _GRAPH[0]


def run_soak(runs: int) -> dict:
    results = [run_daily(1000 + i) for i in range(runs)]
    per: dict[str, dict] = defaultdict(lambda: {"done": 0, "nothing": 0, "failed": 0, "seconds": [], "calls": []})
    for r in results:
        for c in r["chores"]:
            row = per[c["task"]]
            kind = "failed" if c["outcome"] == "failed" else "nothing" if c.get("nothing_to_collect") else "done"
            row[kind] += 1
            row["seconds"].append(c.get("seconds", 0.0))
            row["calls"].append(c.get("device_calls", 0))
    return {"runs": results, "per_chore": {k: {**v, "seconds": statistics.median(v["seconds"]),
                                               "calls": statistics.median(v["calls"])} for k, v in per.items()}}


@pytest.mark.soak
def test_daily_soak_under_chaos(benchmark, capsys):
    stats = benchmark.pedantic(run_soak, args=(RUNS,), rounds=1, iterations=1)
    runs = stats["runs"]
    with capsys.disabled():
        print(f"\ndaily soak: {len(runs)} runs under chaos; statuses "
              f"{dict((s, sum(r['status'] == s for r in runs)) for s in {r['status'] for r in runs})}")
        for name, row in stats["per_chore"].items():
            print(f"  {name:<20} done {row['done']:>3} nothing {row['nothing']:>3} failed {row['failed']:>3}  "
                  f"median {row['seconds']:.2f} s, {row['calls']:.0f} device calls")
        print(f"  claims that differ from the truth: {sum(len(r['mismatches']) for r in runs)}; "
              f"false successes: {sum(len(r['false_successes']) for r in runs)}")
    benchmark.extra_info.update({"runs": len(runs), "per_chore": stats["per_chore"]})
    assert all(not r["false_successes"] for r in runs), [(r["seed"], r["false_successes"]) for r in runs]
    assert all(not r["mismatches"] for r in runs), [(r["seed"], r["mismatches"], r["text"]) for r in runs]
    assert all(r["chores"] for r in runs), [r["text"] for r in runs]
    done = sum(row["done"] + row["nothing"] for row in stats["per_chore"].values())
    total = sum(row["done"] + row["nothing"] + row["failed"] for row in stats["per_chore"].values())
    assert done / total >= 0.8, stats["per_chore"]  # chaos may fail a chore; it must never fake one
