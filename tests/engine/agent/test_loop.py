"""The agent loop end to end: the real google-genai client (GeminiProvider) against a scripted local
generateContent server, the embedded simulator behind real ADB, and the harness judging by the simulator's truth.

One simulator session serves the module; each test starts from a goto to page_main and reads only its own
episode's transcript lines (filtered by episode id).
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import pytest

from engine.agent.checkpoint import EpisodeState, load_checkpoint
from engine.agent.gemini import GeminiProvider
from engine.agent.loop import Agent, AgentConfig
from engine.agent.memory import EpisodicMemory
from engine.agent.models import Call, ModelTurn, ReplayProvider, Usage
from engine.config.goals import Budget, Goal, free_text_goal
from engine.config.policies import Policy
from engine.core.errors import ModelError
from engine.llm.images import MAX_BYTES
from engine.runtime.session import open_session
from engine.tasks.skills import SkillStore
from tests.gemini_fake import Reply, call, prose
from tests.gemini_fake import error as service_error
from tests.speed import within

KEY = "test-key-LOOP-SECRET-0123456789"
"""Not shaped like a Google key, so only the provider's own redaction can keep it out of the files."""
TINY_MODEL_POLICY = Policy(name="model", attempts=3, timeout=10, wait={"type": "none"}, retry_on=("ModelError",))


# ------------------------------------------------------------------------------------------------ scripted answers


def goto(page: str, **kw) -> dict:
    return call("alas_goto", page=page, **kw)


def final(**kw) -> dict:
    """The model claims the goal is reached (it can name no criteria: only the user's count)."""
    return call("final", **kw)


def error(code: int, status: str) -> Reply:
    return service_error(code, f"echo {KEY}", status=status)  # a service that echoes the key back


# ------------------------------------------------------------------------------------------------ fixtures/helpers


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    s = open_session(transcript_dir=tmp_path_factory.mktemp("agent-loop"))
    yield s
    s.close()


@pytest.fixture
def main(session):
    """The session, on page_main."""
    assert session.tools.call("alas_goto", {"page": "page_main"}).ok
    assert truth(session) == "page_main"
    return session


@pytest.fixture
def gemini(scripted_gemini, no_wait):
    p = GeminiProvider(KEY, base_url=scripted_gemini.url, policy=TINY_MODEL_POLICY, sleep=no_wait)
    yield p
    p.close()


def truth(session) -> str:
    return session.sim.game.truth()["page"]


def free(description: str = "Reach the dorm.", page: str = "page_dorm", **budget) -> Goal:
    """A free-text goal whose criterion the user wrote: `page` shows."""
    return Goal(name="g", description=description, free_text=True, success=[{"page": page}],
                budget=Budget(**{"turns": 4, **budget}))


def model_only(goal: Goal) -> EpisodeState:
    """A fresh episode of `goal` with the deterministic phase already done: the model is asked from turn 1."""
    return EpisodeState(episode=uuid.uuid4().hex[:12], goal=goal.model_dump(mode="json"), deterministic_done=True)


def run(tools, provider, goal: Goal | None = None, **kw):
    """Run `goal` (default: free()) straight to the model, as a free-text goal the engine cannot plan would."""
    goal = goal or free()
    return Agent(tools, provider, **kw).run(goal, state=model_only(goal))


def entries(session, result) -> list[dict]:
    """This episode's transcript lines."""
    return [e for e in session.transcript.entries() if e.get("episode") == result.data["episode"]]


def kinds(lines: list[dict], kind: str) -> list[dict]:
    return [e for e in lines if e["kind"] == kind]


def prompts(server) -> list[str]:
    """The user text of every request the fake server received, in order."""
    return [body["contents"][0]["parts"][0]["text"] for _, _, body in server.requests]


def observed(prompt: str) -> list[str]:
    """The percept lines of a prompt's OBSERVED block, in the order sent."""
    block = prompt.split("OBSERVED (most urgent first):\n", 1)[1]
    return block.split("\n\n", 1)[0].splitlines()


def in_order(lines: list[str], *needles: str) -> bool:
    """Every needle is in some line, each in a later line than the one before."""
    at = -1
    for needle in needles:
        at = next((i for i, line in enumerate(lines) if i > at and needle in line), None)
        if at is None:
            return False
    return True


# ------------------------------------------------------------------------------------------------ 1 happy path


