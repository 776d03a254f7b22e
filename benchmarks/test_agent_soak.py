"""The agent soak and the agent loop benchmark: goal episodes under chaos with a scripted noisy model.

The soak runs AGENT_SOAK_EPISODES goal episodes (default 20, the CI form; 100 is the full soak) on the simulator
under the navigation soak's chaos scenario (benchmarks/test_soak.py). The model is an in-process Provider (no
HTTP) with a seeded RNG: each turn it takes the right action 80% of the time (alas_goto to the target page while
the last screen it was told about is not that page, else ``final``), a random valid action 15% (a random
alas_goto, alas_state, or adb_tap inside the resolution) and garbage 5% (prose, an invented tool, bad arguments).
Episodes alternate at random between named goals (page + no_popup: the deterministic path runs first) and
free-text goals ("reach P", with the user's criteria page P + no_popup, started past the deterministic phase so
only the model plans; its final is a claim the harness checks against those criteria).

Targets: at least 95% of goals met, zero false successes (ok while the simulator's true page differs from the
target or a blocking popup shows, read right after the episode), every episode inside its budget.

Time is real, not virtual. The agent keeps its own budget with time.monotonic (not injectable), and the harness's
look waits out loading screens with a real-time ``stop.wait`` against a deadline on the Tools' clock: on a virtual
clock that only moves when someone sleeps, a look at a loading screen would never see it end (see the report). So
the embedded simulator runs in real time through ``open_session`` (loading screens cost real seconds) and the CI
form stays short.

The loop benchmark measures the loop's own time per turn (Agent.turn_overheads_ms: model latency and tool time
excluded) over 30 turns of cheap tools and parser errors, and the prompt size per turn as the provider received it.
"""

from __future__ import annotations

import json
import os
import random
import re
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest

from benchmarks.test_soak import chaos, strongly_connected_targets
from engine.agent.checkpoint import EpisodeState
from engine.agent.loop import Agent
from engine.agent.memory import estimate_tokens
from engine.agent.models import Call, Message, ModelTurn, ToolDecl, Usage
from engine.agent.prompt import MAX_GRAPH_CHARS
from engine.config.goals import Budget, Criterion, Goal
from engine.runtime.session import open_session

EPISODES = int(os.environ.get("AGENT_SOAK_EPISODES", "20"))
BUDGET = Budget(turns=12, tool_calls=24, seconds=120, tokens=60000)
HUB = "page_main"

_PERCEPT = re.compile(r"^\[t(\d+) (\w+)\] (.*)$")
_SCREEN = re.compile(r"\bpage=(\S+)(?: popups=(\S+))?")


