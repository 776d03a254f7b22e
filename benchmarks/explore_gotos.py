"""Random gotos with a draft graph, driving a simulator of the ground truth, each arrival checked by the truth.

The draft is used as any graph is: ``open_session(serial, graph_dir=DRAFT, assets=DRAFT/assets)`` over ADB to a
simulator built from the truth's graph, pack and page state, and the engine's own goto tool (what
``python -m engine goto PAGE --graph DRAFT`` calls). After each goto the truth's observer reads the frame the
game shows; the goto arrived when it says verified and that is the true page most of the draft page's member
frames show. A goto the
draft calls verified that did not arrive is a false success; one that failed on the right page did not arrive
(``there_unverified`` counts those). A draft page most of whose frames the truth cannot name (a screen the
truth's graph does not have: the chaos scenario's unknown screens, drafted as a page) or sees under a popup (a
dialog drafted as a page, which shows over whatever page it came on) is no goto target: there is no one true page
to judge an arrival there by, and the page already costs the draft its precision or its popup recall; such pages
are counted (``unjudged``). The simulator and the session share a virtual
clock, so loading screens and waits cost no wall time.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from benchmarks.explore_score import Truth
from engine.config.loader import load_graph
from engine.core.errors import EngineError

BLACK_RETRIES = 5


def strongly_connected(graph: Any) -> list[str]:
    """The pages of the largest strongly connected part of `graph`'s links (ties: the one holding the most-linked
    page): the pages a goto can end on and leave again, so a run of gotos never strands itself."""
    names = [p.name for p in graph.pages if p.name != graph.unknown_page]
    out = {p.name: {link.to for link in p.links if link.to in names} for p in graph.pages if p.name in names}

    def reach(start: str, edges: dict[str, set[str]]) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    back: dict[str, set[str]] = {n: set() for n in names}
    for src, dsts in out.items():
        for dst in dsts:
            back[dst].add(src)
    best: list[str] = []
    for name in names:
        part = sorted(reach(name, out) & reach(name, back))
        if len(part) > len(best):
            best = part
    return best


def confirm(sim: Any, truth: Truth) -> tuple[str | None, dict]:
    """(the truth observer's page on what the game shows now, what the simulator says it shows) after a goto.

    A page change still drawing (a fade or slide between two pages, on the game's clock) is let finish first: a
    blend of two pages is no screen to judge a goto by, and the game is where it is going."""
    if sim.game.truth()["transition"]:
        sim.game.sleep(sim.game.scenario.transition_s)
    seen = None
    for _ in range(BLACK_RETRIES):  # a scenario's black frame is the capture failing, not the game moving
        obs = truth.observer.observe(sim.game.frame())
        if not obs.black_frame:
            seen = obs.page
            break
    return seen, sim.game.truth()


def run_gotos(draft_dir: str | Path, truth: Truth, page_of: dict[str, str | None], *, n: int = 200, seed: int = 0,
              scenario: Any = None, graph_dir: str | Path | None = None, assets_dir: str | Path | None = None,
              policies_file: str | Path | None = None, transcript_dir: str | Path | None = None) -> dict[str, Any]:
    """`n` gotos to random draft pages (those of the draft graph's largest strongly connected part that have a true
    page), one after another from wherever the last one left the game.

    Args:
        page_of: each draft page's true page (``Score.page_of``).
        graph_dir, assets_dir: the draft graph and its pack (default: the draft folder and its assets/).
        policies_file: the session's policies (default: the shipped ones).
        transcript_dir: the session's transcript folder (default: none). A policy's ``learning`` needs one: the
            proposals are written beside it, and without it nothing is learned.
    """
    from engine.runtime.session import open_session
    from engine.sim import start_embedded
    from engine.sim.process import SharedClock

    graph_dir = Path(graph_dir or draft_dir)
    assets_dir = Path(assets_dir or Path(draft_dir) / "assets")
    try:
        part = [p for p in strongly_connected(load_graph(graph_dir).resolve()) if p in page_of]
    except EngineError as exc:
        return {"gotos": n, "arrived": 0, "arrival_rate": 0.0, "false_successes": 0, "error": str(exc)}
    targets, unjudged = [p for p in part if page_of[p] is not None], [p for p in part if page_of[p] is None]
    if not targets:
        return {"gotos": n, "arrived": 0, "arrival_rate": 0.0, "false_successes": 0, "unjudged": unjudged,
                "error": "no goto target"}
    rng, clock, outcomes = random.Random(seed), SharedClock(), []
    wall = time.perf_counter()
    with start_embedded(truth.graph, assets=truth.assets, scenario=scenario, seed=seed, clock=clock.now,
                        state=truth.state, style=getattr(truth, "style", None)) as sim:
        session = open_session(sim.serial, graph_dir=graph_dir, assets=assets_dir, adb_host=sim.host,
                               adb_port=sim.port, clock=clock.now, sleep=clock.sleep, policies_file=policies_file,
                               transcript_dir=transcript_dir)
        try:
            for _ in range(n):
                target = rng.choice(targets)
                result = session.tools.alas_goto(target)
                seen, real = confirm(sim, truth)
                expected = page_of[target]
                there = expected is not None and seen == expected
                outcomes.append({"target": target, "expected": expected, "ok": result.ok, "status": result.status,
                                 "seen": seen, "sim": real["page"], "popups": real["popups"], "there": there,
                                 "arrived": result.ok and there, "false_success": result.ok and not there})
            learning = session.navigator.learner is not None
        finally:
            session.close()
    arrived = sum(o["arrived"] for o in outcomes)
    return {
        "gotos": n, "targets": len(targets), "unjudged": unjudged, "arrived": arrived, "arrival_rate": arrived / n,
        "learning": learning,
        "verified": sum(o["ok"] for o in outcomes),
        "there_unverified": sum(o["there"] and not o["ok"] for o in outcomes),
        "false_successes": sum(o["false_success"] for o in outcomes),
        "false_success_examples": [(o["target"], o["expected"], o["seen"]) for o in outcomes
                                   if o["false_success"]][:5],
        "failures": [(o["target"], o["status"], o["sim"], o["popups"]) for o in outcomes if not o["ok"]][:10],
        "arrived_each": [o["arrived"] for o in outcomes],
        "observer_disagrees_with_sim": sum(o["seen"] != o["sim"] for o in outcomes),
        "wall_s": round(time.perf_counter() - wall, 1),
        "virtual_s": round(clock.now() - 1000.0, 1),
    }


def pack_folder(assets: Any, folder: Path) -> Path:
    """`assets` written as a project-layout pack in `folder` (a synthetic pack has no folder of its own)."""
    from engine.config.assetpacks import new_index, save_index, write_template

    index = new_index(getattr(assets, "server", None))
    for name in assets.names():
        write_template(folder, assets.get(name), index)
    save_index(folder, index)
    return folder