COUNTERS = Goal(name="counters", description="Show the commission counters.", free_text=True,
                success=[{"field": {"name": "commission_running", "op": "matches", "value": r"^\d+\s*/\s*\d+$"}}],
                budget=Budget(turns=4))
"""A goal the deterministic path cannot plan (no page, no task): the user's criterion is a text field's value."""


def test_goto_then_final_is_goal_met_verified_against_the_users_criterion(main, gemini, scripted_gemini):
    scripted_gemini.script = [goto("page_commission", usage=(100, 5)), final(usage=(120, 9))]
    result = Agent(main.tools, gemini).run(COUNTERS)
    assert result.status == "goal_met" and result.ok and result.data["verified"] is True
    assert truth(main) == "page_commission"
    assert result.data["model_calls"] == 2 == len(scripted_gemini.requests)
    assert result.data["tokens"] == 100 + 5 + 120 + 9  # usageMetadata, not the estimate
    assert result.data["turns"] == 2 and result.data["tool_calls"] == 1 and result.data["false_claims"] == 0
    lines = entries(main, result)
    assert in_order([e["kind"] for e in lines], "agent_start", "agent_request", "agent_response", "agent_parse",
                    "agent_call", "agent_percept", "agent_request", "agent_response", "agent_parse",
                    "agent_verify", "agent_stop")
    assert [(c["tool"], c["arguments"], c["ok"]) for c in kinds(lines, "agent_call")] == \
        [("alas_goto", {"page": "page_commission"}, True)]
    last_verify = kinds(lines, "agent_verify")[-1]
    assert last_verify["final"] and last_verify["page"] == "page_commission"
    assert [h["held"] for h in last_verify["held"]] == [True]  # read by OCR on the harness's own frame
    assert kinds(lines, "agent_stop")[0]["result"]["status"] == "goal_met"
    # the goto's result reached the second request; the first saw only the opening look
    first, second = prompts(scripted_gemini)
    assert observed(first) == ["[t0 observation] screen: page=page_main"]
    assert observed(second)[0].startswith("[t1 tool_result] alas_goto verified") and \
        observed(second)[0].endswith("| page=page_commission")
    assert observed(second)[1:] == ["[t0 observation] screen: page=page_main"]
    assert "- [ ] field commission_running matches" in first
    assert "\nSCREEN NOW: page=page_main\n" in first and "\nSCREEN NOW: page=page_commission\n" in second


def test_the_request_forces_one_call_and_carries_the_graph(main, gemini, scripted_gemini):
    scripted_gemini.script = [call("blocked", reasons=["just looking"])]
    run(main.tools, gemini)
    body = scripted_gemini.requests[0][2]
    declared = [d["name"] for d in body["tools"][0]["functionDeclarations"]]
    assert body["toolConfig"]["functionCallingConfig"] == {"mode": "ANY", "allowedFunctionNames": declared}
    assert "final" in declared and "blocked" in declared and "alas_goto" in declared
    final_schema = next(d for d in body["tools"][0]["functionDeclarations"] if d["name"] == "final")
    schema = final_schema.get("parametersJsonSchema", final_schema.get("parameters_json_schema"))
    assert list(schema["properties"]) == ["summary"]  # the model cannot write success criteria
    system = body["systemInstruction"]["parts"][0]["text"]
    graph = main.graph
    width, height = graph.resolution
    assert f"SCREEN: {width}x{height} pixels" in system
    commission = next(p for p in graph.pages if p.name == "page_commission")
    line = next(x for x in system.splitlines() if x.startswith("- page_commission:"))
    assert commission.description.split()[0] in line and "commission_running" in line
    assert all(link.to in line for link in commission.links)
    assert graph.game in system


# ------------------------------------------------------------------------------------------------ 2 service errors


def test_429_then_500_are_retried_and_the_episode_goes_on(main, gemini, scripted_gemini, no_wait):
    scripted_gemini.script = [error(429, "RESOURCE_EXHAUSTED"), error(500, "INTERNAL"), goto("page_dorm"),
                              final()]
    result = run(main.tools, gemini)
    assert result.status == "goal_met" and result.ok and truth(main) == "page_dorm"
    # the goto's observation showed the dorm: the harness looked and the final was never asked for
    assert len(scripted_gemini.requests) == 3 and result.data["model_calls"] == 1
    assert no_wait.waits == [0, 0]  # retried under the (tiny) policy, never really slept
    assert not any("error" in e for e in kinds(entries(main, result), "agent_response"))


