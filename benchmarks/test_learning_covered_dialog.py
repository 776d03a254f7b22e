"""A dialog over a dimmed page (issue 36), measured: never "verified" under it, and learned once wherever it sits.

The simulator draws the full Azur Lane graph; the engine runs on a user's copy of it (open_session, a policy file
with ``learning: {mode: auto, min_sightings: 3}``, as a user would). Before a goto, at SHOW rate, the test's own
dialog (tests/engine/new_dialog.py: "Limited offer!", 500x300, a title bar, three lines of text, BUY NOW, a red
X) is set to show when the next page opens (as games open their offers), over the page dimmed to 45 %; in some
of those it comes back at once after it was closed. The vision model is the REAL google-genai client against
tests/gemini_fake.py's FakeGemini, answering where the X on screen is (no point for a dialog without one).

Variants: ``fixed`` (the X at the title bar's right end), ``moving_x`` (the X anywhere in the panel's body, clear
of BUY NOW), ``shifting`` (the whole panel moves by up to 40 pixels each way between showings, X moving too),
``back_key`` (no X: only the back key closes it).

Reported per variant: proposals written, the goto at which the dialog was accepted, model calls per 100 gotos
before and after, failed gotos, false successes (ok while the simulator shows another page or a popup) and gotos
reported verified while the dialog was up; after the run, the pages on whose clean frame the learned popup fires.
Asserted: nothing verified under the dialog, no false success, one popup accepted within 30 gotos, after it at
most 2 model calls per 100 gotos, and the learned popup firing on no clean page.

LEARN_COVER_GOTOS sets the gotos per variant (default 30, the CI form; 200 is the issue's). Waits move a fake
clock, so the wall time is the engine's own work.
"""

from __future__ import annotations

import os
import random
import shutil
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from engine.config.loader import load_graph
from engine.runtime.session import open_session
from engine.observe.observer import Observer
from engine.sim import SimGame, SyntheticAssets, start_embedded
from tests.engine import new_dialog
from tests.engine.sim.conftest import FakeClock
from tests.engine.test_learning_trust import _user_pack
from tests.gemini_fake import FakeGemini

GOTOS = int(os.environ.get("LEARN_COVER_GOTOS", "30"))
TARGETS = ("page_main", "page_reward", "page_mail", "page_commission", "page_mission", "page_dormmenu")
SHOW = 0.25
"""Chance that the dialog is set to show on the next page a goto opens (it is, before each of the first three)."""
AGAIN = 0.15
"""Chance that a dialog shown comes back once at once after it was closed."""
ACCEPT_BY = 30
ROOT = Path(__file__).resolve().parents[1]
VARIANTS = ("fixed", "moving_x", "shifting", "back_key")


def _dialog(variant: str, rng: random.Random, then=None):
    spot = new_dialog.FIXED_X if variant == "fixed" else new_dialog.moving_spot(rng)
    at = new_dialog.shifted(rng) if variant == "shifting" else new_dialog.AT
    return new_dialog.offer(spot, dim=new_dialog.DIM, at=at, back=variant == "back_key", then=then,
                            returns="at_once")


