"""GeminiProvider (and engine.llm's client under it) against a local server that answers as the Gemini API does:
the real google-genai client, every documented error code, Retry-After, a trickled body, oversized and malformed
answers, and the request's forced function calling."""

from __future__ import annotations

import json
import logging
import time

import pytest

from engine.agent.gemini import GeminiProvider
from engine.agent.models import Call, CallResult, Message, ModelTurn, Provider, ToolDecl, Usage
from engine.config.policies import Policy, load_policies
from engine.core.errors import ModelError
from engine.llm.errors import CODES
from tests.gemini_fake import Reply, answer, call, error, oversized, prose
from tests.speed import within

KEY = "AIza-test-SECRET-0123456789abcdefghijkl"
TAP = ToolDecl("tap", "Tap a point of the screen.",
               {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                "required": ["x", "y"]})
STATE = ToolDecl("state", "Look at the screen.", {"type": "object", "properties": {}})
FIRST = (Message("user", "Collect the mail."),)


@pytest.fixture
def provider(scripted_gemini, no_wait):
    p = GeminiProvider(KEY, base_url=scripted_gemini.url, sleep=no_wait)
    yield p
    p.close()


def ask(p: GeminiProvider, messages=FIRST, timeout: float = 10.0) -> ModelTurn:
    return p.generate("You drive a game.", list(messages), [TAP, STATE], timeout=timeout)


def failure(p: GeminiProvider, **kw) -> ModelError:
    with pytest.raises(ModelError) as caught:
        ask(p, **kw)
    return caught.value


# ------------------------------------------------------------------------------------------------ the request


def test_the_request_forces_a_call_to_a_declared_tool_declared_by_json_schema(provider, scripted_gemini):
    scripted_gemini.script = [call("tap", x=5, y=7)]
    assert ask(provider).calls == (Call("tap", {"x": 5, "y": 7}),)
    path, _headers, body = scripted_gemini.requests[-1]
    assert path.endswith(f"/models/{load_policies().get('model').model}:generateContent")
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["tap", "state"]}}
    declared = body["tools"][0]["functionDeclarations"][0]
    assert declared["name"] == "tap"
    assert declared.get("parametersJsonSchema", declared.get("parameters_json_schema")) == TAP.parameters
    assert body["systemInstruction"]["parts"][0]["text"] == "You drive a game."
    assert "automaticFunctionCalling" not in json.dumps(body)  # a client-side switch: never sent, never run


def test_history_calls_results_and_thought_signatures_go_back_as_received(provider, scripted_gemini):
    scripted_gemini.script = [answer([{"functionCall": {"name": "tap", "args": {"x": 5, "y": 7}, "id": "c1"},
                                       "thoughtSignature": "c2lnbmVk"}])]
    turn = ask(provider)
    assert turn.calls == (Call("tap", {"x": 5, "y": 7}, "c1", "c2lnbmVk"),) and isinstance(provider, Provider)
    ask(provider, [*FIRST, Message("model", calls=turn.calls),
                   Message("tool", results=(CallResult("tap", {"ok": True}, "c1"),))])
    contents = scripted_gemini.requests[-1][2]["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    sent = contents[1]["parts"][0]
    assert sent.get("thoughtSignature", sent.get("thought_signature")) == "c2lnbmVk"
    assert contents[2]["parts"][0]["functionResponse"] == {"id": "c1", "name": "tap", "response": {"ok": True}}


def test_text_answer_and_usage(provider, scripted_gemini):
    scripted_gemini.script = [answer([{"text": "The mail "}, {"text": "is collected."}], usage=(120, 8))]
    turn = ask(provider)
    assert turn.text == "The mail is collected." and turn.calls == () and turn.usage == Usage(120, 8)
    scripted_gemini.script = [answer([{"text": "hi"}], usage=None)]
    assert ask(provider).usage == Usage(0, 0)


# ------------------------------------------------------------------------------------------------ error codes


@pytest.mark.parametrize("code, reason", [(400, "bad_request"), (401, "unauthenticated"),
                                          (403, "permission_denied"), (404, "not_found")])
def test_errors_no_retry_can_fix_stop_at_once_with_the_services_words_and_a_hint(provider, scripted_gemini, no_wait,
                                                                              code, reason):
    said = "models/gemini-9-flash is not found for API version v1beta, or is no longer available"
    scripted_gemini.script = [error(code, said)]
    caught = failure(provider)
    assert caught.reason == reason and len(scripted_gemini.requests) == 1 and no_wait.waits == []
    assert caught.context["code"] == code and caught.context["service_status"] == CODES[code].status
    assert said in caught.message and caught.context["service_message"] == said
    assert caught.context["hint"] == CODES[code].hint
    if code == 404:
        assert "ENGINE_AGENT_MODEL" in caught.context["hint"]


def test_a_bad_key_is_told_as_a_key_problem(provider, scripted_gemini):
    """Gemini answers a bad key with 400 INVALID_ARGUMENT and the ErrorInfo reason API_KEY_INVALID."""
    scripted_gemini.script = [error(400, "API key not valid. Please pass a valid API key.", details=[
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
         "domain": "googleapis.com"}])]
    caught = failure(provider)
    assert caught.reason == "unauthenticated" and "GEMINI_API_KEY" in caught.context["hint"]


