"""Gotos with a draft graph on the simulator playing the true graph (tests only): how many arrive, as the true
graph's observer sees the simulator's screen, and how many claimed success where they did not."""

from __future__ import annotations

import random
from pathlib import Path

from engine.config.loader import load_graph
from engine.explore.draft import load_draft
from engine.runtime.session import open_session
from engine.sim import start_embedded


def gotos(draft_dir: Path, truth_dir: Path, labels: dict[str, str | None], count: int = 20, seed: int = 1,
          scenario=None) -> dict:
    truth = load_graph(truth_dir).resolve(None)
    sim = start_embedded(truth, scenario=scenario, seed=seed)
    draft = load_draft(draft_dir)
    names = [p.name for p in draft.pages if labels.get(p.name)]
    rng = random.Random(seed)
    arrived = false_success = failed = 0
    try:
        session = open_session(sim.serial, graph_dir=draft_dir, assets=draft_dir / "assets", adb_host=sim.host,
                               adb_port=sim.port)
        try:
            for _ in range(count):
                target = rng.choice(names)
                result = session.tools.alas_goto(target)
                really = sim.game.truth()["page"] == labels[target]
                if result.ok and really:
                    arrived += 1
                elif result.ok:
                    false_success += 1
                else:
                    failed += 1
        finally:
            session.close()
    finally:
        sim.stop()
    return {"arrived": arrived, "false_success": false_success, "failed": failed, "count": count}
