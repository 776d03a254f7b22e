"""The agent's model providers: Gemini against a local generateContent server, and replay from JSONL."""

from __future__ import annotations

import json
import logging
import time

import pytest

from engine.agent.gemini import GeminiProvider
from engine.agent.models import (
    Call,
    CallResult,
    Message,
    ModelTurn,
    Provider,
    ReplayProvider,
    ToolDecl,
    Usage,
    record_turn,
)
from engine.errors import ModelError
from engine.policies import load_policies

KEY = "AIza-test-SECRET-0123456789"
TAP = ToolDecl("tap", "Tap a point of the screen.",
               {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "required": ["x", "y"]})


def answer(parts: list[dict], usage: tuple[int, int] | None = (12, 3)) -> dict:
    body: dict = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}
    if usage is not None:
        body["usageMetadata"] = {"promptTokenCount": usage[0], "candidatesTokenCount": usage[1]}
    return body


def error(code: int, status: str) -> tuple[int, dict]:
    return code, {"error": {"code": code, "message": f"echo {KEY}", "status": status}}


@pytest.fixture
def provider(scripted_gemini, no_wait):
    p = GeminiProvider(KEY, base_url=scripted_gemini.url, sleep=no_wait)
    yield p
    p.close()


FIRST = (Message("user", "Collect the mail."),)


def ask(p: GeminiProvider, messages=FIRST, timeout: float = 10.0) -> ModelTurn:
    return p.generate("You drive a game.", list(messages), [TAP], timeout=timeout)


def test_function_call_answer_becomes_calls_with_arguments(provider, scripted_gemini):
    scripted_gemini.script = [answer([{"functionCall": {"name": "tap", "args": {"x": 5, "y": 7}, "id": "c1"},
                                       "thoughtSignature": "c2lnbmVk"},
                                      {"functionCall": {"name": "state", "args": {}}}])]
    turn = ask(provider)
    assert turn.calls == (Call("tap", {"x": 5, "y": 7}, "c1", "c2lnbmVk"), Call("state", {}, None))
    ask(provider, [*FIRST, Message("model", calls=turn.calls)])
    sent = scripted_gemini.requests[-1][2]["contents"][1]["parts"][0]
    assert sent.get("thoughtSignature", sent.get("thought_signature")) == "c2lnbmVk"  # handed back as received
    assert turn.text is None
    assert isinstance(provider, Provider)


def test_text_answer_and_usage(provider, scripted_gemini):
    scripted_gemini.script = [answer([{"text": "The mail "}, {"text": "is collected."}], usage=(120, 8))]
    turn = ask(provider)
    assert turn.text == "The mail is collected." and turn.calls == ()
    assert turn.usage == Usage(120, 8) and turn.usage.total == 128
    assert turn.raw["candidates"][0]["content"]["parts"][0]["text"] == "The mail "


def test_missing_usage_metadata_is_zero(provider, scripted_gemini):
    scripted_gemini.script = [answer([{"text": "hi"}], usage=None)]
    assert ask(provider).usage == Usage(0, 0)


def test_request_declares_tools_and_carries_earlier_tool_results(provider, scripted_gemini):
    history = [
        Message("user", "Collect the mail."),
        Message("model", "Tapping mail.", calls=(Call("tap", {"x": 1, "y": 2}, "c1"),)),
        Message("tool", results=(CallResult("tap", {"ok": True, "status": "ok"}, "c1"),)),
    ]
    ask(provider, history)
    path, _headers, body = scripted_gemini.requests[-1]
    assert path.endswith("/models/gemini-2.5-flash:generateContent")
    declared = body["tools"][0]["functionDeclarations"][0]
    schema = declared.get("parametersJsonSchema", declared.get("parameters_json_schema"))
    assert declared["name"] == "tap" and schema == TAP.parameters
    assert body["systemInstruction"]["parts"][0]["text"] == "You drive a game."
    roles = [c["role"] for c in body["contents"]]
    assert roles == ["user", "model", "user"]
    assert body["contents"][1]["parts"][1]["functionCall"] == {"id": "c1", "name": "tap", "args": {"x": 1, "y": 2}}
    assert body["contents"][2]["parts"][0]["functionResponse"] == {
        "id": "c1", "name": "tap", "response": {"ok": True, "status": "ok"}}
    assert "automaticFunctionCalling" not in json.dumps(body)  # a client-side switch: never sent, never run