@pytest.mark.parametrize("code, reason", [(500, "server_error"), (503, "unavailable"), (504, "server_timeout")])
def test_server_errors_are_retried_with_the_policy_backoff(provider, scripted_gemini, no_wait, code, reason):
    attempts = load_policies().get("model").attempts
    scripted_gemini.script = [error(code)]
    assert failure(provider).reason == reason
    assert len(scripted_gemini.requests) == attempts and len(no_wait.waits) == attempts - 1
    scripted_gemini.requests.clear()
    scripted_gemini.script = [error(code), call("tap", x=1, y=2)]
    assert ask(provider).calls[0].name == "tap" and len(scripted_gemini.requests) == 2


def test_429_waits_as_long_as_retry_after_asks(provider, scripted_gemini, no_wait):
    scripted_gemini.script = [error(429, "quota", retry_after=3), call("tap", x=1, y=2)]
    assert ask(provider).calls[0].name == "tap"
    assert len(scripted_gemini.requests) == 2 and no_wait.waits == [3.0]  # longer than the policy's 1-1.5 s
    no_wait.waits.clear()
    scripted_gemini.script = [error(429, "quota"), call("tap", x=1, y=2)]  # no Retry-After: the policy's backoff
    ask(provider)
    assert len(no_wait.waits) == 1 and 1.0 <= no_wait.waits[0] <= 1.5  # policies/default.yaml: model, initial 1


def test_429_asking_for_more_time_than_is_left_gives_up_at_once(provider, scripted_gemini, no_wait):
    scripted_gemini.script = [error(429, "quota", retry_after=30)]
    caught = failure(provider, timeout=5.0)
    assert caught.reason == "rate_limited" and len(scripted_gemini.requests) == 1 and no_wait.waits == []
    assert "asked to wait 30 s" in caught.message and caught.context["retry_after"] == 30.0


# ------------------------------------------------------------------------------------------------ time and size


def test_a_trickled_answer_ends_at_the_deadline_and_the_connection_is_closed(provider, scripted_gemini):
    scripted_gemini.script = [Reply(body=call("tap", x=1, y=2), trickle=0.5)]  # one byte every half second
    start = time.monotonic()
    caught = failure(provider, timeout=1.5)
    took = time.monotonic() - start
    assert caught.reason == "timeout"
    within(took, 1.5 + 1.5, "trickled answer ended, wall (s)")  # an upper bound only: the deadline plus slack
    deadline = start + 1.5
    for _ in range(60):  # the server notices the closed socket at its next byte (bounded wait, not a sleep assert)
        if scripted_gemini.disconnects:
            break
        time.sleep(0.05)
    assert scripted_gemini.disconnects
    within(scripted_gemini.disconnects[0] - deadline, 1.5, "server saw the closed connection, past the deadline (s)")


def test_a_hanging_server_times_out_within_the_bound(provider, scripted_gemini):
    scripted_gemini.script = [Reply(body=call("tap", x=1, y=2), hang=30)]
    start = time.monotonic()
    assert failure(provider, timeout=1.0).reason == "timeout"
    within(time.monotonic() - start, 1.0 + 1.5, "hanging server timed out, wall (s)")