def test_persistent_500_stops_with_model_error_and_writes_the_checkpoint(main, gemini, scripted_gemini, tmp_path):
    scripted_gemini.script = [error(500, "INTERNAL")]
    result = Agent(main.tools, gemini).run(free(), state=model_only(free()), folder=tmp_path)
    assert result.status == "model_error" and not result.ok
    assert result.data["model_error"] == "server_error"
    assert len(scripted_gemini.requests) == TINY_MODEL_POLICY.attempts
    assert result.data["checkpoint"] == str(tmp_path / "checkpoint.json")
    state = load_checkpoint(tmp_path)
    assert state.stop_reason == "model_error" and state.spend.model_calls == 1 and not state.verified
    assert kinds(entries(main, result), "agent_response")[0]["error"]["reason"] == "server_error"


# ------------------------------------------------------------------------------------------------ 3-5 unusable answers


def test_malformed_body_becomes_a_parser_error_percept_and_the_episode_goes_on(main, gemini, scripted_gemini):
    scripted_gemini.script = [(200, "{not json"), goto("page_dorm"), final()]
    result = run(main.tools, gemini)
    assert result.status == "goal_met" and result.ok and truth(main) == "page_dorm"
    assert result.data["parser_errors"] == 1 and result.data["turns"] == 2
    second = observed(prompts(scripted_gemini)[1])
    assert second[0].startswith("[t1 parser_error] your last answer was not used: the model's answer was unusable "
                                "(malformed)")
    percepts = kinds(entries(main, result), "agent_percept")
    assert any(p["modality"] == "parser_error" and p["turn"] == 1 for p in percepts)


def test_invented_tool_is_a_parser_error_with_did_you_mean_and_nothing_runs(main, gemini, scripted_gemini):
    scripted_gemini.script = [call("alas_fly", page="page_dorm")]
    result = run(main.tools, gemini, free(turns=2))
    assert result.status == "budget_turns" and not result.ok and truth(main) == "page_main"
    assert result.data["parser_errors"] == 2 and result.data["tool_calls"] == 0
    lines = entries(main, result)
    assert kinds(lines, "agent_call") == []
    parsed = kinds(lines, "agent_parse")[0]["action"]
    assert parsed["kind"] == "error" and "unknown tool 'alas_fly'" in parsed["error"]
    assert "did you mean" in parsed["error"]
    error_line = observed(prompts(scripted_gemini)[1])[0]
    assert error_line.startswith("[t1 parser_error]") and "alas_fly" in error_line and "did you mean" in error_line


@pytest.mark.parametrize("bad, words", [
    (call("alas_goto", page="page_nowhere"), ("arguments.page 'page_nowhere' is not one of the allowed values",)),
    (call("adb_tap", x="ten", y=5), ("arguments.x must be integer, got string",)),
    (call("adb_tap", x=10), ("missing arguments.y",)),
])
def test_bad_arguments_are_parser_errors_and_nothing_runs(main, gemini, scripted_gemini, bad, words):
    scripted_gemini.script = [bad]
    result = run(main.tools, gemini, free(turns=2))
    assert result.status == "budget_turns" and result.data["tool_calls"] == 0 and truth(main) == "page_main"
    lines = entries(main, result)
    assert kinds(lines, "agent_call") == []
    error_line = observed(prompts(scripted_gemini)[1])[0]
    assert error_line.startswith("[t1 parser_error]") and all(w in error_line for w in words)


def test_prose_every_turn_ends_after_the_policys_invalid_answers_in_a_row(main, gemini, scripted_gemini):
    scripted_gemini.script = [prose("I would go to the dorm next, it seems the best idea.")]
    result = run(main.tools, gemini, free(turns=20))
    limit = main.policies.get("agent").invalid_answers
    assert result.status == "invalid_answers" and not result.ok and limit == 3
    assert "3 unusable answers in a row" in result.text and "not a function call" in result.text
    assert len(scripted_gemini.requests) == limit == result.data["turns"] == result.data["parser_errors"]
    assert kinds(entries(main, result), "agent_call") == []
    for later in prompts(scripted_gemini)[1:]:
        assert "parser_error] your last answer was not used: not a function call and not valid JSON" in \
            observed(later)[0]