def run(variant: str, gotos: int, tmp_path: Path, monkeypatch) -> dict:
    """`gotos` gotos of one auto-mode session with the dialog of `variant`: the figures of the module docstring."""
    full = load_graph(server="en")
    assets = SyntheticAssets(full)
    pack = _user_pack(tmp_path / "pack", assets)
    stats = {"calls": Counter(), "gotos": Counter(), "shown": Counter(), "failed": Counter(), "false": [],
             "under": [], "failures": [], "accepted": [], "accepted_at": None, "seconds": 0.0}
    gemini, clock = FakeGemini(), FakeClock()
    try:
        with start_embedded(full, assets=assets, clock=clock) as sim:
            gemini.answer = new_dialog.model(sim.game)
            shutil.copytree(ROOT / "pages" / "azurlane", tmp_path / "graph")
            (tmp_path / "policies.yaml").write_text("learning: {mode: auto, min_sightings: 3}\n")
            monkeypatch.setenv("GEMINI_API_KEY", "bench-key")
            monkeypatch.setenv("ENGINE_VISION_BASE_URL", gemini.url)
            monkeypatch.setenv("ENGINE_VISION_TIMEOUT", "5")
            with open_session(sim.serial, adb_host=sim.host, adb_port=sim.port, graph_dir=tmp_path / "graph",
                              assets=pack, transcript_dir=tmp_path / "run", policies_file=tmp_path / "policies.yaml",
                              clock=clock, sleep=clock.sleep) as session:
                game, rng = sim.game, random.Random(36)
                game.goto("page_main")
                for i in range(gotos):
                    here = game.truth()["page"]
                    target = rng.choice([t for t in TARGETS if t != here])
                    shown = i < 3 or rng.random() < SHOW
                    if shown:
                        again = _dialog(variant, rng) if rng.random() < AGAIN else None
                        game.overlays.waiting.append(_dialog(variant, rng, then=again))  # on the next page
                    phase = "after" if stats["accepted"] else "before"
                    start, requests = time.perf_counter(), len(gemini.calls)
                    result = session.tools.alas_goto(target)
                    stats["seconds"] += time.perf_counter() - start
                    stats["calls"][phase] += len(gemini.calls) - requests
                    stats["gotos"][phase] += 1
                    stats["shown"][phase] += shown
                    accepted = [s["accepted"] for s in result.data.get("learning", [])
                                if s["kind"] == "proposal_accepted"]
                    if accepted and stats["accepted_at"] is None:
                        stats["accepted_at"] = i + 1
                    stats["accepted"] += accepted
                    truth = game.truth()
                    if result.ok and truth["overlays"]:
                        stats["under"].append((i, target, truth["page"]))
                    if result.ok and (truth["page"] != target or truth["popups"]):
                        stats["false"].append((i, target, truth["page"], truth["popups"]))
                    if not result.ok:
                        stats["failed"][result.status] += 1
                        stats["failures"].append((i, target, result.text[:300]))
                    game.overlays.clear()  # the next goto starts clean, wherever it is
                    if not result.ok:
                        game.goto(target)
                stats["fired"] = _fired_on_clean_frames(session.graph, session.assets, full, assets)
    finally:
        gemini.close()
    folder = tmp_path / "run" / "proposals"
    stats["proposals"] = sum(1 for _ in folder.rglob("*.yaml") if _.parent.name in ("proposals", "accepted",
                                                                                      "rejected"))
    stats["per100"] = {phase: round(100 * stats["calls"][phase] / max(1, stats["gotos"][phase]), 1)
                       for phase in stats["gotos"]}
    learned = list((tmp_path / "graph").glob("learned_*.yaml"))
    stats["learned"] = [yaml.safe_load(p.read_text())["popups"][0]["dismiss"] for p in learned]
    return stats


def _fired_on_clean_frames(graph, pack, full, assets, still=None) -> list[tuple[str, list[str]]]:
    """The pages on whose clean frame (the simulator's, nothing over it) a learned popup of `graph` (observed with
    `pack`, as a session of it observes) fires. `still`: the game that draws them (default: a SimGame of `full` with
    `assets`)."""
    observer = Observer(graph, pack)
    learned = {p.name for p in graph.popups if p.learned}
    still = still if still is not None else SimGame(full, assets=assets)
    fired = []
    for page in [p.name for p in full.pages if p.signatures and p.name != full.unknown_page]:
        still.goto(page)
        names = sorted(set(observer.observe(still.frame(), expected=page).popups) & learned)
        if names:
            fired.append((page, names))
    return fired


@pytest.mark.soak
@pytest.mark.parametrize("variant", VARIANTS)
def test_the_dialog_is_never_verified_under_and_is_learned_once(variant, tmp_path, monkeypatch, benchmark, capsys):
    stats: dict = {}
    benchmark.pedantic(lambda: stats.update(run(variant, GOTOS, tmp_path, monkeypatch)), rounds=1, iterations=1)
    with capsys.disabled():
        print(f"\ncovered dialog ({variant}), {GOTOS} gotos: proposals written {stats['proposals']}, accepted "
              f"{stats['accepted']} at goto {stats['accepted_at']}; model calls per 100 gotos {stats['per100']} "
              f"(gotos {dict(stats['gotos'])}, shown {dict(stats['shown'])}); failed {dict(stats['failed'])}; "
              f"false successes {len(stats['false'])}; verified under the dialog {len(stats['under'])}; learned popup "
              f"fired on clean pages {stats['fired']}; "
              f"wall {stats['seconds']:.1f} s; learned dismiss {stats['learned']}; failures {stats['failures']}")
    benchmark.extra_info.update({k: (dict(v) if isinstance(v, Counter) else v) for k, v in stats.items()})
    assert stats["under"] == [], stats["under"]
    assert stats["false"] == [], stats["false"]
    assert stats["fired"] == [], stats["fired"]  # a learned popup never fires on a clean frame of any page
    assert len(stats["accepted"]) == 1 and stats["accepted_at"] <= ACCEPT_BY, stats
    assert stats["per100"].get("after", 0.0) <= 2.0, stats["per100"]