@pytest.mark.parametrize("declare_length", [True, False])
def test_an_oversized_answer_is_refused(provider, scripted_gemini, declare_length):
    scripted_gemini.script = [oversized(5 * 1024 * 1024, declare_length=declare_length)]
    caught = failure(provider)
    assert caught.reason == "oversized" and len(scripted_gemini.requests) == 1
    assert caught.context["limit"] == 1024 * 1024 and caught.context["size"] > caught.context["limit"]


@pytest.mark.parametrize("reply", [(200, "{not json"), answer([]), (200, {"candidates": []}),
                                   answer([{"functionCall": {"name": "tap", "args": "{x: 1"}}]),
                                   answer([{"functionCall": {"args": {"x": 1}}}])])
def test_unreadable_answers_are_malformed(provider, scripted_gemini, reply):
    scripted_gemini.script = [reply]
    assert failure(provider).reason == "malformed" and len(scripted_gemini.requests) == 1


def test_safety_block_is_refused(provider, scripted_gemini):
    scripted_gemini.script = [{"candidates": [{"finishReason": "SAFETY"}]}]
    assert failure(provider).reason == "refused"


# ------------------------------------------------------------------------------------------------ secrets, config


def test_the_key_never_reaches_errors_logs_or_raw(provider, scripted_gemini, caplog):
    caplog.set_level(logging.DEBUG)
    scripted_gemini.script = [error(429, f"echo {KEY}")] * 3 + [prose(f"key {KEY}")]
    caught = failure(provider)
    assert caught.reason == "rate_limited"
    assert KEY not in str(caught) and KEY not in json.dumps(caught.to_dict(), default=str)
    chained, exc = [], caught
    while exc is not None:
        chained.append(exc)
        exc = exc.__cause__ or exc.__context__
    assert all(KEY not in str(e) and KEY not in repr(e) for e in chained)
    turn = ask(provider)
    assert KEY not in json.dumps(turn.raw) and "[redacted]" in json.dumps(turn.raw) and KEY not in turn.text
    assert KEY not in repr(provider)
    assert caplog.records and all(KEY not in r.getMessage() for r in caplog.records)


def test_the_model_comes_from_one_place(scripted_gemini, tmp_path):
    shipped = load_policies().get("model").model
    assert shipped and not shipped.startswith("gemini-2.")  # 2.5 Flash is retired on 2026-12-01
    assert GeminiProvider.from_env({}) is None
    env = {"GEMINI_API_KEY": KEY, "ENGINE_AGENT_BASE_URL": scripted_gemini.url}
    providers = [GeminiProvider.from_env(env), GeminiProvider.from_env({**env, "ENGINE_AGENT_MODEL": "gemini-x"}),
                 GeminiProvider.from_env({**env, "ENGINE_AGENT_MODEL": "gemini-x"}, model="gemini-y")]
    policy_file = tmp_path / "policies.yaml"
    policy_file.write_text("policies:\n  model: {attempts: 1, timeout: 5, model: gemini-from-policy}\n")
    providers.append(GeminiProvider.from_env(env, policies=load_policies(policy_file)))
    try:
        assert [p.model for p in providers] == [shipped, "gemini-x", "gemini-y", "gemini-from-policy"]
        ask(providers[1])
        assert scripted_gemini.requests[-1][0].endswith("/models/gemini-x:generateContent")
    finally:
        for p in providers:
            p.close()
    with pytest.raises(ModelError) as caught:
        GeminiProvider("")
    assert caught.value.reason == "not_configured"


def test_one_try_policy_is_honoured(scripted_gemini, no_wait):
    once = Policy(name="model", attempts=1, timeout=5, wait={"type": "none"}, retry_on=("ModelError",))
    p = GeminiProvider(KEY, base_url=scripted_gemini.url, policy=once, sleep=no_wait)
    try:
        scripted_gemini.script = [error(503)]
        assert failure(p).reason == "unavailable" and len(scripted_gemini.requests) == 1
    finally:
        p.close()
