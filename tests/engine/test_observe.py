"""The observer on simulator frames (any graph), hand-made graphs for the rules, and edge frames."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from engine.config.assets import Template
from engine.config.loader import load_graph
from engine.config.schema import Graph
from engine.observe.observer import Observer
from engine.sim import SimGame, SyntheticAssets


@pytest.fixture(scope="module")
def azurlane():
    return load_graph(server="en")


@pytest.fixture(scope="module")
def sim_observer(azurlane):
    return Observer(azurlane, SyntheticAssets(azurlane))


@pytest.fixture(scope="module")
def game(azurlane):
    return SimGame(azurlane, assets=SyntheticAssets(azurlane))


PAGES = ["page_main", "page_commission", "page_dock", "page_shop", "page_campaign_menu", "page_guild"]


@pytest.mark.parametrize("page", PAGES)
def test_names_the_simulated_page_with_and_without_expectation(game, sim_observer, page):
    game.goto(page)
    frame = game.frame()
    expected = sim_observer.observe(frame, expected=page)
    assert expected.page == page and expected.confidence > 0.8
    assert any(e.hit and e.channel == "template" for e in expected.evidence)
    blind = sim_observer.observe(frame)
    assert blind.page == page
    wrong_guess = sim_observer.observe(frame, expected="page_mission" if page != "page_mission" else "page_main")
    assert wrong_guess.page == page
    assert any(not e.hit for e in wrong_guess.evidence)  # the expected page's misses are reported


def test_verifying_a_page_converts_only_its_areas_and_a_scan_converts_the_frame_once(game, sim_observer,
                                                                                     monkeypatch):
    from verifiers.common import Pyramid

    converted = []
    convert_whole = Pyramid.convert_whole
    monkeypatch.setattr(Pyramid, "convert_whole", lambda self: converted.append(self) or convert_whole(self))
    game.goto("page_commission")
    frame = game.frame()
    assert sim_observer.verify_page(frame, "page_commission")[0]
    assert not sim_observer.verify_page(frame, "page_dock")[0]
    assert converted == []
    assert sim_observer.observe(frame).page == "page_commission"
    assert len({id(p) for p in converted}) == 1


def test_names_a_popup_over_a_page(game, sim_observer):
    game.goto("page_main")
    popup = next(t.name for t in sim_observer.popups if t.strong and (t.pages is None or "page_main" in t.pages))
    game.show_popup(popup)
    try:
        observation = sim_observer.observe(game.frame(), expected="page_main")
    finally:
        game.restart()
    assert popup in observation.popups


def test_black_and_flat_frames(sim_observer):
    for value in (0, 128):
        observation = sim_observer.observe(np.full((720, 1280, 3), value, np.uint8))
        assert observation.black_frame and observation.page is None


def test_frames_of_another_size_are_scaled(game, sim_observer):
    game.goto("page_dock")
    big = cv2.resize(game.frame(), (1920, 1080), interpolation=cv2.INTER_CUBIC)
    assert sim_observer.observe(big).page == "page_dock"


def test_unknown_page_is_never_observed(sim_observer, azurlane):
    assert azurlane.unknown_page not in sim_observer.page_by_name
    noise = np.random.default_rng(0).integers(0, 256, (720, 1280, 3), dtype=np.uint8)
    observation = sim_observer.observe(noise)
    assert observation.page is None and not observation.popups and observation.confidence == 0.0


class Pack:
    server = "en"

    def __init__(self, templates):
        self.templates = templates

    def get(self, name):
        return self.templates.get(name)

    def names(self):
        return list(self.templates)


def _tiny(pages, buttons, popups=()):
    return Graph.model_validate({"game": "t", "resolution": (1280, 720), "servers": ["en"],
                                 "fallback_server": "en", "buttons": buttons, "pages": pages,
                                 "popups": list(popups)}).for_server("en")


def _texture(seed, h=40, w=80):
    return cv2.resize(np.random.default_rng(seed).integers(0, 256, (h // 4, w // 4, 3), dtype=np.uint8), (w, h),
                      interpolation=cv2.INTER_NEAREST)


def test_colour_alone_never_names_a_page_that_has_a_template():
    crop = _texture(1)
    mean = tuple(int(c) for c in crop.reshape(-1, 3).mean(axis=0)[::-1])
    graph = _tiny([{"name": "page_a", "signatures": [{"type": "color", "button": "A"}]}],
                  [{"name": "A", "area": (100, 100, 180, 140), "color": mean, "asset": "ui/A"}])
    observer = Observer(graph, Pack({"ui/A": Template("ui/A", (crop,), area=(100, 100, 180, 140))}))
    same_colour = np.zeros((720, 1280, 3), np.uint8)
    same_colour[:] = 40
    same_colour[100:140, 100:180] = crop.reshape(-1, 3).mean(axis=0).astype(np.uint8)
    assert observer.observe(same_colour).page is None
    same_colour[100:140, 100:180] = crop
    assert observer.observe(same_colour).page == "page_a"


def test_two_pages_hitting_equally_is_ambiguous():
    crop = _texture(2)
    sig = [{"type": "template", "button": "A"}]
    graph = _tiny([{"name": "page_a", "signatures": sig}, {"name": "page_b", "signatures": sig}],
                  [{"name": "A", "area": (100, 100, 180, 140), "asset": "ui/A"}])
    observer = Observer(graph, Pack({"ui/A": Template("ui/A", (crop,))}))
    frame = np.full((720, 1280, 3), 40, np.uint8)
    frame[100:140, 100:180] = crop
    observation = observer.observe(frame)
    assert observation.page is None and set(observation.ambiguous) == {"page_a", "page_b"}
    assert observation.confidence <= 0.3


def test_a_page_whose_template_is_missing_is_never_named():
    graph = _tiny([{"name": "page_a", "signatures": [{"type": "template", "button": "A"}]}],
                  [{"name": "A", "area": (100, 100, 180, 140), "asset": "ui/A"}])
    observer = Observer(graph, Pack({}))
    assert "page_a" in observer.unavailable and not observer.pages


def test_popups_are_ordered_by_priority_then_definition(azurlane, sim_observer):
    priorities = [t.priority for t in sim_observer.popups]
    assert priorities == sorted(priorities, reverse=True)
    defined = [p.name for p in azurlane.popups]
    for a, b in zip(sim_observer.popups, sim_observer.popups[1:]):
        if a.priority == b.priority:
            assert defined.index(a.name) < defined.index(b.name)


@pytest.mark.parametrize("trusted", [True, False])
def test_escalation_asks_vision_only_for_unexplained_frames(azurlane, trusted, fake_gemini):
    from verifiers.vision import VisionClient

    fake_gemini.answer = {"page": "page_dock" if trusted else "page_nowhere", "popup": None,
                          "blocking_element": None, "ocr_text": None, "suggested_action": "retry", "confidence": 0.9}
    client = VisionClient("k", model="m", base_url=fake_gemini.url, timeout_s=5)
    observer = Observer(azurlane, SyntheticAssets(azurlane), vision=client)
    noise = np.random.default_rng(5).integers(0, 256, (720, 1280, 3), dtype=np.uint8)
    assert observer.observe(noise).page is None  # no escalation asked: no vision
    escalated = observer.observe(noise, escalate=True)
    vision = [e for e in escalated.evidence if e.channel == "vision"]
    assert len(vision) == 1 and "vision" in escalated.latency_ms
    if trusted:
        assert escalated.page == "page_dock" and vision[0].hit
    else:
        assert escalated.page is None and not vision[0].hit
