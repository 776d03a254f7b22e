"""The replay provider: recorded turns played back from JSONL (Gemini itself: test_gemini.py)."""

from __future__ import annotations

import json

import pytest

from engine.agent.models import Call, ModelTurn, Provider, ReplayProvider, Usage, record_turn
from engine.core.errors import ModelError

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
