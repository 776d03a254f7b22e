"""No model key at all (issue 46, point 4a): Azur Lane with every popup taken out of the graph, under chaos.

The simulator draws the full Azur Lane graph, its popups included, under tests/data/scenarios/chaos.yaml (a popup
before three hops in ten, chains of them, loading screens, black frames, dropped taps, ADB errors, crashes). The
engine runs as a user without a model would: no GEMINI_API_KEY, on a copy of pages/azurlane whose popups.yaml lists
no popup, with ``learning: {mode: auto, min_sightings: 3}`` in its policy file. Each dialog it meets is closed by the
ladder's rungs (the back key, a home button, the dismissal search, restarting the game) and, seen closed the same way
three times, accepted into the copy as a popup of the graph (engine.learning.learner).

Random gotos over the graph's pages, one after another from wherever the last one left the game; each is checked
against the simulator's truth. Reported per half: arrived, false successes (verified while the game shows another
page or a blocking popup: a non-blocking one, such as IDLE's mark, lets every tap through to the page, as in
benchmarks/test_soak.py), failures by status, dialogs closed and the taps each took, by rung, and the popups accepted.
Asserted at any length: no false success (a goto that fails says so), and no learned popup is named on a clean
frame of any page (the simulator's, nothing over it). NOKEY_GOTOS sets the gotos per half (default
10, the CI form, whose halves are too short for a rate to mean much: printed only); at 200 (the issue's) the issue's
targets are asserted: >= 90 % of the first 200 arrive, >= 99 % of the next 200.
"""

from __future__ import annotations

import os
import random
import shutil
from collections import Counter
from pathlib import Path

import pytest
import yaml

from benchmarks.explore_gotos import strongly_connected
from benchmarks.test_learning_covered_dialog import _fired_on_clean_frames
from benchmarks.test_soak import unambiguous
from engine.config.loader import load_graph
from engine.config.simstate import state_beside
from engine.runtime.session import open_session
from engine.sim import Scenario, SyntheticAssets, start_embedded
from tests.engine.sim.conftest import FakeClock
from tests.engine.test_learning_trust import _user_pack

GOTOS = int(os.environ.get("NOKEY_GOTOS", "10"))
FULL = GOTOS >= 200
ROOT = Path(__file__).resolve().parents[1]
CHAOS = ROOT / "tests" / "data" / "scenarios" / "chaos.yaml"
POLICY = "learning: {mode: auto, min_sightings: 3}\n"
SEED = int(os.environ.get("NOKEY_SEED", "46"))
"""The chaos sequence's and the targets' seed (NOKEY_SEED: another sequence of the same faults)."""


def _without_popups(graph_dir: Path) -> int:
    """Take every popup out of the graph copy in `graph_dir` (and the controls' word that they show one); the number
    taken out."""
    path = graph_dir / "popups.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    names = {p["name"] for p in data.get("popups") or []}
    data["popups"] = []
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    for other in sorted(graph_dir.glob("*.yaml")):
        doc = yaml.safe_load(other.read_text(encoding="utf-8"))
        touched = False
        for page in (doc.get("pages") or []) if isinstance(doc, dict) else []:
            for control in page.get("controls") or []:
                if control.get("shows") in names:
                    del control["shows"]
                    touched = True
        if touched:
            other.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return len(names)