def test_429_is_retried_with_the_policy_wait(provider, scripted_gemini, no_wait):
    scripted_gemini.script = [error(429, "RESOURCE_EXHAUSTED"), answer([{"text": "done"}])]
    turn = ask(provider)
    assert turn.text == "done"
    assert len(scripted_gemini.requests) == 2
    assert len(no_wait.waits) == 1 and 1.0 <= no_wait.waits[0] <= 1.5  # policies/default.yaml: model, initial 1


def test_persistent_500_is_server_error_after_the_policy_attempts(provider, scripted_gemini, no_wait):
    scripted_gemini.script = [error(500, "INTERNAL")]
    with pytest.raises(ModelError) as caught:
        ask(provider)
    assert caught.value.reason == "server_error"
    attempts = load_policies().get("model").attempts
    assert len(scripted_gemini.requests) == attempts and len(no_wait.waits) == attempts - 1


def test_other_4xx_is_refused_and_not_retried(provider, scripted_gemini):
    scripted_gemini.script = [error(400, "INVALID_ARGUMENT")]
    with pytest.raises(ModelError) as caught:
        ask(provider)
    assert caught.value.reason == "refused" and len(scripted_gemini.requests) == 1


@pytest.mark.parametrize("reply", [(200, "{not json"), answer([]), (200, {"candidates": []})])
def test_unreadable_answers_are_malformed(provider, scripted_gemini, reply):
    scripted_gemini.script = [reply]
    with pytest.raises(ModelError) as caught:
        ask(provider)
    assert caught.value.reason == "malformed" and len(scripted_gemini.requests) == 1


def test_safety_block_is_refused(provider, scripted_gemini):
    scripted_gemini.script = [{"candidates": [{"finishReason": "SAFETY"}]}]
    with pytest.raises(ModelError) as caught:
        ask(provider)
    assert caught.value.reason == "refused"


def test_hanging_server_times_out_within_the_bound(provider, scripted_gemini):
    scripted_gemini.script = [("hang", 30)]
    start = time.monotonic()
    with pytest.raises(ModelError) as caught:
        ask(provider, timeout=1.0)
    assert caught.value.reason == "timeout"
    assert time.monotonic() - start < 1.0 + 1.0 + 1.5  # the bound, the grace, and slack for a loaded machine


def test_key_never_reaches_errors_logs_or_raw(provider, scripted_gemini, caplog):
    caplog.set_level(logging.DEBUG)
    scripted_gemini.script = [error(429, "RESOURCE_EXHAUSTED"), error(429, "RESOURCE_EXHAUSTED"),
                              error(429, "RESOURCE_EXHAUSTED"), answer([{"text": f"key {KEY}"}])]
    with pytest.raises(ModelError) as caught:
        ask(provider)
    assert caught.value.reason == "rate_limited"
    assert KEY not in str(caught.value) and KEY not in json.dumps(caught.value.to_dict(), default=str)
    chained, exc = [], caught.value
    while exc is not None:
        chained.append(exc)
        exc = exc.__cause__ or exc.__context__
    assert all(KEY not in str(e) and KEY not in repr(e) for e in chained)
    turn = ask(provider)
    assert KEY not in json.dumps(turn.raw) and "***" in json.dumps(turn.raw)
    assert KEY not in repr(provider)
    assert caplog.records and all(KEY not in r.getMessage() for r in caplog.records)


