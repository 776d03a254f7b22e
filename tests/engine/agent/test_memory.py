"""Percepts, working memory, episodic memory and the anti-repeat guard of the agent runtime."""

from __future__ import annotations

import json
import logging

import pytest

from engine.agent.memory import (
    DEFAULT_TAIL_BYTES,
    PRIORITY_FAILURE,
    PRIORITY_SUCCESS,
    PRIORITY_URGENT,
    EpisodeSummary,
    EpisodicMemory,
    Percept,
    WorkingMemory,
    estimate_tokens,
    harness_note,
    observation_percept,
    parser_error,
    percept_from_result,
    warning,
)
from engine.agent.repeat import REFUSED, RepeatGuard, canonical_arguments, entry_key
from engine.config.policies import RepeatLimits, load_policies
from engine.core.results import Observation, make_result

SECRET = "AIzaSyA1234567890abcdefghijklmnopqrstuv"


def _result(status: str, ok: bool = False, page: str | None = "main", popups: tuple[str, ...] = ()):
    obs = Observation(page=page, popups=popups)
    return make_result("alas_goto", ok=ok, status=status, text=f"went {status}", target="mail", observation=obs)


# ----------------------------------------------------------------------------------------------- percepts


@pytest.mark.parametrize(
    ("status", "ok", "priority"),
    [("verified", True, PRIORITY_SUCCESS), ("not_verified", False, PRIORITY_FAILURE),
     ("unknown_screen", False, PRIORITY_FAILURE), ("timeout", False, PRIORITY_URGENT),
     ("device_offline", False, PRIORITY_URGENT), ("connection_lost", False, PRIORITY_URGENT),
     ("device_error", False, PRIORITY_URGENT)],
)
def test_result_priority_ranks_device_faults_and_timeouts_highest(status, ok, priority):
    assert percept_from_result(_result(status, ok), turn=1).priority == priority


def test_result_percept_names_the_post_tool_page_and_popups():
    percept = percept_from_result(_result("popup_blocking", page="mail", popups=("announce", "reward")), turn=4,
                                  arguments={"page": "mail"})
    assert percept.modality == "tool_result" and percept.turn == 4
    assert "page=mail" in percept.content and "popups=announce,reward" in percept.content
    assert "next: dismiss_popup_then_retry" in percept.content
    assert percept.data["popups"] == ["announce", "reward"] and percept.data["arguments"] == {"page": "mail"}
    # A separate post-tool observation wins over the one inside the result.
    later = percept_from_result(_result("verified", True), 5, observation=Observation(page="dock"))
    assert "page=dock" in later.content and "\n" not in later.content


def test_percepts_are_one_short_line_with_secrets_redacted(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "sk-literal-secret-value")
    long_text = "bad json\n" * 200 + SECRET + " sk-literal-secret-value"
    for percept in (parser_error(long_text, 2, raw=SECRET), harness_note("key " + SECRET, 2),
                    warning("x sk-literal-secret-value", 2)):
        assert "\n" not in percept.content and len(percept.content) <= 300
        assert SECRET not in json.dumps(percept.to_dict()) and "sk-literal-secret-value" not in percept.content
    assert parser_error("unknown tool alas_fly", 3).modality == "parser_error"
    result = make_result("alas_tap", ok=True, status="ok", text="tapped " + SECRET, extra={"api_key": "hunter2"})
    percept = percept_from_result(result, 1, arguments={"token": "abc"})
    assert SECRET not in percept.content and "abc" not in json.dumps(percept.data)


def test_observation_percept():
    percept = observation_percept(Observation(page=None, popups=("login_bonus",), loading=True), 0)
    assert percept.modality == "observation" and "page=unknown" in percept.content
    assert "login_bonus" in percept.content and "(loading)" in percept.content


# ----------------------------------------------------------------------------------------------- working memory


def _note(text: str, priority: int, turn: int) -> Percept:
    return harness_note(text, turn, priority)


def test_working_memory_orders_by_priority_then_newest():
    memory = WorkingMemory()
    memory.extend([_note("a", 1, 1), _note("b", 2, 2), _note("c", 3, 3), _note("d", 2, 4), _note("e", 1, 5)])
    assert [p.content for p in memory.for_prompt()] == ["c", "d", "b", "e", "a"]
    assert [p.content for p in memory.for_prompt(limit=2)] == ["c", "d"]


