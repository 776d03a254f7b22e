from __future__ import annotations

import numpy as np

from engine.config.schema import ColorSignature
from verifiers import color

BUTTON = {"name": "OK", "area": (100, 100, 140, 120), "color": (200, 50, 10)}


def _frame(rgb) -> np.ndarray:
    frame = np.zeros((720, 1280, 3), np.uint8)
    frame[100:120, 100:140] = rgb[::-1]
    return frame


def test_hit_when_the_mean_colour_is_within_tolerance(make_graph):
    graph = make_graph([BUTTON])
    check = color.compile_color(ColorSignature(type="color", button="OK"), graph)
    evidence = check.verify(_frame((210, 40, 10)))
    assert evidence.hit and evidence.channel == "color" and evidence.signature == "OK"
    assert evidence.box == (100, 100, 140, 120)
    assert abs(evidence.score - (1 - 10 / 255)) < 1e-6


def test_miss_when_one_channel_is_off_by_more_than_the_tolerance(make_graph):
    graph = make_graph([BUTTON])
    evidence = color.verify(_frame((200, 50, 60)), ColorSignature(type="color", button="OK"), graph)
    assert not evidence.hit


def test_tolerance_is_layered_page_over_graph_over_builtin(make_graph):
    sig = ColorSignature(type="color", button="OK")
    loose_page = {"name": "page_a", "defaults": {"color_tolerance": 60}, "signatures": [sig.model_dump()]}
    graph = make_graph([BUTTON], pages=[loose_page], defaults={"color_tolerance": 5})
    frame = _frame((200, 50, 50))  # 40 off on blue
    assert not color.verify(frame, sig, graph).hit  # graph says 5
    assert color.verify(frame, sig, graph, page=graph.page("page_a")).hit  # page says 60
    assert color.verify(frame, ColorSignature(type="color", button="OK", tolerance=45), graph).hit


def test_explicit_area_and_rgb_without_button(make_graph):
    graph = make_graph()
    sig = ColorSignature(type="color", area=(100, 100, 140, 120), rgb=(200, 50, 10), name="patch")
    assert color.verify(_frame((200, 50, 10)), sig, graph).hit
