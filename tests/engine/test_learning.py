"""The graph learns (engine.learning.learner, `python -m engine proposals`): a popup the graph does not declare is resolved
once by the vision model (the REAL google-genai client against tests/gemini_fake.py's FakeGemini), the tap that
worked becomes a proposal, and once accepted into a copy of the graph the engine dismisses that popup by itself.

The simulator draws from the full graph; the engine's graph is the same minus GET_ITEMS_1, so that popup is a
screen it has never been told about.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from engine.__main__ import main
from engine.config.assetpacks import DirectoryAssetPack
from engine.config.loader import load_graph
from engine.config.policies import load_policies
from engine.device import open_device
from engine.faces.studio.signatures import LayeredPack
from engine.learning.crops import choose_crop, title_band
from engine.learning.evidence import MAX_REFERENCES
from engine.learning.learner import Learner
from engine.navigation.navigator import Navigator
from engine.observe.observer import Observer
from engine.runtime.tools import Tools
from engine.sim import SyntheticAssets, start_embedded
from tests.conftest import dismiss_point
from tests.engine.sim.conftest import FakeClock
from tests.engine.test_learning_trust import _user_pack
from verifiers.vision import VisionClient

HIDDEN = "GET_ITEMS_1"
ROOT = Path(__file__).resolve().parents[2]


def without(graph, popup: str):
    return graph.model_copy(update={"popups": [p for p in graph.popups if p.name != popup]})


@pytest.fixture
def world(fake_gemini, tmp_path):
    full = load_graph(server="en")
    assets = SyntheticAssets(full)
    policies = load_policies()
    vision = VisionClient("learn-test-key", model="gemini-test", base_url=fake_gemini.url, timeout_s=5)
    clock = FakeClock()  # waits move the clock: settles cost no wall time
    with start_embedded(full, assets=assets, clock=clock) as sim:
        devices = []

        def engine(graph, pack, learner=None) -> Tools:
            device = open_device(sim.serial, graph=graph, policies=policies, adb_host=sim.host, adb_port=sim.port)
            devices.append(device)
            observer = Observer(graph, pack, vision=vision)
            # (the model's lessons alone: no dismissal search, and no app to restart when the ladder is spent)
            nav = Navigator(device, graph.model_copy(update={"app": None}), observer, clock=clock, learner=learner,
                            search=0)
            return Tools(device, graph, observer, policies, navigator=nav, clock=clock, sleep=clock.sleep)

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
    tap = dismiss_point(full, HIDDEN)
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
    assert proposal["collision"] < 0.9 and proposal["known_pages"]  # the crop tells them apart from clean frames
    assert (folder / "known" / "page_main.png").is_file()  # page_main was left by a tap after the popup: clean

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
    gemini.answer = _answer(dismiss_point(full, HIDDEN))
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


def test_a_popup_that_leaves_its_page_recognised_is_learned_when_the_page_swallows_the_taps(world, tmp_path):
    full, assets, game, gemini, engine = world
    folder = tmp_path / "proposals"
    tools = engine(without(full, "GET_SHIP"), assets, Learner(folder))
    gemini.answer = _answer(dismiss_point(full, "GET_SHIP"))
    assert tools.alas_goto("page_main").ok
    game.show_popup("GET_SHIP")  # page_main stays recognised under it; its taps go nowhere
    result = tools.alas_goto("page_reward")
    assert result.ok and game.truth()["page"] == "page_reward" and result.data["vision_calls"] == 1, result.text
    assert [s["kind"] for s in result.data["learning"]] == ["proposal"]
    proposal = yaml.safe_load(next(folder.glob("*.yaml")).read_text())
    assert proposal["shown_on"] == "page_main"
    # The frames kept as page_main's while the popup covered it are not "known page" frames: the crop is apart.
    assert proposal["collision"] < 0.9, proposal


def test_an_agents_tap_on_an_unknown_screen_that_works_becomes_a_proposal(world, tmp_path):
    full, assets, game, gemini, engine = world
    folder = tmp_path / "proposals"
    tools = engine(without(full, HIDDEN), assets, Learner(folder))
    gemini.answer = {"page": None, "popup": None, "blocking_element": "", "ocr_text": "",
                     "suggested_action": "ask_llm", "confidence": 0.2}  # the vision model cannot help
    assert tools.alas_goto("page_main").ok
    game.show_popup(HIDDEN)
    assert tools.alas_goto("page_reward").status == "unknown_screen"
    x, y = dismiss_point(full, HIDDEN)
    missed = tools.adb_tap(5, 5)  # the agent's first guess closes nothing: no lesson
    assert missed.ok and not list(folder.glob("*.yaml"))
    result = tools.adb_tap(x, y)  # (as the agent runtime calls it) the second does
    assert result.ok and result.data["observation"]["page"] == "page_main"
    proposal = yaml.safe_load(next(folder.glob("*.yaml")).read_text())
    assert proposal["label"] == "agent tap" and proposal["tap"] == [x, y] and proposal["shown_on"] == "page_main"


def test_accept_judges_on_clean_evidence_and_bundle_frames_of_the_screen_itself_speak_for_it(world, tmp_path, capsys):
    full, assets, game, gemini, engine = world
    run = tmp_path / "run"
    folder = run / "proposals"
    tools = engine(without(full, HIDDEN), assets, Learner(folder))
    assert tools.alas_goto("page_reward").ok
    frame = tools.navigator.last_frame
    shifted = np.zeros_like(frame)
    shifted[:, 14:] = frame[:, :-14]  # page_reward drawn 14 px to the right: the crop fires, but not where it was cut
    bundle = run / "error_bundles" / "000007"
    bundle.mkdir(parents=True)
    cv2.imwrite(str(bundle / "00_frame_0.png"), shifted)  # a failed run's frame, of a known page
    folder.mkdir()
    for name in ("LEARNED_X", "LEARNED_Y"):  # a crop of page_reward's own corner, proposed as a popup
        cv2.imwrite(str(folder / f"{name}.frame.png"), frame)
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(
            {"name": name, "label": "x", "tap": [60, 30], "area": [0, 0, 120, 60], "shown_on": "page_reward"}))
    graph_dir, other_dir = tmp_path / "my_graph", tmp_path / "other_graph"
    for target in (graph_dir, other_dir):
        shutil.copytree(ROOT / "pages" / "azurlane", target)
    pages = _user_pack(tmp_path / "run_pack", assets)  # the pack the runs recognised pages with
    for extra in ([], ["--pages-assets", str(pages)]):
        code = main(["proposals", "accept", "LEARNED_X", "--dir", str(folder), "--graph", str(graph_dir), *extra])
        err = capsys.readouterr().err
        assert code == 2 and "00_frame_0.png" in err and "known" not in err.split("pages:")[-1], err
        assert not list(graph_dir.glob("learned_*.yaml"))
        index = graph_dir / "learned_assets" / "index.json"
        assert not index.exists() or "LEARNED_X" not in index.read_text()  # the pack index is as it was
    (tmp_path / "empty_pack").mkdir()  # a pack that recognises no page: the bundle frame is no known page's
    assert main(["proposals", "accept", "LEARNED_X", "--dir", str(folder), "--graph", str(graph_dir),
                 "--pages-assets", str(tmp_path / "empty_pack")]) == 0
    assert (graph_dir / "learned_learned_x.yaml").is_file()
    capsys.readouterr()

    # The bundle frame shows the proposal's own evidence where it was cut (the screen itself): it speaks for it.
    cv2.imwrite(str(bundle / "00_frame_0.png"), frame)
    (folder / "clean").mkdir()
    cv2.imwrite(str(folder / "clean" / "labelled_reward.png"), frame)  # ... but the user labelled such a frame clean
    code = main(["proposals", "accept", "LEARNED_Y", "--dir", str(folder), "--graph", str(other_dir)])
    err = capsys.readouterr().err
    assert code == 2 and "labelled_reward.png" in err and "00_frame_0.png" not in err, err
    (folder / "clean" / "labelled_reward.png").unlink()
    assert main(["proposals", "accept", "LEARNED_Y", "--dir", str(folder), "--graph", str(other_dir)]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["bundle_sightings"] == 1 and done["checked"].get("references", 0) > 0, done
    assert done["checked"]["references"] <= MAX_REFERENCES < len(load_graph(other_dir).pages)  # a bounded sample


def test_a_title_band_wins_when_the_tapped_button_looks_like_the_page_beneath():
    rng = np.random.default_rng(5)
    page = rng.integers(0, 255, (720, 1280, 3), dtype=np.uint8)
    screen = page.copy()
    screen[200:520, 340:940] = (40, 40, 40)  # a panel over the page ...
    screen[200:250, 340:940] = rng.integers(0, 255, (50, 600, 3), dtype=np.uint8)  # ... with its own title
    screen[440:500, 560:720] = page[440:500, 560:720]  # and a close button drawn like the page under it
    band = title_band(screen, page)
    assert band is not None and band[1] == 200 and band[3] - band[1] <= 56 and 340 <= band[0] < band[2] <= 940
    area, collision = choose_crop(screen, (640, 470), [page], [band])
    assert area == band and collision < 0.5  # the crops around the button match the page; the title does not


def test_a_hostile_or_broken_proposal_file_is_a_one_line_refusal(tmp_path, capsys):
    folder = tmp_path / "p"
    folder.mkdir()
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9))
    (folder / "LEARNED_LAUGHS.yaml").write_text(laughs)
    (folder / "LEARNED_ODD.yaml").write_text("name: LEARNED_ODD\narea: [1, 2]\ntap: [3, 4]\n")
    assert main(["proposals", "list", "--dir", str(folder)]) == 0  # the rest of the folder still lists
    out, err = capsys.readouterr()
    assert '"proposals": []' in out and "LEARNED_LAUGHS.yaml" in err and "not a proposal" in err, err
    assert main(["proposals", "show", "LEARNED_LAUGHS", "--dir", str(folder)]) == 2
    assert main(["proposals", "accept", "LEARNED_ODD", "--dir", str(folder), "--graph", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "LEARNED_ODD.yaml" in err


def test_the_frames_kept_for_measuring_crops_are_bounded(tmp_path):
    from types import SimpleNamespace

    from engine.learning.learner import KEPT_FRAMES

    learner, frame = Learner(tmp_path / "p"), np.zeros((72, 128, 3), np.uint8)
    for i in range(3 * KEPT_FRAMES):  # a long session through many pages (each left by a tap) and popups
        learner.looked(None, SimpleNamespace(page=f"page_{i}", popups=()), frame)
        learner.looked(None, SimpleNamespace(page=f"page_{i}_next", popups=()), frame)
        learner.looked(None, SimpleNamespace(page=None, popups=(f"POPUP_{i}",)), frame)
    for page in (f"page_{2 * KEPT_FRAMES}", "page_last"):  # seen again, and left: kept as the newest
        learner.looked(None, SimpleNamespace(page=page, popups=()), frame)
    assert len(learner.known) == KEPT_FRAMES and len(learner.popup_frames) == KEPT_FRAMES
    assert list(learner.known)[-1] == f"page_{2 * KEPT_FRAMES}" and f"page_{3 * KEPT_FRAMES - 1}" in learner.known
    assert "page_last" not in learner.known  # not left yet: not known to be clean


def test_a_frame_is_clean_only_once_a_tap_on_it_went_through(tmp_path):
    from types import SimpleNamespace

    learner, frame = Learner(tmp_path / "p"), np.zeros((72, 128, 3), np.uint8)
    for page in ("page_a", "page_a", None, "page_b", "page_b", "page_c"):
        learner.looked(None, SimpleNamespace(page=page, popups=()), frame)
    # page_a was followed by an unknown screen (it may have been under a dialog): only page_b was left by a tap
    assert list(learner.known) == ["page_b"]


def test_the_proposals_waiting_are_bounded_and_the_ones_seen_again_stay(tmp_path):
    """A screen that differs at every showing (here random blocks, closed by the back key, as a game's odd screens
    are) is proposed anew each time and never counted up: the folder keeps MAX_WAITING proposals, the least seen go,
    and one seen twice stays however old."""
    from engine.learning.learner import Lesson
    from engine.learning.proposals import MAX_WAITING

    rng = np.random.default_rng(5)

    def screen() -> np.ndarray:
        frame = np.full((180, 320, 3), 90, np.uint8)
        for _ in range(6):
            x, y = int(rng.integers(0, 280)), int(rng.integers(0, 150))
            frame[y:y + int(rng.integers(12, 40)), x:x + int(rng.integers(12, 40))] = rng.integers(0, 255, 3)
        return frame

    learner, clean = Learner(tmp_path / "p"), np.full((180, 320, 3), 90, np.uint8)
    again = screen()
    first, _ = learner.record(Lesson(again, (160, 90), "odd screen", key="back"), "page_a", clean)
    learner.record(Lesson(again.copy(), (160, 90), "odd screen", key="back"), "page_a", clean)
    for _ in range(MAX_WAITING + 8):
        learner.record(Lesson(screen(), (160, 90), "odd screen", key="back"), "page_a", clean)
    waiting = sorted((tmp_path / "p").glob("*.yaml"))
    assert len(waiting) == MAX_WAITING
    assert first in waiting and yaml.safe_load(first.read_text())["sightings"] == 2
    assert len(list((tmp_path / "p").glob("*.frame.png"))) == MAX_WAITING  # their frames went with them
