"""The graph learns (engine.learning, `python -m engine proposals`): a popup the graph does not declare is resolved
once by the vision model (the REAL google-genai client against tests/conftest.py's FakeGemini), the tap that
worked becomes a proposal, and once accepted into a copy of the graph the engine dismisses that popup by itself.

The simulator draws from the full graph; the engine's graph is the same minus GET_ITEMS_1, so that popup is a
screen it has never been told about.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from engine.__main__ import main
from engine.assetpacks import DirectoryAssetPack
from engine.device import open_device
from engine.learning import Learner, choose_crop
from engine.loader import load_graph
from engine.navigator import Navigator
from engine.observe import Observer
from engine.policies import load_policies
from engine.sim import SyntheticAssets, start_embedded
from engine.studio.signatures import LayeredPack
from engine.tools import Tools
from verifiers.vision import VisionClient

HIDDEN = "GET_ITEMS_1"
ROOT = Path(__file__).resolve().parents[2]


def without(graph, popup: str):
    return graph.model_copy(update={"popups": [p for p in graph.popups if p.name != popup]})


def centre(area) -> list[int]:
    return [(area[0] + area[2]) // 2, (area[1] + area[3]) // 2]


@pytest.fixture
def world(fake_gemini, tmp_path):
    full = load_graph(server="en")
    assets = SyntheticAssets(full)
    policies = load_policies()
    vision = VisionClient("learn-test-key", model="gemini-test", base_url=fake_gemini.url, timeout_s=5)
    with start_embedded(full, assets=assets) as sim:
        devices = []

        def engine(graph, pack, learner=None) -> Tools:
            device = open_device(sim.serial, graph=graph, policies=policies, adb_host=sim.host, adb_port=sim.port)
            devices.append(device)
            observer = Observer(graph, pack, vision=vision)
            nav = Navigator(device, graph, observer)
            nav.learner = learner
            return Tools(device, graph, observer, policies, navigator=nav)

        yield full, assets, sim.game, fake_gemini, engine
        for device in devices:
            device.close()
    vision.close()


def _answer(tap):
    return {"page": None, "popup": None, "blocking_element": "Items obtained panel", "ocr_text": "",
            "suggested_action": "dismiss_popup_then_retry", "confidence": 0.9, "tap": tap}


def test_a_resolved_popup_is_proposed_accepted_and_then_handled_without_the_model(world, tmp_path):
    full, assets, game, gemini, engine = world
    folder = tmp_path / "proposals"
    tools = engine(without(full, HIDDEN), assets, Learner(folder))
    dismiss = full.popup(HIDDEN).dismiss[0]
    tap = centre(full.button(dismiss.button).click_area) if dismiss.button else list(dismiss.point)
    gemini.answer = _answer(tap)

    for seen in (1, 2):  # the same screen twice: one proposal, two sightings
        assert tools.alas_goto("page_main").ok
        game.show_popup(HIDDEN)
        result = tools.alas_goto("page_reward")
        assert result.ok and result.data["vision_calls"] == 1, result.text
        proposals = sorted(folder.glob("*.yaml"))
        assert len(proposals) == 1
        proposal = yaml.safe_load(proposals[0].read_text())
        assert proposal["sightings"] == seen and proposal["tap"] == tap and proposal["shown_on"] == "page_main"
    assert proposal["collision"] < 0.9 and "page_main" in proposal["known_pages"]  # the crop tells them apart
    assert (folder / "known" / "page_main.png").is_file()

    graph_dir, pack_dir = tmp_path / "my_graph", tmp_path / "my_pack"
    shutil.copytree(ROOT / "pages" / "azurlane", graph_dir)
    assert main(["proposals", "accept", proposal["name"], "--dir", str(folder), "--graph", str(graph_dir),
                 "--assets", str(pack_dir)]) == 0
    learned = graph_dir / f"learned_{proposal['name'].lower()}.yaml"
    assert learned.read_text().startswith("# yaml-language-server: $schema=")
    assert (pack_dir / "learned" / f"{proposal['name']}.png").is_file()
    assert not (folder / f"{proposal['name']}.yaml").exists() and (folder / "accepted").is_dir()

    # A new engine on the accepted graph (still without GET_ITEMS_1) and pack: no model call any more.
    accepted = without(load_graph(graph_dir, policies=load_policies().names).resolve("en"), HIDDEN)
    learned_tools = engine(accepted, LayeredPack([DirectoryAssetPack(pack_dir, "en"), assets], "en"))
    calls = len(gemini.calls)
    assert learned_tools.alas_goto("page_main").ok
    game.show_popup(HIDDEN)
    result = learned_tools.alas_goto("page_reward")
    assert result.ok and result.data["vision_calls"] == 0 and len(gemini.calls) == calls, result.text
    dismissed = [e["popup"] for e in learned_tools.last_run.steps if e["kind"] == "dismiss"]
    assert dismissed == [proposal["name"]] and game.truth()["page"] == "page_reward"


def test_a_tap_that_does_not_work_is_not_proposed(world, tmp_path):
    full, assets, game, gemini, engine = world
    folder = tmp_path / "proposals"
    tools = engine(without(full, HIDDEN), assets, Learner(folder))
    gemini.answer = _answer([5, 5])  # a corner that closes nothing
    assert tools.alas_goto("page_main").ok
    game.show_popup(HIDDEN)
    result = tools.alas_goto("page_reward")
    assert not result.ok and result.status == "unknown_screen"
    assert not list(folder.glob("*.yaml"))


def test_accepting_a_signature_that_fires_on_a_known_page_is_refused(world, tmp_path, capsys):
    full, assets, game, gemini, engine = world
    folder = tmp_path / "proposals"
    tools = engine(without(full, HIDDEN), assets, Learner(folder))
    dismiss = full.popup(HIDDEN).dismiss[0]
    gemini.answer = _answer(centre(full.button(dismiss.button).click_area) if dismiss.button
                            else list(dismiss.point))
    assert tools.alas_goto("page_reward").ok and tools.alas_goto("page_main").ok
    game.show_popup(HIDDEN)
    assert tools.alas_goto("page_reward").ok
    path = next(folder.glob("*.yaml"))
    proposal = yaml.safe_load(path.read_text())
    # A proposal whose crop is cut from what a known page shows too (the frame of page_reward, its top corner).
    known = cv2.imread(str(folder / "known" / "page_reward.png"))
    cv2.imwrite(str(path.with_suffix(".frame.png")), known)
    proposal["area"] = [0, 0, 120, 60]
    path.write_text(yaml.safe_dump(proposal))
    graph_dir, pack_dir = tmp_path / "my_graph", tmp_path / "my_pack"
    shutil.copytree(ROOT / "pages" / "azurlane", graph_dir)
    code = main(["proposals", "accept", proposal["name"], "--dir", str(folder), "--graph", str(graph_dir),
                 "--assets", str(pack_dir)])
    err = capsys.readouterr().err
    assert code == 2 and "fires on frames of known pages" in err and "page_reward.png" in err, err
    assert not list(graph_dir.glob("learned_*.yaml")) and path.exists()  # nothing written, nothing moved
    assert not (pack_dir / "learned" / f"{proposal['name']}.png").exists()


def test_the_crop_is_the_candidate_known_frames_match_least():
    rng = np.random.default_rng(3)
    page = rng.integers(0, 255, (720, 1280, 3), dtype=np.uint8)
    screen = page.copy()
    cv2.rectangle(screen, (600, 340), (680, 380), (20, 200, 240), -1)  # a small new button over the page
    area, collision = choose_crop(screen, (640, 360), [page])
    assert collision < 0.5 and area[0] <= 600 and area[2] >= 640


def test_proposals_commands_refuse_what_they_cannot_do(tmp_path, capsys):
    assert main(["proposals", "list", "--dir", str(tmp_path / "nope")]) == 2
    (tmp_path / "p").mkdir()
    assert main(["proposals", "show", "LEARNED_X", "--dir", str(tmp_path / "p")]) == 2
    assert main(["proposals", "accept", "../x", "--dir", str(tmp_path / "p"), "--graph", str(tmp_path),
                 "--assets", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert "no such proposals folder" in err and "no proposal 'LEARNED_X'" in err and "Traceback" not in err