def test_working_memory_forgets_the_oldest_beyond_capacity():
    memory = WorkingMemory(capacity=3)
    memory.extend(_note(str(i), 3 if i == 0 else 1, i) for i in range(5))
    assert len(memory) == 3 and [p.content for p in memory.percepts()] == ["2", "3", "4"]
    with pytest.raises(ValueError):
        WorkingMemory(capacity=0)


def test_working_memory_is_bounded_in_characters():
    memory = WorkingMemory(capacity=50)
    memory.extend(_note("x" * 250, 2, i) for i in range(40))
    memory.add(_note("short", 1, 41))
    for max_chars in (0, 10, 100, 300, 1000, 5000):
        text = memory.render(limit=50, max_chars=max_chars)
        assert len(text) <= max_chars
    # Urgent but too long percepts are skipped; a shorter, less urgent one still fits.
    assert memory.render(limit=50, max_chars=100) == "[t41 harness] short"
    assert len(memory.for_prompt(limit=50, max_chars=10**6)) == 41
    assert len(memory.render(limit=3, max_chars=10**6).splitlines()) == 3


def test_estimate_tokens():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 4000) == 1000


# ----------------------------------------------------------------------------------------------- episodic memory


def _summary(i: int, **kw) -> EpisodeSummary:
    base = {"goal": f"goal{i}", "stop_reason": "goal_met", "verified": True, "turns": i, "tool_calls": i + 1,
            "lesson": f"lesson {i}", "ts": 1000.0 + i}
    base.update(kw)
    return EpisodeSummary(**base)


def test_episodic_memory_round_trip(tmp_path):
    memory = EpisodicMemory(tmp_path / "graphs" / "azurlane.jsonl")
    assert memory.last(5) == []
    for i in range(6):
        memory.append(_summary(i))
    assert [s.goal for s in memory.last(3)] == ["goal3", "goal4", "goal5"]
    assert memory.last(3)[-1] == _summary(5)
    assert memory.last(0) == [] and len(memory.last(100)) == 6
    rendered = memory.render(2)
    assert rendered.splitlines() == ["- goal4: goal_met (verified) in 4 turns, 5 tools; lesson: lesson 4",
                                     "- goal5: goal_met (verified) in 5 turns, 6 tools; lesson: lesson 5"]
    assert memory.render(5, max_chars=70).splitlines() == [rendered.splitlines()[-1]]


def test_episodic_memory_skips_a_torn_line_and_garbage(tmp_path, caplog):
    path = tmp_path / "m.jsonl"
    memory = EpisodicMemory(path)
    memory.append(_summary(1))
    with open(path, "ab") as f:
        f.write(b"not json at all\n\xff\xfe binary\n[1, 2]\n")
        f.write(b'{"goal": "g", "stop_reason": "x", "verified": "yes", "turns": 1, "tool_calls": 1}\n')
        f.write(json.dumps(_summary(2).to_dict()).encode() + b"\n")
        f.write(b'{"goal": "torn", "stop_reas')  # a writer killed mid-line
    with caplog.at_level(logging.WARNING, logger="engine.agent.memory"):
        assert [s.goal for s in memory.last(10)] == ["goal1", "goal2"]
    assert "skipped 5 unreadable" in caplog.text
    # The next append ends the torn line first instead of being swallowed by it.
    memory.append(_summary(3))
    assert [s.goal for s in memory.last(10)] == ["goal1", "goal2", "goal3"]


