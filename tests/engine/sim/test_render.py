"""Rendering is deterministic, honest (shared buttons look the same everywhere) and pastes real pixels."""

from __future__ import annotations

import hashlib

import cv2
import numpy as np
import pytest

from engine.config.schema import Graph
from engine.sim import SimGame, SyntheticAssets
from engine.sim.render import Renderer, strip_regex


def crop(frame, area):
    x1, y1, x2, y2 = area
    return frame[y1:y2, x1:x2]


def digest(frame) -> str:
    return hashlib.sha256(np.ascontiguousarray(frame).tobytes()).hexdigest()


def test_same_page_renders_to_the_same_bytes_in_two_games(tiny_graph):
    a, b = SimGame(tiny_graph), SimGame(tiny_graph)
    for page in tiny_graph.page_names:
        a.goto(page)
        b.goto(page)
        assert digest(a.frame()) == digest(b.frame())


def test_pages_differ_and_backgrounds_are_textured(tiny_graph):
    renderer = Renderer(tiny_graph.for_server("en"))
    hashes = {digest(renderer.page(p)) for p in tiny_graph.page_names}
    assert len(hashes) == len(tiny_graph.page_names)
    # Not flat: a textured background gives template matching something to latch on to.
    assert renderer.page("page_main")[150:250, 150:350].std() > 5


def test_shared_button_looks_the_same_on_two_pages(tiny_graph):
    renderer = Renderer(tiny_graph.for_server("en"))
    back = (10, 300, 90, 350)
    assert np.array_equal(crop(renderer.page("page_shop"), back), crop(renderer.page("page_dock"), back))


def test_template_signature_pixels_are_the_synthetic_packs_template(tiny_graph):
    graph = tiny_graph.for_server("en")
    pack = SyntheticAssets(graph)
    renderer = Renderer(graph, pack)
    main_check = pack.get("ui/MAIN_CHECK")
    assert main_check is not None and main_check.area == (20, 60, 140, 100)
    assert np.array_equal(crop(renderer.page("page_main"), main_check.area), main_check.frames[0])
    # The template is found where it was declared, as the observer will look for it.
    frame = renderer.page("page_main")
    scores = cv2.matchTemplate(frame, main_check.frames[0], cv2.TM_CCOEFF_NORMED)
    _, best, _, loc = cv2.minMaxLoc(scores)
    assert best > 0.99 and loc == (20, 60)


def test_synthetic_templates_depend_on_the_name_only(tiny_graph_all_servers):
    en = SyntheticAssets(tiny_graph_all_servers.resolve("en"))
    cn = SyntheticAssets(tiny_graph_all_servers.resolve("cn"))
    assert np.array_equal(en.get("ui/BACK").frames[0], cn.get("ui/BACK").frames[0])
    assert "ui/SHOP_CHECK_CN" in set(cn.names()) and "ui/SHOP_CHECK_CN" not in set(en.names())
    assert not np.array_equal(en.get("ui/SHOP_CHECK").frames[0], en.get("ui/DOCK_CHECK").frames[0])


def test_synthetic_templates_are_drawn_when_first_asked_for(tiny_graph, monkeypatch):
    """Opening the simulator draws no template (the shipped graph's 193 took 0.3 s of bare ``health``, which shows
    one page); each is drawn on its first get, once, the same pixels a fresh pack draws."""
    from engine.sim import render

    drawn: list[str] = []
    draw = render.identity_pattern
    monkeypatch.setattr(render, "identity_pattern", lambda name, w, h: drawn.append(name) or draw(name, w, h))
    render._synthetic_crop.cache_clear()  # as in a fresh process: the packs of one process share what they drew
    graph = tiny_graph.for_server("en")
    pack = SyntheticAssets(graph)
    assert drawn == [] and "ui/MAIN_CHECK" in set(pack.names()) and pack.get("ui/NOT_IN_THE_GRAPH") is None
    main_check = pack.get("ui/MAIN_CHECK")
    assert pack.get("ui/MAIN_CHECK") is main_check and drawn == ["asset:ui/MAIN_CHECK"]
    assert np.array_equal(SyntheticAssets(graph).get("ui/MAIN_CHECK").frames[0], main_check.frames[0])