def test_from_env(scripted_gemini):
    assert GeminiProvider.from_env({}) is None
    env = {"GEMINI_API_KEY": KEY, "ENGINE_AGENT_BASE_URL": scripted_gemini.url, "ENGINE_AGENT_MODEL": "gemini-x"}
    p = GeminiProvider.from_env(env)
    try:
        assert p.model == "gemini-x" and p.base_url == scripted_gemini.url
        ask(p)
        assert scripted_gemini.requests[-1][0].endswith("/models/gemini-x:generateContent")
        assert GeminiProvider.from_env(env, model="gemini-y").model == "gemini-y"
    finally:
        p.close()
    with pytest.raises(ModelError) as caught:
        GeminiProvider("")
    assert caught.value.reason == "not_configured"


# --- replay ------------------------------------------------------------------------------------------------------


def test_replay_plays_in_order_then_is_exhausted(tmp_path):
    path = tmp_path / "turns.jsonl"
    path.write_text(
        json.dumps({"text": None, "calls": [{"name": "tap", "arguments": {"x": 1}, "id": "c1"}],
                    "usage": {"input_tokens": 10, "output_tokens": 2}}) + "\n\n"
        + json.dumps({"error": {"reason": "rate_limited", "message": "busy"}}) + "\n"
        + json.dumps({"text": "done"}) + "\n")
    replay = ReplayProvider(path)
    assert isinstance(replay, Provider) and replay.remaining == 3
    first = replay.generate("s", [], [], timeout=1)
    assert first.calls == (Call("tap", {"x": 1}, "c1"),) and first.usage == Usage(10, 2)
    with pytest.raises(ModelError) as caught:
        replay.generate("s", [], [], timeout=1)
    assert caught.value.reason == "rate_limited" and caught.value.message == "busy"
    assert replay.generate("s", [], [], timeout=1) == ModelTurn("done", (), Usage(0, 0))
    with pytest.raises(ModelError) as caught:
        replay.generate("s", [], [], timeout=1)
    assert caught.value.reason == "exhausted"


@pytest.mark.parametrize("line", [
    "{oops", "[1]", '{"calls": "tap"}', '{"calls": [{"arguments": {}}]}', '{"text": 3}', '{"surprise": 1}',
    '{"usage": {"input_tokens": -1}}', '{"error": {"reason": "sulking"}}',
])
def test_replay_malformed_line_names_the_line(tmp_path, line):
    path = tmp_path / "turns.jsonl"
    path.write_text('{"text": "fine"}\n' + line + "\n")
    replay = ReplayProvider(path)
    replay.generate("s", [], [], timeout=1)
    with pytest.raises(ModelError) as caught:
        replay.generate("s", [], [], timeout=1)
    assert caught.value.reason == "malformed" and f"{path}:2:" in str(caught.value)


def test_replay_missing_file_is_not_configured(tmp_path):
    with pytest.raises(ModelError) as caught:
        ReplayProvider(tmp_path / "none.jsonl")
    assert caught.value.reason == "not_configured"


def test_record_turn_round_trips(tmp_path):
    path = tmp_path / "episode.jsonl"
    turns = [ModelTurn(None, (Call("tap", {"x": 1, "y": 2}, "c1", "c2ln"),), Usage(5, 1), raw={"dropped": True}),
             ModelTurn("all done", (), Usage(7, 3))]
    record_turn(path, turns[0])
    record_turn(path, ModelError("slow down", reason="rate_limited"))
    record_turn(path, turns[1])
    replay = ReplayProvider(path)
    assert replay.generate("s", [], [], timeout=1) == ModelTurn(None, turns[0].calls, Usage(5, 1))
    with pytest.raises(ModelError) as caught:
        replay.generate("s", [], [], timeout=1)
    assert caught.value.reason == "rate_limited" and caught.value.message == "slow down"
    assert replay.generate("s", [], [], timeout=1) == turns[1]
