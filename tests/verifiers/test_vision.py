"""The vision verifier against the REAL google-genai client talking to a local canned Gemini endpoint."""

from __future__ import annotations

import json
import logging
import time

import numpy as np
import pytest

from tests.speed import within
from verifiers.vision import VisionClient, VisionError

KEY = "test-key-SECRET-0123456789"
PAGES = ["page_main", "page_commission"]
POPUPS = ["GET_ITEMS_1"]


@pytest.fixture
def server(fake_gemini):
    """The shared local Gemini stand-in (tests/conftest.py): set .answer and .delay, read .calls."""
    return fake_gemini


@pytest.fixture
def frame():
    return np.random.default_rng(3).integers(0, 256, (720, 1280, 3), dtype=np.uint8)


def _answer(**over):
    answer = {"page": "page_main", "popup": None, "blocking_element": None, "ocr_text": "Battle",
              "suggested_action": "retry", "confidence": 0.9}
    answer.update(over)
    return answer


def _client(url, **kw):
    client = VisionClient(KEY, model="gemini-test", base_url=url, timeout_s=kw.pop("timeout_s", 5), **kw)
    return client


def test_a_valid_answer_is_parsed_and_sent_with_schema_and_image(server, frame):
    server.answer = _answer(popup="GET_ITEMS_1")
    client = _client(server.url)
    answer = client.classify(frame, PAGES, POPUPS)
    assert (answer.page, answer.popup, answer.suggested_action) == ("page_main", "GET_ITEMS_1", "retry")
    assert answer.evidence().channel == "vision" and answer.evidence().hit
    path, body = server.calls[0]
    assert path.endswith("/models/gemini-test:generateContent")
    request = json.loads(body)
    config = request["generationConfig"]
    assert config["responseMimeType"] == "application/json" and "responseSchema" in config
    parts = request["contents"][0]["parts"]
    inline = parts[0]["inlineData"]
    assert inline.get("mimeType", inline.get("mime_type")) == "image/jpeg"
    assert "page_commission" in parts[1]["text"]


def test_answers_are_cached_by_frame(server, frame):
    server.answer = _answer()
    client = _client(server.url)
    client.classify(frame, PAGES, POPUPS)
    again = client.classify(frame.copy(), PAGES, POPUPS)
    assert again.cached and len(server.calls) == 1
    other = frame.copy()
    other[0, 0] ^= 255
    client.classify(other, PAGES, POPUPS)
    assert len(server.calls) == 2


@pytest.mark.parametrize(
    "reply, reason",
    [
        ("this is not json", "malformed"),
        (["page_main"], "malformed"),
        (_answer(page="page_secret_lab"), "off_list"),
        (_answer(popup="SOME_POPUP"), "off_list"),
        (_answer(suggested_action="format_the_phone"), "off_list"),
        (_answer(confidence="high"), "malformed"),
        (_answer(confidence=0.2), "low_confidence"),
    ],
)
def test_untrustworthy_answers_are_structured_errors(server, frame, reply, reason, caplog):
    server.answer = reply
    client = _client(server.url)
    with caplog.at_level(logging.DEBUG), pytest.raises(VisionError) as info:
        client.classify(frame, PAGES, POPUPS)
    assert info.value.reason == reason
    assert info.value.to_dict()["status"] == "verification_error"
    assert KEY not in str(info.value) and KEY not in json.dumps(info.value.to_dict(), default=str)
    assert KEY not in caplog.text


def test_a_slow_model_times_out_within_the_bound(server, frame, caplog):
    server.answer, server.delay = _answer(), 3.0
    client = _client(server.url, timeout_s=0.5)
    start = time.monotonic()
    with caplog.at_level(logging.DEBUG), pytest.raises(VisionError) as info:
        client.classify(frame, PAGES, POPUPS)
    within(time.monotonic() - start, 2.5, "vision call to a slow model timed out, wall (s)")
    assert info.value.reason == "timeout"
    assert KEY not in str(info.value) and KEY not in caplog.text


def test_from_env_needs_a_key():
    assert VisionClient.from_env({}) is None
    client = VisionClient.from_env({"GEMINI_API_KEY": KEY, "ENGINE_VISION_MODEL": "m1",
                                    "ENGINE_VISION_TIMEOUT": "3"})
    assert client.model == "m1" and client.timeout_s == 3.0