def test_colour_signatures_have_their_declared_mean_colour(tiny_graph):
    frame = Renderer(tiny_graph.for_server("en")).page("page_dock")
    assert tuple(crop(frame, (560, 10, 630, 40)).reshape(-1, 3).mean(axis=0)[::-1].round()) == (30, 160, 60)
    # A button with both a colour and a template: the template's mean is shifted to the colour (within rounding
    # and clipping), so the two signatures of one button agree.
    main = Renderer(tiny_graph.for_server("en")).page("page_main")
    mean = crop(main, (20, 60, 140, 100)).reshape(-1, 3).mean(axis=0)[::-1]
    assert np.abs(mean - np.array([200, 180, 90])).max() < 20


def test_popup_darkens_the_page_and_draws_its_signature(game):
    game.goto("page_shop")
    plain = game.frame()
    game.show_popup("popup_news")
    covered = game.frame()
    news = SyntheticAssets(game.graph).get("ui/NEWS_CHECK")
    assert np.array_equal(crop(covered, news.area), news.frames[0])
    assert covered[0:40, 300:640].mean() < plain[0:40, 300:640].mean() * 0.5


def test_loading_screen_without_declared_signatures_is_distinctive(game, tiny_graph):
    loading = game.renderer.loading()
    pages = [game.renderer.page(p) for p in tiny_graph.page_names]
    assert all(np.abs(loading.astype(int) - p.astype(int)).mean() > 20 for p in pages)


def test_loading_signatures_are_drawn_when_declared(tiny_graph):
    data = tiny_graph.model_dump(exclude_none=True)
    data["loading_signatures"] = [{"type": "color", "area": [0, 340, 640, 360], "rgb": [255, 0, 0]}]
    graph = Graph.model_validate(data)
    frame = Renderer(graph.for_server("en")).loading()
    assert (crop(frame, (0, 340, 640, 360)) == (0, 0, 255)).all()


def test_unknown_screen_carries_no_template_of_the_graph(game):
    frame = game.renderer.unknown(1)
    for name in game.renderer.assets.names():
        template = game.renderer.assets.get(name).frames[0]
        best = cv2.minMaxLoc(cv2.matchTemplate(frame, template, cv2.TM_CCOEFF_NORMED))[1]
        assert best < 0.85, name


@pytest.mark.parametrize(
    "pattern, text",
    [("^Touch\\s+to\\s+start$", "Touchtostart"), ("EVENT\\s*\\d+", "EVENT"), ("Confirm\\?", "Confirm"),
     ("Commission|委托", "Commission")],
)
def test_strip_regex(pattern, text):
    assert strip_regex(pattern).replace(" ", "") == text


def test_ocr_text_is_readable(tiny_graph):
    """Read as the observer reads it: recognition on the declared area, and detection on the whole frame."""
    pytest.importorskip("rapidocr_onnxruntime")
    from verifiers.ocr import find_text, read_text

    frame = Renderer(tiny_graph.for_server("en")).page("page_login")
    text, confidence = read_text(frame, (170, 120, 470, 200))
    assert text.strip() == "Touch to start" and confidence > 0.9
    assert "Touch to start" in [box.text for box in find_text(frame)]


def test_real_alas_pixels_are_pasted_at_their_areas(shared_dir):
    from engine.config.assetpacks import AlasAssetPack
    from engine.config.loader import load_graph

    graph = load_graph(server="en")
    pack = AlasAssetPack(shared_dir / "alas", "en")
    frame = SimGame(graph, assets=pack).frame()  # the start page
    game = SimGame(graph, assets=pack)
    game.goto("page_main")
    frame = game.frame()
    checked = 0
    for sig in graph.page("page_main").signatures:
        if sig.type != "template":
            continue
        asset = sig.asset or graph.button(sig.button).asset
        template = pack.get(asset)
        assert template is not None, asset
        assert np.array_equal(crop(frame, template.area), template.frames[0]), asset
        checked += 1
    assert checked >= 1


