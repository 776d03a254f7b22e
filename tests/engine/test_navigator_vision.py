"""An unknown screen that back does not fix is resolved through the vision verifier: the REAL google-genai
client against a local canned Gemini endpoint (tests/gemini_fake.py FakeGemini). Only a safe answer (a known popup
or page) is acted on."""

from __future__ import annotations

import json

import pytest

from engine.config.loader import load_graph
from engine.config.policies import load_policies
from engine.device import open_device
from engine.navigation.navigator import Navigator
from engine.observe.observer import Observer
from engine.runtime.tools import Tools
from engine.sim import SyntheticAssets, start_embedded
from verifiers.vision import VisionClient

KEY = "nav-test-key-SECRET-42"


class WithoutAsset:
    """The synthetic pack minus one template: the observer cannot recognise that popup by itself."""

    def __init__(self, pack, missing: str) -> None:
        self.pack, self.missing, self.server = pack, missing, pack.server

    def get(self, name):
        return None if name == self.missing else self.pack.get(name)

    def names(self):
        return [n for n in self.pack.names() if n != self.missing]


@pytest.fixture
def rig(fake_gemini):
    graph = load_graph(server="en")
    assets = SyntheticAssets(graph)
    policies = load_policies()
    vision = VisionClient(KEY, model="gemini-test", base_url=fake_gemini.url, timeout_s=5)
    with start_embedded(graph, assets=assets) as sim:
        device = open_device(sim.serial, graph=graph, policies=policies, adb_host=sim.host, adb_port=sim.port)
        observer = Observer(graph, WithoutAsset(assets, graph.button("GET_ITEMS_1").asset), vision=vision)
        # (the model's rung alone: no dismissal search before it, no app to restart after it)
        navigator = Navigator(device, graph.model_copy(update={"app": None}), observer, search=0)
        tools = Tools(device, graph, observer, policies, navigator=navigator)
        yield tools, sim.game, fake_gemini
        device.close()
    vision.close()


def _answer(**over):
    answer = {"page": None, "popup": None, "blocking_element": None, "ocr_text": "",
              "suggested_action": "dismiss_popup_then_retry", "confidence": 0.9}
    return {**answer, **over}


def test_vision_names_a_known_popup_and_the_navigator_dismisses_it(rig):
    nav, game, gemini = rig
    assert nav.alas_goto("page_main").ok
    game.show_popup("GET_ITEMS_1")
    gemini.answer = _answer(popup="GET_ITEMS_1", blocking_element="GET_ITEMS_1")
    result = nav.alas_goto("page_reward")
    assert result.ok, result.text
    assert result.data["vision_calls"] == 1 and len(gemini.calls) == 1
    rungs = [e["rung"] for e in nav.last_run.steps if e["kind"] == "recover"]
    assert rungs[-1] == "vision" and rungs[0] == "back"
    truth = game.truth()
    assert truth["page"] == "page_reward" and not truth["popups"]


def test_an_off_list_vision_answer_is_not_acted_on(rig):
    nav, game, gemini = rig
    assert nav.alas_goto("page_main").ok
    game.show_popup("GET_ITEMS_1")
    gemini.answer = _answer(popup="SOMETHING_ELSE")
    taps_before = game.truth()["taps"]
    result = nav.alas_goto("page_reward")
    assert not result.ok and result.status == "unknown_screen"
    assert result.data["screenshot_analysis"]["suggested_action"] == "use_vision"
    assert game.truth()["popups"] == ["GET_ITEMS_1"]  # still there: nothing unsafe was tapped for it
    assert game.truth()["taps"] - taps_before <= 1  # at most the home rung's tap, swallowed by the popup
    assert KEY not in json.dumps(result.to_dict(), default=str)