class NoisyModel:
    """A scripted model: right 80% of turns, a random valid action 15%, garbage 5% (seeded).

    ``begin(target, free_text)`` before each episode; ``received`` keeps (system, user text) of every request.
    """

    name = "noisy"

    def __init__(self, rng: random.Random, resolution: tuple[int, int], p_right: float = 0.80,
                 p_random: float = 0.15) -> None:
        self.rng, self.resolution = rng, resolution
        self.p_right, self.p_random = p_right, p_random
        self.target = ""
        self.received: list[tuple[str, str]] = []
        self.kinds: Counter[str] = Counter()

    def begin(self, target: str) -> None:
        self.target = target

    def generate(self, system: str, messages: Sequence[Message], tools: Sequence[ToolDecl], *,
                 timeout: float) -> ModelTurn:
        user = messages[-1].text or ""
        self.received.append((system, user))
        roll = self.rng.random()
        if roll < self.p_right:
            kind, turn = "right", self._right(user)
        elif roll < self.p_right + self.p_random:
            kind, turn = "random", self._random(tools)
        else:
            kind, turn = "garbage", self._garbage()
        self.kinds[kind] += 1
        answer = turn.text or json.dumps([c.to_dict() for c in turn.calls])
        usage = Usage(input_tokens=len(system + user) // 4, output_tokens=max(1, len(answer) // 4))
        return ModelTurn(turn.text, turn.calls, usage)

    def _right(self, user: str) -> ModelTurn:
        page, popups = where(user)
        if page == self.target and not popups:
            return ModelTurn(None, (Call("final", {"summary": f"on {page}"}),))
        return ModelTurn(None, (Call("alas_goto", {"page": self.target}),))

    def _random(self, tools: Sequence[ToolDecl]) -> ModelTurn:
        pages = next(t for t in tools if t.name == "alas_goto").parameters["properties"]["page"]["enum"]
        choice = self.rng.randrange(3)
        if choice == 0:
            return ModelTurn(None, (Call("alas_goto", {"page": self.rng.choice(pages)}),))
        if choice == 1:
            return ModelTurn(None, (Call("alas_state", {}),))
        x, y = self.rng.randrange(self.resolution[0]), self.rng.randrange(self.resolution[1])
        return ModelTurn(None, (Call("adb_tap", {"x": x, "y": y}),))

    def _garbage(self) -> ModelTurn:
        choice = self.rng.randrange(4)
        if choice == 0:
            return ModelTurn("I think the dock is the place to be; let me look around first.")
        if choice == 1:
            return ModelTurn(None, (Call("teleport", {"page": self.target}),))
        if choice == 2:
            return ModelTurn(None, (Call("alas_goto", {"page": 42}),))
        return ModelTurn('{"name": "adb_tap", "arguments": {"x": "middle"}')


def where(user: str) -> tuple[str | None, list[str]]:
    """The screen the prompt's newest percept reports: (page, popups); (None, []) after a refuted final or when
    nothing says."""
    newest, page, popups, refuted = -1, None, [], False
    for line in user.splitlines():
        m = _PERCEPT.match(line)
        if not m:
            continue
        turn, modality, content = int(m.group(1)), m.group(2), m.group(3)
        if modality == "harness" and turn >= newest:
            newest, refuted = turn, True
            continue
        screen = _SCREEN.search(content)
        if screen and turn > newest or (screen and turn == newest and not refuted and page is None):
            newest, refuted = turn, False
            page = None if screen.group(1) == "unknown" else screen.group(1)
            popups = screen.group(2).split(",") if screen.group(2) else []
    return (None, []) if refuted else (page, popups)


def _goal(target: str, free_text: bool) -> Goal:
    success = [Criterion(page=target), Criterion(no_popup=True)]
    if free_text:
        return Goal(name="free_text", description=f"reach {target}", free_text=True, success=success, budget=BUDGET)
    return Goal(name=f"reach.{target}", description=f"Show {target} with no popup over it.", success=success,
                budget=BUDGET)


def _episode(session, agent: Agent, model: NoisyModel, target: str, free_text: bool) -> dict:
    model.begin(target)
    first = len(model.received)
    goal = _goal(target, free_text)
    # a free-text goal is one only the model plans: its episode starts past the deterministic phase
    state = EpisodeState(episode=uuid.uuid4().hex[:12], goal=goal.model_dump(mode="json"),
                         deterministic_done=free_text)
    result = agent.run(goal, state=state)
    truth = session.sim.game.truth()
    graph = session.graph
    blocking = [p for p in truth["popups"] if graph.popup(p).blocking]
    data = result.data
    prompts = model.received[first:]
    one_turn = max((estimate_tokens(s + u) for s, u in prompts), default=0) + 100
    if not result.ok:
        session.navigator.machine.relocalise(None, 0.0)  # the next episode starts from what it sees
    return {
        "target": target, "free_text": free_text, "ok": result.ok, "stop": result.status,
        "false_success": bool(result.ok and (truth["page"] != target or blocking)),
        "truth": (truth["page"], truth["popups"]),
        "turns": data["turns"], "tool_calls": data["tool_calls"], "model_calls": data["model_calls"],
        "tokens": data["tokens"], "seconds": data["seconds"], "deterministic": data["deterministic_calls"],
        "parser_errors": data["parser_errors"], "one_turn_tokens": one_turn,
    }


def run_agent_soak(episodes: int, seed: int = 11, tmp: Path | None = None) -> dict:
    from engine.config.loader import load_graph

    graph = load_graph().resolve("en")
    rng = random.Random(seed)
    targets = [t for t in strongly_connected_targets(graph, HUB) if t != graph.unknown_page]
    outcomes = []
    with open_session(scenario=chaos(graph), seed=seed, skills=(tmp or Path("/nonexistent")) / "skills.yaml") as s:
        model = NoisyModel(random.Random(seed + 1), s.graph.resolution)
        agent = Agent(s.tools, model)
        for _ in range(episodes):
            target, free_text = rng.choice(targets), rng.random() < 0.5
            outcomes.append(_episode(s, agent, model, target, free_text))
    return summarise(outcomes, model)


def _spread(values: list[float]) -> dict:
    return {"mean": statistics.fmean(values), "p50": statistics.median(values), "max": max(values)}


def summarise(outcomes: list[dict], model: NoisyModel) -> dict:
    met = [o for o in outcomes if o["stop"] == "goal_met"]
    free = [o for o in outcomes if o["free_text"]]
    free_calls: dict[str, list[int]] = {}
    for o in free:
        free_calls.setdefault(o["target"], []).append(o["model_calls"])
    free_mean = statistics.fmean(o["model_calls"] for o in free) if free else 0.0
    no_model = [o for o in met if o["model_calls"] == 0]
    saved = sum(statistics.fmean(free_calls.get(o["target"], [free_mean])) for o in no_model)
    return {
        "episodes": len(outcomes),
        "named": len(outcomes) - len(free), "free_text": len(free),
        "met_rate": len(met) / len(outcomes),
        "named_met": sum(1 for o in met if not o["free_text"]), "free_met": sum(1 for o in met if o["free_text"]),
        "false_successes": [o for o in outcomes if o["false_success"]],
        "over_budget": [o for o in outcomes if not _inside(o)],
        "stop_reasons": dict(Counter(o["stop"] for o in outcomes)),
        "failures": [(o["target"], o["free_text"], o["stop"], o["truth"]) for o in outcomes if not o["ok"]],
        "turns": _spread([o["turns"] for o in outcomes]),
        "model_calls": _spread([o["model_calls"] for o in outcomes]),
        "tokens": _spread([o["tokens"] for o in outcomes]),
        "tool_calls": _spread([o["tool_calls"] for o in outcomes]),
        "seconds": _spread([o["seconds"] for o in outcomes]),
        "free_model_calls": _spread([o["model_calls"] for o in free]) if free else None,
        "met_without_model": len(no_model),
        "model_calls_saved": saved,
        "model_kinds": dict(model.kinds),
    }


def _inside(o: dict) -> bool:
    return (o["turns"] <= BUDGET.turns and o["tool_calls"] <= BUDGET.tool_calls and o["seconds"] <= BUDGET.seconds
            and o["tokens"] <= BUDGET.tokens + o["one_turn_tokens"])


def _line(name: str, spread: dict | None) -> str:
    if spread is None:
        return f"{name} -"
    return f"{name} mean {spread['mean']:.2f} p50 {spread['p50']:.1f} max {spread['max']:.0f}"


def _report(stats: dict) -> None:
    print(
        f"\nagent soak (chaos): {stats['episodes']} episodes ({stats['named']} named, {stats['free_text']} free "
        f"text), goal met {stats['met_rate']:.1%} (named {stats['named_met']}, free text {stats['free_met']}), "
        f"false successes {len(stats['false_successes'])}, over budget {len(stats['over_budget'])}\n"
        f"  per goal: {_line('turns', stats['turns'])}; {_line('model calls', stats['model_calls'])}; "
        f"{_line('tokens', stats['tokens'])}; {_line('tool calls', stats['tool_calls'])}; "
        f"seconds mean {stats['seconds']['mean']:.2f} max {stats['seconds']['max']:.2f}\n"
        f"  deterministic path: {stats['met_without_model']} goals met with zero model calls; a free-text episode "
        f"of the same target needed {_line('model calls', stats['free_model_calls'])}: about "
        f"{stats['model_calls_saved']:.0f} model calls saved\n"
        f"  stop reasons {stats['stop_reasons']}; model turns by kind {stats['model_kinds']}; "
        f"failures {stats['failures']}"
    )


@pytest.mark.soak
def test_agent_soak_under_chaos(benchmark, capsys, tmp_path):
    """Goal episodes under chaos with a noisy model: >= 95% met, zero false successes, every budget kept."""
    stats = benchmark.pedantic(run_agent_soak, args=(EPISODES,), kwargs={"tmp": tmp_path}, rounds=1, iterations=1)
    benchmark.extra_info.update({k: v for k, v in stats.items()
                                 if k not in ("false_successes", "over_budget", "failures")})
    with capsys.disabled():
        _report(stats)
    assert stats["false_successes"] == []
    assert stats["over_budget"] == []
    assert stats["met_rate"] >= 0.95, stats["failures"]


# --------------------------------------------------------------------------------------------- loop benchmark


class CheapTurns:
    """Cycles cheap tool calls and unusable answers (parser errors), never a final: the episode runs its turns."""

    name = "cheap"
    CYCLE = (
        ModelTurn(None, (Call("alas_state", {}),)),
        ModelTurn("let me think about where we are"),
        ModelTurn(None, (Call("adb_health", {}),)),
        ModelTurn(None, (Call("teleport", {}),)),
        ModelTurn(None, (Call("alas_tools", {}),)),
        ModelTurn(None, (Call("alas_goto", {"page": 7}),)),
    )

    def __init__(self) -> None:
        self.received: list[tuple[str, str]] = []

    def generate(self, system: str, messages: Sequence[Message], tools: Sequence[ToolDecl], *,
                 timeout: float) -> ModelTurn:
        user = messages[-1].text or ""
        self.received.append((system, user))
        turn = self.CYCLE[(len(self.received) - 1) % len(self.CYCLE)]
        return ModelTurn(turn.text, turn.calls, Usage(len(system + user) // 4, 10))


def _timed_ms(call) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000.0


TURNS = 30
FULL = 12
"""The turn by which the working memory (12 percepts) is full."""


@pytest.mark.timing  # the loop's time per turn against a tool call's: runs alone (the README's last pytest)
def test_agent_loop_overhead_and_prompt_size(benchmark, tmp_path, figures):
    """The loop's own time per turn (model and tools excluded) over 30 turns is at most the fixed cost of one tool
    call (alas_tools: a worker thread and a result, no device) timed before and after the episodes in the same
    session (measured 0.14 ms against 0.7 ms); the prompt stays bounded (last <= 1.5x first, <= 8000 characters)."""
    budget = Budget(turns=TURNS, tool_calls=2 * TURNS, seconds=120, tokens=1_000_000)
    goal = Goal(name="free_text", description="reach page_dock", free_text=True, budget=budget)
    runs: list[tuple[Agent, CheapTurns, object]] = []
    with open_session(seed=5, skills=tmp_path / "skills.yaml") as session:

        def episode() -> None:
            model = CheapTurns()
            agent = Agent(session.tools, model)
            runs.append((agent, model, agent.run(goal)))

        tool_call = [_timed_ms(session.tools.alas_tools) for _ in range(40)]
        benchmark.pedantic(episode, rounds=3, iterations=1)
        tool_call += [_timed_ms(session.tools.alas_tools) for _ in range(40)]
    overheads = [ms for agent, _, _ in runs for ms in agent.turn_overheads_ms]
    agent, model, result = runs[-1]
    chars = [len(s) + len(u) for s, u in model.received]
    tokens = [estimate_tokens(s + u) for s, u in model.received]
    p50, p90 = statistics.median(overheads), statistics.quantiles(overheads, n=10)[-1]
    benchmark.extra_info.update(overhead_ms_p50=p50, overhead_ms_p90=p90, prompt_chars_first=chars[0],
                                prompt_chars_last=chars[-1], prompt_chars_max=max(chars))
    print(f"\nagent loop: {len(overheads)} turns, own time per turn p50 {p50:.2f} ms, p90 {p90:.2f} ms, max "
          f"{max(overheads):.2f} ms; system prompt {len(model.received[0][0])} chars; prompt (system + user) "
          f"first {chars[0]} chars / {tokens[0]} tokens, last "
          f"{chars[-1]} / {tokens[-1]}, at turn {FULL} (memory full) {chars[FULL - 1]}, max {max(chars)} / "
          f"{max(tokens)}; stop {result.status}")
    assert result.status == "budget_turns", result.text
    assert len(agent.turn_overheads_ms) == TURNS
    baseline = statistics.median(tool_call)
    figures.add("loop_overhead_p50_ms", p50)
    figures.add("tool_call_p50_ms", baseline, kind="baseline")
    figures.ratio("loop_overhead_over_tool_call", overheads, tool_call, paired=False)
    print(f"  loop overhead p50 {p50:.3f} ms against one tool call's fixed cost {baseline:.3f} ms")
    assert p50 <= baseline, (p50, baseline)
    # The system prompt (rules, frame size, the graph's pages) is the same every turn and bounded by
    # MAX_GRAPH_CHARS. The first user prompt holds one percept; working memory keeps 12 and shows at most 8 (2000
    # characters), so the user prompt grows until it is full, then stays flat: bounded against the first full one.
    system = len(model.received[0][0])
    assert all(len(s) == system for s, _ in model.received) and system <= MAX_GRAPH_CHARS + 1500
    user = [len(u) for _, u in model.received]
    full = user[FULL - 1]
    assert max(user[FULL - 1:]) <= 1.5 * full
    assert chars[-1] <= 2.5 * chars[0]
    assert max(user) <= 8000