@pytest.mark.soak
def test_with_no_model_key_the_gotos_arrive_and_the_popups_are_learned(tmp_path, monkeypatch, benchmark, capsys,
                                                                     figures):
    full = load_graph(server="en")
    assets = SyntheticAssets(full)
    pack = _user_pack(tmp_path / "pack", assets)
    graph_dir = tmp_path / "graph"
    shutil.copytree(ROOT / "pages" / "azurlane", graph_dir)
    removed = _without_popups(graph_dir)
    assert removed > 0 and not load_graph(graph_dir).popups
    (tmp_path / "policies.yaml").write_text(POLICY, encoding="utf-8")
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "ENGINE_VISION_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    # Pages a goto can reach and leave again while the simulator follows the first link of an event entry (the
    # scenario names no event): another event's page cannot be reached (benchmarks/test_soak.py does the same).
    targets = strongly_connected(unambiguous(full))
    halves = {h: {"gotos": 0, "arrived": 0, "false": [], "failed": Counter(), "closed": Counter(),
                  "taps": Counter(), "accepted": [], "examples": []} for h in ("first", "second")}
    clock = FakeClock()
    # The game as `python -m engine sim` serves it: the graph with the state beside it (mail, commissions, dots,
    # and the screens the game closes on a tap anywhere, pages/azurlane/sim_state.yaml).
    with start_embedded(full, assets=assets, clock=clock, scenario=Scenario.from_file(CHAOS), seed=SEED,
                        state=state_beside(None, full)) as sim, \
            open_session(sim.serial, adb_host=sim.host, adb_port=sim.port, graph_dir=graph_dir, assets=pack,
                         transcript_dir=tmp_path / "run", policies_file=tmp_path / "policies.yaml", clock=clock, sleep=clock.sleep) as session:

        def soak() -> None:
            rng = random.Random(SEED)
            for i in range(2 * GOTOS):
                half = halves["first" if i < GOTOS else "second"]
                here = sim.game.truth()["page"]
                target = rng.choice([t for t in targets if t != here])
                result = session.tools.alas_goto(target)
                truth = sim.game.truth()
                blocking = [p for p in truth["popups"] if full.popup(p).blocking]  # (as benchmarks/test_soak.py)
                half["gotos"] += 1
                if result.ok and (truth["page"] != target or blocking):
                    half["false"].append((i, target, truth["page"], truth["popups"]))
                half["arrived"] += result.ok and truth["page"] == target and not blocking
                if not result.ok:
                    half["failed"][result.status] += 1
                    half["examples"].append((i, target, result.status, truth["page"], truth["popups"]))
                for closed in result.data.get("dialogs_closed") or []:
                    half["closed"][closed["rung"]] += 1
                    half["taps"][closed["rung"]] += closed["taps"]
                half["accepted"] += [s.get("accepted") or s.get("name") for s in result.data.get("learning") or []
                                     if s.get("kind") == "proposal_accepted"]

        benchmark.pedantic(soak, rounds=1, iterations=1)
        fired = _fired_on_clean_frames(session.graph, session.assets, full, assets)  # a learned popup on a page with nothing over it

    learned = load_graph(graph_dir).popups
    rate = {h: s["arrived"] / max(1, s["gotos"]) for h, s in halves.items()}
    with capsys.disabled():
        print(f"\nno model key, Azur Lane with its {removed} popups taken out, chaos, {GOTOS} gotos a half:")
        for h, s in halves.items():
            per = {r: round(s["taps"][r] / s["closed"][r], 1) for r in s["closed"]}
            print(f"  {h} half: arrived {s['arrived']}/{s['gotos']} ({rate[h]:.1%}), false successes "
                  f"{len(s['false'])}, failed {dict(s['failed'])}; dialogs closed by rung {dict(s['closed'])}, taps "
                  f"per dialog {per}; accepted {len(s['accepted'])}")
            print(f"    failures: {s['examples'][:6]}")
        print(f"  popups in the graph at the end: {len(learned)} ({', '.join(p.name for p in learned[:8])}...); "
              f"learned popups named on a clean frame of a page: {fired}")
    benchmark.extra_info.update({"removed": removed, "learned": len(learned), "rate": rate,
                                 **{f"{h}_{k}": (dict(v) if isinstance(v, Counter) else v)
                                    for h, s in halves.items() for k, v in s.items()}})
    for h in halves:
        figures.add(f"no_key_{h}_half_arrival", rate[h], "", kind="ratio")
    figures.add("no_key_popups_learned", len(learned), "", kind="count")
    assert halves["first"]["false"] == [] and halves["second"]["false"] == [], halves
    assert fired == [], fired  # the learned popups never fire on a clean frame
    if FULL:
        assert rate["first"] >= 0.9 and rate["second"] >= 0.99, rate