# ------------------------------------------------------------------------------------------------ 6 anti-repeat


def test_the_same_tap_forever_is_warned_refused_then_stopped(main, gemini, scripted_gemini):
    scripted_gemini.script = [call("adb_tap", x=5, y=5)]
    result = run(main.tools, gemini, free(turns=20))
    assert result.status == "repeat" and not result.ok
    assert len(scripted_gemini.requests) == 8 and result.data["turns"] == 8
    lines = entries(main, result)
    assert len(kinds(lines, "agent_call")) == 4  # turns 1-4 ran; 5-7 were refused; 8 stopped
    assert [c["turn"] for c in kinds(lines, "agent_call")] == [1, 2, 3, 4]
    warnings = [(p["turn"], p["content"]) for p in kinds(lines, "agent_percept") if p["modality"] == "warning"]
    assert [t for t, _ in warnings] == [3, 4, 5, 6, 7]
    assert warnings[0][1].startswith("you have made the same adb_tap call with the same result 3 times")
    assert warnings[2][1].startswith("refused: the same adb_tap call with the same result 5 times")
    # the warning (priority 3) precedes the tap results (priority 1) in the next request
    fourth = observed(prompts(scripted_gemini)[3])
    assert fourth[0].startswith("[t3 warning] you have made the same adb_tap call")
    assert in_order(fourth, "[t3 warning]", "[t3 tool_result] adb_tap")
    sixth = observed(prompts(scripted_gemini)[5])
    assert sixth[0].startswith("[t5 warning] refused:")


# ------------------------------------------------------------------------------------------------ 7 false claims


def test_false_claims_until_the_budget_end_as_false_claim(main, gemini, scripted_gemini):
    scripted_gemini.script = [final()]
    result = run(main.tools, gemini, free(turns=3))
    assert result.status == "false_claim" and not result.ok and result.data["verified"] is False
    assert truth(main) == "page_main" and result.data["false_claims"] == 3
    lines = entries(main, result)
    assert [v["final"] for v in kinds(lines, "agent_verify")] == [False, True, True, True]
    assert all(v["page"] == "page_main" for v in kinds(lines, "agent_verify"))
    assert not any(e["kind"] == "agent_stop" and e["result"]["status"] == "goal_met" for e in lines)
    note = observed(prompts(scripted_gemini)[1])[0]
    assert note.startswith("[t1 harness] your final was checked and does not hold:") and "page_main" in note


def test_final_without_criteria_on_a_declared_goal_is_told_and_the_episode_goes_on(main, gemini, scripted_gemini):
    from engine.agent.checkpoint import EpisodeState

    goal = Goal(name="dorm", description="Reach the dorm.", success=[{"page": "page_dorm"}], budget=Budget(turns=4))
    state = EpisodeState(episode="declared-final", goal=goal.model_dump(mode="json"), deterministic_done=True)
    scripted_gemini.script = [call("final"), goto("page_dorm")]
    result = Agent(main.tools, gemini).run(goal, state=state)  # deterministic phase skipped: the model is asked
    assert result.status == "goal_met" and result.ok and truth(main) == "page_dorm"
    assert result.data["false_claims"] == 1 and result.data["turns"] == 2
    note = observed(prompts(scripted_gemini)[1])[0]
    assert note.startswith("[t1 harness] your final was checked and does not hold")


# ------------------------------------------------------------------------------------------------ 8-9 blocked


def test_model_reports_blocked(main, gemini, scripted_gemini):
    scripted_gemini.script = [call("blocked", reasons=["the dorm is locked", "no key"])]
    result = run(main.tools, gemini)
    assert result.status == "blocked" and not result.ok and result.data["verified"] is False
    assert result.data["reasons"] == ["the dorm is locked", "no key"]
    assert len(scripted_gemini.requests) == 1


def test_declared_blocker_holding_at_start_stops_before_any_model_call(main, gemini, scripted_gemini):
    goal = Goal(name="dorm", description="Reach the dorm.", success=[{"page": "page_dorm"}],
                blockers=[{"page": "page_main", "reason": "the main page means the test blocks"}])
    result = Agent(main.tools, gemini).run(goal)
    assert result.status == "blocked" and not result.ok
    assert result.data["reasons"] == ["the main page means the test blocks"] and result.data["verified_blocker"]
    assert scripted_gemini.requests == [] and result.data["tool_calls"] == 0 and truth(main) == "page_main"


