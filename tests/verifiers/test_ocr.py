from __future__ import annotations

import cv2
import numpy as np
import pytest

from engine.config.schema import Graph, OcrSignature
from verifiers import ocr


@pytest.fixture(scope="module")
def text_frame() -> np.ndarray:
    frame = np.full((720, 1280, 3), 35, np.uint8)
    cv2.putText(frame, "Commission  Ready", (100, 100), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (255, 255, 255), 2)
    cv2.putText(frame, "Mail", (900, 500), cv2.FONT_HERSHEY_SIMPLEX, 1.5, (240, 240, 240), 3)
    return frame


def _graph() -> Graph:
    return Graph.model_validate({"game": "t", "resolution": (1280, 720), "servers": ["en"],
                                 "fallback_server": "en", "pages": [{"name": "p"}]}).for_server("en")


def test_normalise_collapses_spaces_and_casefolds():
    assert ocr.normalise("  Commission \t READY\n") == "commission ready"


def test_read_text_of_a_known_region(text_frame):
    text, confidence = ocr.read_text(text_frame, (90, 60, 500, 115))
    assert ocr.normalise(text).replace(" ", "") == "commissionready"
    assert confidence > 0.8


def test_a_loose_region_falls_back_to_detection(text_frame):
    text, confidence = ocr.read_text(text_frame, (700, 300, 1280, 720))
    assert "mail" in ocr.normalise(text) and confidence > 0.5


def test_signature_pattern_is_case_insensitive_and_misses_other_text(text_frame):
    graph = _graph()
    hit = ocr.verify(text_frame, OcrSignature(type="ocr", area=(90, 60, 500, 115), pattern=r"COMMISSION\s*ready"),
                     graph)
    assert hit.hit and hit.channel == "ocr" and hit.text
    miss = ocr.verify(text_frame, OcrSignature(type="ocr", area=(90, 60, 500, 115), pattern="mailbox"), graph)
    assert not miss.hit and miss.text


def test_find_text_on_a_whole_frame(text_frame):
    boxes = ocr.find_text(text_frame)
    texts = [ocr.normalise(b.text) for b in boxes]
    assert any("mail" in t for t in texts)
    mail = next(b for b in boxes if "mail" in ocr.normalise(b.text))
    x1, y1, x2, y2 = mail.box
    assert 880 <= x1 < 1000 and 440 <= y1 <= 510


def test_the_engine_is_loaded_once():
    assert ocr.engine() is ocr.engine()
    assert ocr.loaded()


def test_normalise_folds_full_width_characters_space_and_case():
    from verifiers.ocr import normalise

    assert normalise("ＦＬＯＯＲ\u3000７") == "floor 7"
    assert normalise("  Commission\n 3/4 ") == "commission 3/4"


def test_an_area_is_read_once_per_observation(text_frame, monkeypatch):
    """Pages whose titles share one area (a generated game's, engine.sim.generate) read it once per frame scope."""
    from verifiers.common import frame_scope

    calls = []
    real = ocr.read_text
    monkeypatch.setattr(ocr, "read_text", lambda frame, area, **kw: calls.append(area) or real(frame, area, **kw))
    graph = _graph()
    checks = [ocr.compile_ocr(OcrSignature(type="ocr", area=(90, 60, 500, 115), pattern=p), graph)
              for p in ("mail", "shop", "commission")]
    with frame_scope(text_frame):
        hits = [check.verify(text_frame).hit for check in checks]
    assert hits == [False, False, True] and len(calls) == 1
    checks[0].verify(text_frame.copy())  # outside a scope (or on another frame) it is read again
    assert len(calls) == 2
