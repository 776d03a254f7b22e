"""Every server the Azur Lane graph declares works with ALAS's own assets for it: jp and tw as well as en and cn.

The graph's jp and tw values were derived from ALAS's jp/tw asset files (../shared/alas/assets): each is a full
1280x720 frame, black outside the button, so its non-black bounding box is the button's area on that server.
These tests check the YAML against those files, then drive the simulator (which pastes the real template pixels)
with the resolved graph: every page is observed as itself, and goto reaches page_commission and verifies it.
"""

from __future__ import annotations

import numpy as np
import pytest

from alas_wrapped.assets_import import import_alas
from engine.config.assetpacks import AlasAssetPack
from engine.config.loader import load_graph
from engine.observe.observer import Observer
from engine.runtime.session import open_session
from engine.sim import SimGame

SERVERS = ("jp", "tw")
KNOWN_AMBIGUOUS = {"page_channel"}
"""Ambiguous on every server, en and cn included: the simulator draws its link button, CAMPAIGN_MENU_GOTO_CAMPAIGN,
whose pixels hold page_campaign_menu's check (an ALAS quirk, see pages/azurlane/main.yaml)."""


@pytest.fixture(scope="module", params=SERVERS)
def rig(request, shared_dir):
    """(server-resolved graph, ALAS asset pack for that server with the graph's fallback) per server."""
    graph = load_graph().resolve(request.param)
    return graph, AlasAssetPack(shared_dir / "alas", graph.server, fallback=graph.fallback_server)


def _size(area) -> tuple[int, int]:
    return area[2] - area[0], area[3] - area[1]


def test_areas_clicks_and_colours_are_the_servers_own(rig):
    graph, pack = rig
    checked, wrong = 0, []
    for button in graph.buttons:
        if not isinstance(button.asset, str) or pack.source(button.asset)[1] != graph.server:
            continue  # the fallback's file: the fallback's values apply, checked by test_azurlane_graph
        template = pack.get(button.asset)
        mean = template.frames[0].reshape(-1, 3).mean(axis=0)[::-1]
        shift = np.abs(np.subtract(template.area, button.area)).max()
        click = np.abs(np.subtract(template.click or template.area, button.click_area)).max()
        if button.name in {"ACADEMY_GOTO_MUNITIONS"}:  # the game's whole tap target (test_azurlane_graph)
            click = 0 if _contains(button.click_area, template.click or template.area) else click
        if _size(template.area) != _size(button.area) or shift > 2 or click > 2:
            wrong.append((button.name, "area/click", template.area, button.area, button.click_area))
        if button.color is not None and np.abs(mean - button.color).max() > 6:
            wrong.append((button.name, "color", mean.round().tolist(), button.color))
        checked += 1
    assert wrong == []
    assert checked > 120


def test_every_page_is_observed_as_itself_with_the_real_templates(rig):
    graph, pack = rig
    game, observer = SimGame(graph, assets=pack), Observer(graph, pack)
    assert observer.unavailable == {}
    wrong = []
    for page in graph.pages:
        if not page.signatures or page.name in KNOWN_AMBIGUOUS:
            continue
        game.goto(page.name)
        game.popups.clear()
        observation = observer.observe(game.frame())
        if observation.page != page.name or observation.popups:
            wrong.append((page.name, observation.page, observation.popups, observation.ambiguous))
    assert wrong == []


def test_goto_page_commission_verifies_in_the_simulator(rig, shared_dir, tmp_path):
    """Through the real session path, with the templates `assets import-alas` took from ALAS for the server."""
    graph, _ = rig
    report = import_alas(shared_dir / "alas", graph.server, tmp_path / "pack", load_graph())
    assert report.ok and report.warnings == []
    with open_session(server=graph.server, assets=tmp_path / "pack") as session:
        assert session.observer.unavailable == {}
        result = session.tools.alas_goto("page_commission")
        truth = session.sim.game.truth()
    assert result.ok and result.status == "verified", result.text
    assert result.data["hops"] == 3 and result.data["observed"] == "page_commission"
    assert truth["page"] == "page_commission" and not truth["popups"] and not truth["unknown"]


def test_without_their_own_values_jp_templates_are_not_found(shared_dir):
    """The regression the per-server values fix: jp resolved to cn's areas misses ALAS's jp main menu."""
    graph = load_graph().resolve("jp")
    pack = AlasAssetPack(shared_dir / "alas", "jp", fallback=graph.fallback_server)
    cn_areas = load_graph().resolve("cn")
    fleet = graph.button("MAIN_GOTO_FLEET")
    assert tuple(fleet.area) == pack.get("ui/MAIN_GOTO_FLEET").area != tuple(cn_areas.button("MAIN_GOTO_FLEET").area)
    stale = graph.model_copy(update={"buttons": [cn_areas.button(b.name) if b.name == fleet.name else b
                                                 for b in graph.buttons]})
    game = SimGame(graph, assets=pack)
    game.goto("page_main")
    frame = game.frame()
    assert Observer(graph, pack).observe(frame).page == "page_main"
    assert Observer(stale, pack).observe(frame).page != "page_main"


def _contains(outer, inner) -> bool:
    return outer[0] <= inner[0] and outer[1] <= inner[1] and outer[2] >= inner[2] and outer[3] >= inner[3]
