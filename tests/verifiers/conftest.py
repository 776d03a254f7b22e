"""Small graphs and frames for verifier tests: built in code so each test shows exactly what it checks."""

from __future__ import annotations

import numpy as np
import pytest

from engine.config.schema import Graph


def _make_graph(buttons=(), pages=(), popups=(), defaults=None) -> Graph:
    data = {
        "game": "test",
        "resolution": (1280, 720),
        "servers": ["en"],
        "fallback_server": "en",
        "buttons": list(buttons),
        "pages": list(pages) or [{"name": "page_a"}],
        "popups": list(popups),
    }
    if defaults:
        data["defaults"] = defaults
    return Graph.model_validate(data).for_server("en")


@pytest.fixture
def noise_frame() -> np.ndarray:
    rng = np.random.default_rng(1)
    return rng.integers(0, 256, (720, 1280, 3), dtype=np.uint8)


def _textured(seed: int, h: int, w: int, low: int = 0, high: int = 256) -> np.ndarray:
    rng = np.random.default_rng(seed)
    small = rng.integers(low, high, (max(2, h // 4), max(2, w // 4), 3), dtype=np.uint8)
    import cv2

    return cv2.resize(small, (w, h), interpolation=cv2.INTER_NEAREST)


@pytest.fixture
def make_graph():
    return _make_graph


@pytest.fixture
def textured():
    return _textured