# ------------------------------------------------------------------------------------------------ 10 deterministic


def test_named_goal_is_reached_deterministically_without_the_model(main, gemini, scripted_gemini):
    goal = Goal(name="dorm", description="Reach the dorm.", success=[{"page": "page_dorm"}])
    result = Agent(main.tools, gemini).run(goal)
    assert result.status == "goal_met" and result.ok and truth(main) == "page_dorm"
    assert scripted_gemini.requests == []
    assert result.data["model_calls"] == 0 and result.data["deterministic_calls"] == 1
    assert result.data["calls"][0]["tool"] == "alas_goto" and result.data["calls"][0]["turn"] == 0


def test_the_model_is_asked_when_the_deterministic_path_does_not_reach_the_goal(main, gemini, scripted_gemini):
    goal = Goal(name="dorm_popup", description="Reach the dorm with the confirm popup open.",
                success=[{"page": "page_dorm"}, {"popup": "POPUP_CONFIRM"}], budget=Budget(turns=3))
    scripted_gemini.script = [call("blocked", reasons=["no popup to open"])]
    result = Agent(main.tools, gemini).run(goal)
    assert result.status == "blocked" and result.data["deterministic_calls"] == 1
    assert len(scripted_gemini.requests) == 1 and truth(main) == "page_dorm"
    lines = entries(main, result)
    first_request = next(i for i, e in enumerate(lines) if e["kind"] == "agent_request")
    assert [e["tool"] for e in lines[:first_request] if e["kind"] == "agent_call"] == ["alas_goto"]
    prompt = prompts(scripted_gemini)[0]
    assert "- [x] page page_dorm" in prompt and "- [ ] popup POPUP_CONFIRM" in prompt


# ------------------------------------------------------------------------------------------------ 11 budgets, cancel


def test_tool_budget_stops_before_the_call_that_would_exceed_it(main, gemini, scripted_gemini):
    scripted_gemini.script = [goto("page_reward"), goto("page_main"), goto("page_reward")]
    result = run(main.tools, gemini, free(turns=10, tool_calls=2))
    assert result.status == "budget_tools" and not result.ok
    assert result.data["tool_calls"] == 2 and len(kinds(entries(main, result), "agent_call")) == 2
    assert truth(main) == "page_main" and len(scripted_gemini.requests) == 3


def test_token_budget_stops_the_episode(main, gemini, scripted_gemini):
    scripted_gemini.script = [call("adb_tap", usage=(60, 20), x=5, y=5), call("adb_tap", usage=(60, 20), x=6, y=6)]
    result = run(main.tools, gemini, free(turns=10, tokens=100))
    assert result.status == "budget_tokens" and result.data["tokens"] == 160
    assert len(scripted_gemini.requests) == 2


def test_cancel_set_before_run_stops_with_cancelled(main, gemini, scripted_gemini):
    agent = Agent(main.tools, gemini)
    agent.cancel.set()
    result = agent.run(free())
    assert result.status == "cancelled" and not result.ok
    assert scripted_gemini.requests == [] and result.data["tool_calls"] == 0


# ------------------------------------------------------------------------------------------------ 12 resume


def test_resume_continues_the_checkpointed_episode_and_keeps_counting(main, gemini, scripted_gemini, tmp_path):
    scripted_gemini.script = [goto("page_reward"), goto("page_main")]
    result = Agent(main.tools, gemini).run(free(turns=2), state=model_only(free(turns=2)), folder=tmp_path)
    assert result.status == "budget_turns" and truth(main) == "page_main"
    state = load_checkpoint(tmp_path)
    assert state.stop_reason == "budget_turns" and state.spend.turns == 2 and len(state.calls) == 2
    scripted_gemini.requests.clear()
    scripted_gemini.script = [goto("page_dorm")]
    goal = Goal.model_validate(state.goal)
    resumed = Agent(main.tools, gemini, config=AgentConfig(max_turns=6)).run(goal, state=state, folder=tmp_path)
    assert resumed.status == "goal_met" and resumed.ok and truth(main) == "page_dorm"
    assert resumed.data["episode"] == result.data["episode"]
    assert resumed.data["turns"] == 3 and resumed.data["tool_calls"] == 3 and resumed.data["model_calls"] == 3
    # the working memory came back: the first resumed request sees the last call before the stop
    first = prompts(scripted_gemini)[0]
    assert "[t2 tool_result] alas_goto verified" in first and "\nBUDGET: this is turn 3 of 6;" in first
    starts = kinds(entries(main, resumed), "agent_start")
    assert [s["resumed"] for s in starts] == [False, True]
    assert load_checkpoint(tmp_path).stop_reason == "goal_met"


