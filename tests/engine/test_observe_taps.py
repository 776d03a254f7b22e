"""A popup's tap with ``search`` (engine.observe.taps): the button is found inside the dialog on the frame the popup
was seen on, and the actuator taps where it is now; where it is not found, at its declared click area."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from engine.config.assets import Template
from engine.config.schema import Graph, TapAction
from engine.navigation.actuator import Actuator
from engine.observe.observer import Observer

RNG = np.random.default_rng(11)
TITLE = RNG.integers(0, 255, (30, 120, 3), dtype=np.uint8)
BUTTON = RNG.integers(0, 255, (24, 24, 3), dtype=np.uint8)
GRAPH = Graph.model_validate({
    "game": "taps", "resolution": [640, 360], "servers": ["en"], "fallback_server": "en",
    "buttons": [{"name": "OFFER_TITLE", "area": [200, 60, 320, 90], "asset": "offer_title"},
                {"name": "OFFER_X", "area": [400, 70, 424, 94], "asset": "offer_x"}],
    "pages": [{"name": "page_a", "signatures": [{"type": "color", "area": [0, 0, 10, 10], "rgb": [0, 0, 0]}]}],
    "popups": [{"name": "OFFER", "signatures": [{"type": "template", "button": "OFFER_TITLE"}],
                "dismiss": [{"type": "tap", "button": "OFFER_X", "search": [160, 60, 480, 300]}]}],
}).resolve()


class Pack:
    server = "en"

    def get(self, name):
        return {"offer_title": Template("offer_title", (TITLE,), (200, 60, 320, 90)),
                "offer_x": Template("offer_x", (BUTTON,), (400, 70, 424, 94))}.get(name)

    def names(self):
        return ["offer_title", "offer_x"]


def _frame(x: int | None, y: int | None) -> np.ndarray:
    frame = np.zeros((360, 640, 3), np.uint8)
    frame[60:300, 160:480] = (90, 40, 70)
    frame[60:90, 200:320] = TITLE
    if x is not None:
        frame[y:y + 24, x:x + 24] = BUTTON
    return frame


@pytest.mark.parametrize("spot", [(400, 70), (180, 240), (300, 150)])
def test_the_tap_goes_where_the_button_is_found_inside_the_dialog(spot):
    obs = Observer(GRAPH, Pack()).observe(_frame(*spot))
    assert obs.popups == ("OFFER",)
    action = GRAPH.popup("OFFER").dismiss[0]
    assert Actuator(None, GRAPH).tap_point(action, obs) == (spot[0] + 12, spot[1] + 12)


def test_a_button_not_found_is_tapped_at_its_declared_place():
    obs = Observer(GRAPH, Pack()).observe(_frame(None, None))
    assert obs.popups == ("OFFER",) and "OFFER_X" not in obs.offsets
    assert Actuator(None, GRAPH).tap_point(GRAPH.popup("OFFER").dismiss[0], obs) == (412, 82)


def test_search_needs_a_button():
    with pytest.raises(ValidationError, match="needs `button`"):
        TapAction(type="tap", point=(1, 2), search=(0, 0, 10, 10))