def test_every_page_and_popup_of_the_demo_and_azur_lane_graphs_renders():
    from pathlib import Path

    from engine.config.loader import load_graph

    demo = Path(__file__).resolve().parents[2] / "data" / "graphs" / "good"
    for graph in (load_graph(demo, server="en"), load_graph(server="en")):
        renderer = Renderer(graph)
        frames = {p: renderer.page(p) for p in graph.page_names}
        assert len({digest(f) for f in frames.values()}) == len(frames)
        base = frames[graph.page_names[0]]
        for popup in graph.popups:
            covered = renderer.with_popups(base, [popup])
            assert covered.shape == base.shape and not np.array_equal(covered, base), popup.name


# ---------------------------------------------------------------------------------------------- overlapping areas


def small_graph(signatures: list[dict], buttons: list[dict] = ()) -> Graph:
    return Graph.model_validate({
        "game": "t", "resolution": [400, 300], "servers": ["en"], "fallback_server": "en",
        "buttons": list(buttons), "pages": [{"name": "page_a", "signatures": signatures}],
    }).resolve()


def mean_rgb(frame, area) -> np.ndarray:
    return crop(frame, area).reshape(-1, 3).mean(axis=0)[::-1]


def test_overlapping_colour_text_and_smaller_colour_areas_all_hold():
    from verifiers.color import verify

    graph = small_graph([
        {"type": "color", "name": "band", "area": [0, 0, 400, 100], "rgb": [40, 60, 160]},
        {"type": "color", "name": "badge", "area": [330, 30, 380, 70], "rgb": [220, 200, 30]},
        {"type": "ocr", "area": [40, 20, 280, 80], "pattern": "floor 4", "sample": "FLOOR 4"},
    ])
    renderer = Renderer(graph)
    frame = renderer.page("page_a")
    for sig in graph.page("page_a").signatures[:2]:
        assert verify(frame, sig, graph).hit, sig.name
    assert np.abs(mean_rgb(frame, (0, 0, 400, 100)) - (40, 60, 160)).max() <= 1
    assert renderer.conflicts == {}


def test_a_colour_area_covered_by_other_signatures_is_reported():
    graph = small_graph([
        {"type": "color", "name": "tiny", "area": [40, 20, 120, 60], "rgb": [10, 10, 10]},
        {"type": "ocr", "area": [30, 10, 130, 70], "pattern": "x", "sample": "WHITE"},
    ])
    renderer = Renderer(graph)
    renderer.page("page_a")
    (conflict,) = renderer.conflicts["page_a"]
    assert conflict.signature == "tiny" and conflict.difference > conflict.tolerance
    assert "page_a: colour signature tiny is covered" in str(conflict)


def test_a_template_is_pasted_at_its_own_size_not_stretched_to_its_area():
    from engine.config.assets import Template
    from engine.sim.render import paste

    pixels = np.arange(20 * 30 * 3, dtype=np.uint8).reshape(20, 30, 3)
    frame = np.zeros((100, 100, 3), np.uint8)
    assert paste(frame, pixels, (10, 10, 90, 90)) == (10, 10, 40, 30)
    assert np.array_equal(frame[10:30, 10:40], pixels) and not frame[30:90, 40:90].any()
    assert paste(frame, pixels, (85, 90, 95, 95)) == (85, 90, 100, 100)  # clipped at the frame's edge

    class Pack:
        def get(self, name):
            return Template(name=name, frames=(pixels,), area=None)

    graph = small_graph([{"type": "template", "asset": "ui/X", "area": [50, 50, 150, 150]}])
    frame = Renderer(graph, Pack()).page("page_a")
    assert np.array_equal(crop(frame, (50, 50, 80, 70)), pixels)