def test_episodic_memory_reads_only_the_tail_of_a_huge_file(tmp_path):
    path = tmp_path / "huge.jsonl"
    head = (json.dumps(_summary(0, goal="HEAD").to_dict()) + "\n").encode()
    filler = (json.dumps(_summary(0, goal="filler").to_dict()) + "\n").encode()
    with open(path, "wb") as f:
        f.write(head)
        f.write(filler * (50 * 1024 * 1024 // len(filler)))
    assert path.stat().st_size > 50_000_000
    memory = EpisodicMemory(path)
    memory.append(_summary(7, goal="newest"))
    found = memory.last(10**6)
    assert found[-1].goal == "newest"
    assert all(s.goal != "HEAD" for s in found)
    assert len(found) <= DEFAULT_TAIL_BYTES // len(filler) + 1


def test_episodic_memory_redacts_secrets_and_keeps_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "literal-gemini-key-1234")
    path = tmp_path / "m.jsonl"
    memory = EpisodicMemory(path)
    written = memory.append(_summary(1, lesson="use key literal-gemini-key-1234\nthen " + SECRET + " x" * 300))
    text = path.read_text()
    assert "literal-gemini-key-1234" not in text and SECRET not in text and "[redacted]" in text
    assert text.count("\n") == 1 and len(written.lesson) <= 200
    assert memory.last(1) == [written]


def test_episode_summary_rejects_wrong_shapes():
    for raw in ([], {"goal": "g"}, {**_summary(1).to_dict(), "turns": "3"}, {**_summary(1).to_dict(), "turns": True}):
        with pytest.raises(ValueError):
            EpisodeSummary.from_dict(raw)


# ----------------------------------------------------------------------------------------------- anti-repeat


def shipped_limits() -> RepeatLimits:
    limits = load_policies().get("agent").repeat
    assert limits is not None
    return limits


def test_shipped_policy_warns_at_3_refuses_at_5_stops_at_8():
    guard = RepeatGuard(shipped_limits())
    verdicts = []
    for _ in range(8):
        verdict = guard.check("alas_tap", {"x": 10, "y": 20})
        verdicts.append(verdict)
        # Executed calls are recorded with their status; refused ones are not executed and recorded as refused.
        guard.record("alas_tap", {"y": 20, "x": 10}, REFUSED if verdict == "refuse" else "ok")
    assert verdicts == ["ok", "ok", "warn", "warn", "refuse", "refuse", "refuse", "stop"]


def test_check_counts_nothing_and_record_counts_one():
    guard = RepeatGuard(shipped_limits())
    for _ in range(10):
        assert guard.check("alas_back", {}) == "ok"
    assert len(guard) == 0
    guard.record("alas_back", {}, "ok")
    assert len(guard) == 1 and guard.repeats("alas_back", {}) == 1


def test_a_different_status_or_argument_is_a_different_entry():
    guard = RepeatGuard(shipped_limits())
    for status in ("ok", "timeout", "ok", "timeout", "ok", "timeout"):
        guard.record("alas_goto", {"page": "mail"}, status)
    assert guard.repeats("alas_goto", {"page": "mail"}, "ok") == 3
    assert guard.check("alas_goto", {"page": "mail"}, "ok") == "warn"
    assert guard.check("alas_goto", {"page": "dock"}) == "ok"
    assert guard.check("alas_state", {"page": "mail"}, "ok") == "ok"
    # Without a status the call is assumed to end as it did last time (timeout).
    assert guard.repeats("alas_goto", {"page": "mail"}) == 3


def test_the_window_forgets_old_entries():
    guard = RepeatGuard(shipped_limits())
    for _ in range(4):
        guard.record("alas_tap", {"x": 1}, "ok")
    assert guard.check("alas_tap", {"x": 1}) == "refuse"
    for i in range(8):
        guard.record("alas_wait", {"seconds": i}, "ok")
    assert guard.check("alas_tap", {"x": 1}) == "ok" and len(guard) == 8


def test_custom_limits_and_canonical_arguments():
    guard = RepeatGuard(RepeatLimits(window=4, warn=2, refuse=3, stop=4))
    verdicts = []
    for _ in range(4):
        verdicts.append(guard.check("t", {"a": [1, 2]}))
        guard.record("t", {"a": [1, 2]}, "ok")
    assert verdicts == ["ok", "warn", "refuse", "stop"]
    assert canonical_arguments({"b": 1, "a": 2}) == '{"a":2,"b":1}' == canonical_arguments({"a": 2, "b": 1})
    assert entry_key("t", {"b": 1, "a": 2}, "ok") == entry_key("t", {"a": 2, "b": 1}, "ok")
    assert entry_key("t", {"a": 1}, "ok") != entry_key("t", {"a": 1}, "timeout")
    assert "not executed" in guard.message("t", "refuse", 5) and guard.message("t", "ok") == ""