# ------------------------------------------------------------------------------------------------ 13 skills


def test_verified_free_text_episode_saves_a_skill_that_runs(main, gemini, scripted_gemini, tmp_path):
    store = SkillStore(tmp_path / "skills.yaml")
    scripted_gemini.script = [goto("page_dorm"), final()]
    goal = free_text_goal("Visit the dorm, now!", Budget(turns=4), success=[{"page": "page_dorm"}])
    result = Agent(main.tools, gemini, skills=store).run(goal, state=model_only(goal))
    assert result.status == "goal_met" and result.data["skill"] == "skill.visit_the_dorm_now"
    assert [t.name for t in store.load(main.graph)] == ["skill.visit_the_dorm_now"]
    assert kinds(entries(main, result), "agent_skill")[0]["name"] == "skill.visit_the_dorm_now"
    listed = main.tools.call("alas_tools", {})
    assert "skill.visit_the_dorm_now" in [t["name"] for t in listed.data["tasks"]]
    assert main.tools.call("alas_goto", {"page": "page_main"}).ok
    ran = main.tools.call("alas_run", {"name": "skill.visit_the_dorm_now"})
    assert ran.ok and truth(main) == "page_dorm"


def test_false_claims_save_no_skill(main, gemini, scripted_gemini, tmp_path):
    store = SkillStore(tmp_path / "skills.yaml")
    scripted_gemini.script = [goto("page_reward"), final()]
    result = run(main.tools, gemini, free(turns=2), skills=store)
    assert result.status == "false_claim" and result.data["skill"] is None and not result.ok
    assert not store.path.exists()


def test_a_free_text_goal_without_the_users_criteria_ends_unverified_whatever_the_model_claims(
        main, gemini, scripted_gemini, tmp_path):
    """The issue's lie: the model goes somewhere, says "done", and would have its own criteria believed."""
    store = SkillStore(tmp_path / "skills.yaml")
    scripted_gemini.script = [goto("page_dorm"), final(summary="the resources show here: page page_dorm")]
    result = Agent(main.tools, gemini, skills=store).run(free_text_goal("find the oil balance", Budget(turns=6)))
    assert result.status == "unverified" and not result.ok and result.data["verified"] is False
    assert "no criteria the engine can check" in result.text and result.data["skill"] is None
    assert not store.path.exists() and len(scripted_gemini.requests) == 2
    assert "gave no criteria" in prompts(scripted_gemini)[0]
    assert not any(e["kind"] == "agent_verify" and e["final"] for e in entries(main, result))


# ------------------------------------------------------------------------------------------------ 14 episodic memory


def test_the_next_episode_sees_the_earlier_one(main, gemini, scripted_gemini, tmp_path):
    memory = EpisodicMemory(tmp_path / "ep.jsonl")
    scripted_gemini.script = [goto("page_dorm"), final()]
    first = run(main.tools, gemini, memory=memory)
    assert first.status == "goal_met"
    assert "EARLIER EPISODES" not in prompts(scripted_gemini)[0]
    summary = memory.last(5)
    assert len(summary) == 1 and summary[0].verified and "alas_goto(page_dorm)" in summary[0].lesson
    scripted_gemini.requests.clear()
    scripted_gemini.script = [call("blocked", reasons=["done already"])]
    second = run(main.tools, gemini, free(page="page_reward"), memory=memory)
    assert second.status == "blocked"
    prompt = prompts(scripted_gemini)[0]
    block = prompt.split("EARLIER EPISODES of this game:\n", 1)[1]
    assert block.splitlines()[0] == f"- {summary[0].line()}"
    assert [s.stop_reason for s in memory.last(5)] == ["goal_met", "blocked"]


# ------------------------------------------------------------------------------------------------ 15 replay