def _prompt(server) -> str:
    return json.loads(server.calls[-1][1])["contents"][0]["parts"][1]["text"]


@pytest.mark.parametrize("folder, shown", [(None, "the mobile game Azurlane"), ("good", "the mobile game Demo")])
def test_the_session_prompt_names_the_game_of_the_loaded_graph(server, frame, monkeypatch, folder, shown):
    from pathlib import Path

    from engine.config.loader import load_graph
    from engine.runtime.session import _vision

    graphs = Path(__file__).resolve().parents[1] / "data" / "graphs"
    graph = load_graph(graphs / folder if folder else None)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.setenv("ENGINE_VISION_BASE_URL", server.url)
    server.answer = _answer()
    client = _vision(graph)
    try:
        client.classify(frame, PAGES, POPUPS)
    finally:
        client.close()
    prompt = _prompt(server)
    assert f"screenshot of {shown}." in prompt
    assert ("Azur" in prompt) == (folder is None)


def test_a_client_without_a_game_names_none(server, frame):
    server.answer = _answer()
    client = _client(server.url)
    client.classify(frame, PAGES, POPUPS)
    assert "screenshot of a mobile game." in _prompt(server) and "Azur" not in _prompt(server)


def test_display_names():
    from verifiers.vision import display_name

    assert display_name("azurlane") == "Azurlane"
    assert display_name("azur_lane") == display_name("azur-lane") == "Azur Lane"
    assert display_name("Azur Lane") == "Azur Lane" and display_name("MyGame") == "MyGame"


# ------------------------------------------------------------------------------------------------ the one client


def test_vision_and_the_agent_share_one_client_and_one_default_model():
    from engine.agent.gemini import GeminiProvider
    from engine.config.policies import load_policies
    from engine.llm import GeminiClient

    vision = VisionClient.from_env({"GEMINI_API_KEY": KEY})
    agent = GeminiProvider.from_env({"GEMINI_API_KEY": KEY})
    try:
        assert isinstance(vision._client, GeminiClient) and isinstance(agent._client, GeminiClient)
        assert vision.model == agent.model == load_policies().get("model").model
    finally:
        vision.close()
        agent.close()


def test_a_service_error_is_a_vision_error_with_the_hint(server, frame):
    from tests.gemini_fake import error

    server.answer = None
    server.script = [error(404, "models/gemini-test is no longer available")]
    client = _client(server.url)
    with pytest.raises(VisionError) as info:
        client.classify(frame, PAGES, POPUPS)
    assert info.value.reason == "call_failed" and "no longer available" in str(info.value)
    assert info.value.context["model_error"] == "not_found" and "ENGINE_AGENT_MODEL" in info.value.context["hint"]
    assert len(server.calls) == 1  # vision never retries by itself


def test_a_trickled_vision_answer_ends_at_the_deadline(server, frame):
    from tests.gemini_fake import Reply, answer

    server.answer = None
    server.script = [Reply(body=answer([{"text": json.dumps(_answer())}]), trickle=0.5)]
    client = _client(server.url, timeout_s=1.0)
    start = time.monotonic()
    with pytest.raises(VisionError) as info:
        client.classify(frame, PAGES, POPUPS)
    took = time.monotonic() - start
    assert info.value.reason == "timeout"
    within(took, 1.0 + 1.5, "trickled vision answer ended, wall (s)")


def test_a_large_frame_is_downscaled_and_its_tap_mapped_back_to_frame_pixels(server):
    blocks = np.random.default_rng(4).integers(0, 256, (45, 80, 3), dtype=np.uint8)
    big = np.ascontiguousarray(np.kron(blocks, np.ones((32, 32, 1), np.uint8)))  # 2560x1440, JPEG-friendly
    server.answer = _answer(page=None, confidence=0.9, tap=[640, 360])  # the image's centre, 1280x720
    client = _client(server.url)
    answer = client.classify(big, PAGES, POPUPS)
    assert answer.tap == (1280, 720)
    inline = json.loads(server.calls[0][1])["contents"][0]["parts"][0]["inlineData"]
    import base64

    import cv2

    data = base64.urlsafe_b64decode(inline["data"] + "=" * (-len(inline["data"]) % 4))
    sent = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    assert sent.shape[:2] == (720, 1280)
