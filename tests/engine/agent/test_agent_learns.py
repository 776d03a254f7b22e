"""The agent loop teaches the graph too: on a screen nothing recognises, the tap a model (scripted, through the
REAL google-genai client against tests/gemini_fake.py's FakeGemini) chooses with adb_tap, once the
next look shows a known page, becomes a proposal (engine.learning.learner), as the vision model's taps do.

The simulator draws the full Azur Lane graph; the engine's graph lacks GET_ITEMS_1, which over page_main hides the
page's signatures. No vision model is configured, so the navigator's own ladder gives up and the agent decides.
"""

from __future__ import annotations

import yaml

from engine.agent.gemini import GeminiProvider
from engine.agent.loop import Agent
from engine.config.goals import Budget, Goal
from engine.config.loader import load_graph
from engine.config.policies import load_policies
from engine.device import open_device
from engine.learning.learner import Learner
from engine.navigation.navigator import Navigator
from engine.observe.observer import Observer
from engine.runtime.tools import Tools
from engine.sim import SyntheticAssets, start_embedded
from tests.conftest import dismiss_point
from tests.engine.agent.test_loop import TINY_MODEL_POLICY, call, final, model_only
from tests.engine.sim.conftest import FakeClock

HIDDEN = "GET_ITEMS_1"


def test_the_agents_tap_that_clears_an_unknown_screen_becomes_a_proposal(scripted_gemini, no_wait, tmp_path):
    full = load_graph(server="en")
    graph = full.model_copy(update={"popups": [p for p in full.popups if p.name != HIDDEN]})
    assets, policies, clock = SyntheticAssets(full), load_policies(), FakeClock()
    x, y = dismiss_point(full, HIDDEN)
    folder = tmp_path / "proposals"
    with start_embedded(full, assets=assets, clock=clock) as sim:
        device = open_device(sim.serial, graph=graph, policies=policies, adb_host=sim.host, adb_port=sim.port)
        observer = Observer(graph, assets)
        # (the agent's tap alone: no dismissal search, and no app to restart when the ladder is spent)
        nav = Navigator(device, graph.model_copy(update={"app": None}), observer, clock=clock,
                        learner=Learner(folder), search=0)
        tools = Tools(device, graph, observer, policies, navigator=nav, clock=clock, sleep=clock.sleep)
        assert tools.alas_goto("page_main").ok
        sim.game.show_popup(HIDDEN)
        scripted_gemini.script = [call("alas_goto", page="page_reward"), call("adb_tap", x=x, y=y),
                                  call("alas_goto", page="page_reward"), final()]
        model = GeminiProvider("agent-learns-key", base_url=scripted_gemini.url, policy=TINY_MODEL_POLICY,
                               sleep=no_wait)
        try:
            goal = Goal(name="g", description="Reach the rewards.", free_text=True, budget=Budget(turns=6),
                        success=[{"page": "page_reward"}])
            result = Agent(tools, model).run(goal, state=model_only(goal))
        finally:
            model.close()
            device.close()
    assert result.ok, result.text
    proposal = yaml.safe_load(next(folder.glob("*.yaml")).read_text())
    assert proposal["label"] == "agent tap" and proposal["tap"] == [x, y] and proposal["shown_on"] == "page_main"