def test_an_episode_replays_from_its_own_transcript(main, gemini, scripted_gemini, tmp_path):
    scripted_gemini.script = [goto("page_dorm", usage=(90, 4)), final(usage=(95, 6))]
    recorded = run(main.tools, gemini)
    assert recorded.status == "goal_met"
    lines = entries(main, recorded)
    ledger = tmp_path / "transcript.jsonl"
    ledger.write_text("".join(json.dumps(e) + "\n" for e in lines))
    responses = [e["response"] for e in kinds(lines, "agent_response")]
    replay = ReplayProvider(ledger)
    assert replay.remaining == 1  # the goto's look met the goal: the final was never asked for
    first = replay.generate("s", [], [], timeout=1)
    assert first == ModelTurn(None, (Call("alas_goto", {"page": "page_dorm"}),), Usage(90, 4))
    assert first.to_dict() == responses[0]
    # the whole session ledger replays too: every recorded agent_response (turns and failures) in order
    whole = ReplayProvider(main.transcript.path)
    recorded_all = [e for e in main.transcript.entries() if e["kind"] == "agent_response"]
    assert whole.remaining == len(recorded_all) >= 1
    for entry in recorded_all:
        if "error" in entry:
            with pytest.raises(ModelError) as caught:
                whole.generate("s", [], [], timeout=1)
            assert caught.value.reason == entry["error"]["reason"]
        else:
            assert whole.generate("s", [], [], timeout=1).to_dict() == entry["response"]
    # and the replay plays the same episode again
    assert main.tools.call("alas_goto", {"page": "page_main"}).ok
    again = run(main.tools, ReplayProvider(ledger))
    assert again.status == "goal_met" and truth(main) == "page_dorm"
    assert [(c["tool"], c["arguments"]) for c in again.data["calls"]] == \
        [(c["tool"], c["arguments"]) for c in recorded.data["calls"]]
    assert again.data["tokens"] == recorded.data["tokens"] == 90 + 4


# ------------------------------------------------------------------------------------------------ 16 secrets


def test_the_api_key_reaches_neither_the_transcript_nor_the_checkpoint(main, gemini, scripted_gemini, tmp_path):
    scripted_gemini.script = [error(429, "RESOURCE_EXHAUSTED"), goto("page_reward"), error(500, "INTERNAL")]
    result = Agent(main.tools, gemini).run(free(), state=model_only(free()), folder=tmp_path)
    assert result.status == "model_error" and result.data["model_error"] == "server_error"
    responses = kinds(entries(main, result), "agent_response")
    assert "[redacted]" in responses[-1]["error"]["message"]  # the server echoed the key; it was redacted
    assert KEY not in Path(main.transcript.path).read_text()
    assert KEY not in (tmp_path / "checkpoint.json").read_text()
    assert KEY not in json.dumps(result.to_dict(), default=str)


def test_a_key_from_the_environment_is_redacted_even_when_the_model_echoes_it(main, gemini, scripted_gemini,
                                                                              tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)  # as the CLI configures it
    scripted_gemini.script = [prose(f"my key is {KEY}"), call("alas_fly", note=KEY),
                              call("blocked", reasons=[f"leaking {KEY}"])]
    result = Agent(main.tools, gemini).run(free(), state=model_only(free()), folder=tmp_path)
    assert result.status == "blocked" and result.data["parser_errors"] == 2
    assert any(mark in json.dumps(e) for e in kinds(entries(main, result), "agent_parse")
               for mark in ("[redacted]",))  # the one redactor's mark
    assert KEY not in Path(main.transcript.path).read_text()
    assert KEY not in (tmp_path / "checkpoint.json").read_text()


