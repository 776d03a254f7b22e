"""The graph learns, measured: model calls per 100 gotos before and after the popups it resolved were accepted.

The simulator draws the full Azur Lane graph; the engine's graph lacks HIDDEN popups (a second, hidden list).
Before some gotos one of them is shown; the fake vision endpoint (the REAL google-genai client against
tests/conftest.py's FakeGemini) names the tap that closes it, as a model that reads the screen would. Each new
proposal is accepted once (`python -m engine proposals accept` into a copy of the graph and a pack) and the engine
is reopened on the accepted graph. Every goto must end verified on the page the simulator is really on, or fail
saying so (zero false successes); once every hidden popup has been accepted, no goto may call the model.

LEARN_GOTOS sets the number of gotos (default 6, the CI form; 200 is the issue's). Gotos go back and forth
through page_main; the popup shows there on the second and fourth (one to learn from, one to handle without the
model), later with a chance of 0.6. One hidden popup so far, on one page: GET_ITEMS_1 over page_main covers the
page's signatures, so the engine sees an unknown screen and asks the model. A popup that leaves its page
recognisable (GET_ITEMS_1 over page_reward or page_mail, GET_SHIP, GAME_TIPS) is tapped through instead, and the
goto ends `stuck` without reaching the model: learning starts only from an unknown screen, so far.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
import yaml

from engine.__main__ import main
from engine.assetpacks import DirectoryAssetPack
from engine.device import open_device
from engine.learning import Learner
from engine.loader import load_graph
from engine.navigator import Navigator
from engine.observe import Observer
from engine.policies import load_policies
from engine.sim import SyntheticAssets, start_embedded
from engine.studio.signatures import LayeredPack
from engine.tools import Tools
from verifiers.vision import VisionClient

GOTOS = int(os.environ.get("LEARN_GOTOS", "6"))
HIDDEN = ("GET_ITEMS_1",)
TARGETS = ("page_main", "page_reward", "page_mail", "page_commission", "page_mission", "page_dormmenu")
COVERED = ("page_main",)
"""The page whose signatures GET_ITEMS_1 covers, so that the screen is unknown and reaches the model. On others
it leaves the page recognisable, the engine's taps are swallowed and the goto ends `stuck` (not learned yet)."""
ROOT = Path(__file__).resolve().parents[1]


def _hide(graph):
    return graph.model_copy(update={"popups": [p for p in graph.popups if p.name not in HIDDEN]})


def _tap(graph, name: str) -> list[int]:
    action = graph.popup(name).dismiss[0]
    if action.button is None:
        return list(action.point)
    x1, y1, x2, y2 = graph.button(action.button).click_area
    return [(x1 + x2) // 2, (y1 + y2) // 2]


@pytest.fixture
def fake_gemini():
    from tests.conftest import FakeGemini

    server = FakeGemini()
    yield server
    server.close()


@pytest.mark.soak
def test_model_calls_fall_to_zero_once_each_hidden_popup_is_accepted(fake_gemini, tmp_path, benchmark, capsys):
    full = load_graph(server="en")
    assets, policies = SyntheticAssets(full), load_policies()
    vision = VisionClient("learn-soak-key", model="gemini-test", base_url=fake_gemini.url, timeout_s=5)
    folder, graph_dir, pack_dir = tmp_path / "proposals", tmp_path / "my_graph", tmp_path / "my_pack"
    shutil.copytree(ROOT / "pages" / "azurlane", graph_dir)
    rng = random.Random(7)
    stats = {"calls_before": 0, "gotos_before": 0, "calls_after": 0, "gotos_after": 0, "false": [], "failed": 0,
             "accepted": [], "shown_before": 0, "shown_after": 0}

    with start_embedded(full, assets=assets) as sim:
        devices = []

        def engine(graph, pack) -> Tools:
            device = open_device(sim.serial, graph=graph, policies=policies, adb_host=sim.host, adb_port=sim.port)
            devices.append(device)
            observer = Observer(graph, pack, vision=vision)
            nav = Navigator(device, graph, observer)
            nav.learner = Learner(folder)
            return Tools(device, graph, observer, policies, navigator=nav)

        def soak() -> None:
            tools, shown = engine(_hide(full), assets), set()
            for i in range(GOTOS):
                here = sim.game.truth()["page"]  # back and forth through the hub, where the popup shows
                target = "page_main" if here not in COVERED else rng.choice([t for t in TARGETS if t not in COVERED])
                if here in COVERED and (i in (1, 3) or (i > 3 and rng.random() < 0.6)):
                    popup = rng.choice(HIDDEN)
                    shown.add(popup)
                    sim.game.show_popup(popup)
                    fake_gemini.answer = {"page": None, "popup": None, "blocking_element": popup.replace("_", " "),
                                          "ocr_text": "", "suggested_action": "dismiss_popup_then_retry",
                                          "confidence": 0.9, "tap": _tap(full, popup)}
                phase = "after" if len(stats["accepted"]) == len(HIDDEN) else "before"
                stats[f"shown_{phase}"] += bool(sim.game.truth()["popups"])
                result = tools.alas_goto(target)
                stats[f"calls_{phase}"] += result.data.get("vision_calls", 0)
                stats[f"gotos_{phase}"] += 1
                truth = sim.game.truth()
                if result.ok and (truth["page"] != target or truth["popups"]):
                    stats["false"].append((target, truth["page"], truth["popups"]))
                stats["failed"] += not result.ok
                new = [p for p in sorted(folder.glob("*.yaml"))] if folder.is_dir() else []
                for path in new:  # each proposal accepted once, then the engine reopened on the grown graph
                    name = yaml.safe_load(path.read_text())["name"]
                    assert main(["proposals", "accept", name, "--dir", str(folder), "--graph", str(graph_dir),
                                 "--assets", str(pack_dir)]) == 0
                    stats["accepted"].append(name)
                if new:
                    grown = _hide(load_graph(graph_dir, policies=policies.names).resolve("en"))
                    tools = engine(grown, LayeredPack([DirectoryAssetPack(pack_dir, "en"), assets], "en"))

        benchmark.pedantic(soak, rounds=1, iterations=1)
        for device in devices:
            device.close()
    vision.close()

    per100 = {k: round(100 * stats[f"calls_{k}"] / max(1, stats[f"gotos_{k}"]), 1) for k in ("before", "after")}
    with capsys.disabled():
        print(f"\nlearning soak: {GOTOS} gotos, hidden popups {list(HIDDEN)}, accepted {stats['accepted']}; "
              f"model calls per 100 gotos: before {per100['before']} ({stats['gotos_before']} gotos, popup shown "
              f"{stats['shown_before']}x), after {per100['after']} ({stats['gotos_after']} gotos, popup shown "
              f"{stats['shown_after']}x); failed {stats['failed']}; "
              f"false successes {len(stats['false'])}")
    benchmark.extra_info.update({**stats, "per100": per100})
    assert stats["false"] == []
    assert stats["calls_before"] > 0 and stats["accepted"]  # the model was needed, and what it taught was kept
    assert len(stats["accepted"]) == len(HIDDEN) and stats["shown_after"] > 0, stats
    assert stats["calls_after"] == 0, stats