def test_a_key_given_in_code_is_redacted_even_when_the_model_echoes_it(main, gemini, scripted_gemini, tmp_path,
                                                                       monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    scripted_gemini.script = [prose(f"my key is {KEY}"), call("blocked", reasons=["stuck"])]
    result = Agent(main.tools, gemini).run(free(), state=model_only(free()), folder=tmp_path)
    assert result.status == "blocked"
    assert KEY not in json.dumps(entries(main, result))
    assert KEY not in (tmp_path / "checkpoint.json").read_text()


def test_deterministic_goto_runs_after_a_task_that_left_the_page(main):
    goal = Goal(name="mail_then_main", description="Collect the mail, then stand on the main page.",
                success=[{"task": "mail.collect"}, {"page": "page_main"}])
    result = Agent(main.tools, None).run(goal)  # no model: the deterministic path alone must reach it
    assert [c["tool"] for c in result.data["calls"]] == ["alas_run", "alas_goto"]
    assert result.status == "goal_met" and truth(main) == "page_main"


# ------------------------------------------------------------------------------------------------ unknown screens


def test_an_unknown_screen_reaches_the_model_as_an_image(main, gemini, scripted_gemini):
    game = main.sim.game
    with game._lock:  # the phone shows a screen the graph does not know
        game.unknown, game._unknown_variant = True, game._unknown_variant + 1
    try:
        scripted_gemini.script = [call("blocked", reasons=["cannot tell this screen"])]
        result = run(main.tools, gemini)
        assert result.status == "blocked" and not result.ok
        parts = scripted_gemini.requests[0][2]["contents"][0]["parts"]
        images = [p["inlineData"] for p in parts if "inlineData" in p]
        assert len(images) == 1 and images[0].get("mimeType", images[0].get("mime_type")) == "image/jpeg"
        data = base64.urlsafe_b64decode(images[0]["data"] + "=" * (-len(images[0]["data"]) % 4))
        assert data.startswith(b"\xff\xd8") and len(data) <= MAX_BYTES  # a JPEG, bounded (engine.llm.images)
        assert "matched no page or popup" in parts[0]["text"] and "SCREEN NOW: page=unknown" in parts[0]["text"]
        request = kinds(entries(main, result), "agent_request")[0]
        assert request["image_bytes"] > 0 and images[0]["data"][:64] not in json.dumps(request)  # not in the ledger
    finally:
        with game._lock:
            game.unknown = False


def test_the_screenshot_tool_hands_the_model_the_frame_downscaled_and_bounded(main, gemini, scripted_gemini):
    import cv2
    import numpy as np

    scripted_gemini.script = [call("adb_screenshot"), call("blocked", reasons=["seen enough"])]
    result = run(main.tools, gemini)
    assert result.status == "blocked"
    first, second = (body["contents"][0]["parts"] for _, _, body in scripted_gemini.requests)
    assert not any("inlineData" in p for p in first)
    images = [p["inlineData"] for p in second if "inlineData" in p]
    assert len(images) == 1 and images[0].get("mimeType", images[0].get("mime_type")) == "image/jpeg"
    data = base64.urlsafe_b64decode(images[0]["data"] + "=" * (-len(images[0]["data"]) % 4))
    frame = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    width, height = main.graph.resolution
    assert max(frame.shape[:2]) <= 1024 < max(width, height) and len(data) <= MAX_BYTES
    note = second[0]["text"]
    assert f"{frame.shape[1]}x{frame.shape[0]} pixels (the screen is {width}x{height}" in note
    assert "your adb_screenshot" in note


# ------------------------------------------------------------------------------------------------ sizes


def test_oversized_answers_are_refused_and_counted_and_the_transcript_stays_small(main, gemini, scripted_gemini):
    from tests.gemini_fake import oversized

    before = Path(main.transcript.path).stat().st_size
    scripted_gemini.script = [oversized(5 * 1024 * 1024), oversized(900 * 1024), call("blocked", reasons=["x"])]
    result = run(main.tools, gemini, free(turns=10))
    assert result.status == "blocked" and result.data["parser_errors"] == 2
    lines = entries(main, result)
    refused = kinds(lines, "agent_response")[0]["error"]
    assert refused["reason"] == "oversized" and refused["limit"] == 1024 * 1024
    # the 900 KB answer was under the response bound: its ledger line is cut, and says what was cut
    kept = kinds(lines, "agent_response")[1]
    assert set(kept["cut"]) >= {"raw"} and kept["cut"]["raw"] > 900 * 1024
    assert Path(main.transcript.path).stat().st_size - before < 400 * 1024
    assert len(json.dumps(result.to_dict())) < 20_000


def test_a_trickling_service_ends_the_episode_within_its_wall_budget(main, gemini, scripted_gemini):
    import time

    scripted_gemini.script = [Reply(body=goto("page_reward"), trickle=0.5)]
    start = time.monotonic()
    result = run(main.tools, gemini, free(seconds=2.0, turns=10))
    assert result.status == "budget_time" and not result.ok
    # an upper bound only: the budget plus slack
    within(time.monotonic() - start, 2.0 + 2.0, "episode against a trickling service, wall (s)")
    assert len(scripted_gemini.requests) == 1
