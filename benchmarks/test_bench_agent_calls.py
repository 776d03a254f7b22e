"""Model calls per verified goal: the engine's agent against a baseline that asks the model for every step.

One simulator session, one run, the same goals both ways, each from the same start page:

- **engine**: ``Agent.run(goal)`` as ``python -m engine agent`` runs it. A goal naming a page or a task is reached
  by the deterministic path (goto/run, verified by looking) before any model call; the model is asked only for what
  that path cannot plan (here: a free-text goal whose user criterion is a text field).
- **baseline: one model call per step**: the same goal with the deterministic phase skipped and a model that moves
  one step per call, as an LLM agent driving the game screen by screen would: one ``alas_goto`` to the next page of
  the route per call, one ``alas_run`` per task, and ``final`` when only a claim is left.

Both are driven by the same in-process oracle (always right, never garbage), so the difference is the engine's
planning, not the model's skill. Every goal must end verified both ways (the harness's look against the user's
criteria). A named goal must need zero model calls. The whole comparison takes about 3 s, so CI runs all of it.
"""

from __future__ import annotations

import re
import statistics
import uuid
from collections.abc import Sequence

from engine.agent.checkpoint import EpisodeState
from engine.agent.loop import Agent
from engine.agent.models import Call, Message, ModelTurn, ToolDecl, Usage
from engine.config.goals import Goal, free_text_goal, load_goals
from engine.config.tasks import GotoStep
from engine.core.paths import builtin_graph_dir
from engine.navigation.routes import plan_route
from engine.runtime.session import open_session

COUNTERS = {"field": {"name": "commission_running", "op": "matches", "value": r"^\d+\s*/\s*\d+$"}}
GOALS: list[tuple[str, str, str]] = [
    # (kind, goal: a goals.yaml name, a page, or free text with its criteria below, start page)
    ("named", "collect_mail", "page_main"),
    ("page", "page_dorm", "page_commission"),
    ("free text", "show the commission counters", "page_main"),
    ("named", "commission_counters", "page_dock"),
    ("free text", "reach the dock, nothing over it", "page_reward"),
    ("named", "back_to_main", "page_commission"),
    ("page", "page_research", "page_main"),
    ("free text", "show the commission counters from the dorm", "page_dorm"),
]
CRITERIA = {
    "show the commission counters": [COUNTERS],
    "show the commission counters from the dorm": [COUNTERS],
    "reach the dock, nothing over it": [{"page": "page_dock"}, {"no_popup": True}],
}
_SCREEN = re.compile(r"^SCREEN NOW: page=(\S+)", re.M)
_OPEN = re.compile(r"^- \[ \] (page|task|field) (\S+)", re.M)


class Oracle:
    """A model that is always right. `stepwise`: one hop per call (the baseline); else one goto per page."""

    name = "oracle"

    def __init__(self, graph, book, *, stepwise: bool) -> None:
        self.graph, self.book, self.stepwise = graph, book, stepwise
        self.field_page = {f.name: p.name for p in graph.pages for f in p.fields}
        self.calls = 0

    def generate(self, system: str, messages: Sequence[Message], tools: Sequence[ToolDecl], *,
                 timeout: float) -> ModelTurn:
        self.calls += 1
        user = messages[-1].text or ""
        here = _SCREEN.search(user).group(1)
        open_ = _OPEN.findall(user)
        task = next((name for kind, name in open_ if kind == "task"), None)
        page = next((name for kind, name in open_ if kind == "page"), None)
        field = next((name for kind, name in open_ if kind == "field"), None)
        if task is not None:
            task_page = next((s.page for s in self.book.get(task).steps if isinstance(s, GotoStep)), here)
            call = self._goto(here, task_page) if self.stepwise and here != task_page else \
                Call("alas_run", {"name": task})
        elif page is not None and page != here:
            call = self._goto(here, page)
        elif field is not None and self.field_page[field] != here:
            call = self._goto(here, self.field_page[field])
        else:
            call = Call("final", {"summary": "done"})
        return ModelTurn(None, (call,), Usage(len(system + user) // 4, 10))

    def _goto(self, here: str, target: str) -> Call:
        if self.stepwise:
            target = plan_route(self.graph, here, target).hops[0].to
        return Call("alas_goto", {"page": target})


def _goal(kind: str, text: str, book) -> Goal:
    if kind == "named":
        return book.get(text)
    if kind == "page":
        return Goal(name=text, description=f"Show {text}.", success=[{"page": text}])
    return free_text_goal(text, success=CRITERIA[text])


def _run(session, goal: Goal, start: str, oracle: Oracle, *, deterministic: bool) -> dict:
    assert session.tools.call("alas_goto", {"page": start}).ok
    before = oracle.calls
    state = EpisodeState(episode=uuid.uuid4().hex[:12], goal=goal.model_dump(mode="json"),
                         deterministic_done=not deterministic)
    result = Agent(session.tools, oracle).run(goal, state=state)
    return {"verified": result.ok, "status": result.status, "model_calls": oracle.calls - before,
            "tool_calls": result.data["tool_calls"], "seconds": result.data["seconds"]}


def run_comparison(goals: list[tuple[str, str, str]], tmp) -> list[dict]:
    rows = []
    with open_session(seed=3, skills=tmp / "skills.yaml") as session:
        book = load_goals(builtin_graph_dir(), session.graph)
        engine, baseline = (Oracle(session.graph, session.tasks.book, stepwise=s) for s in (False, True))
        for kind, text, start in goals:
            goal = _goal(kind, text, book)
            rows.append({"kind": kind, "goal": text, "start": start,
                         "engine": _run(session, goal, start, engine, deterministic=True),
                         "baseline": _run(session, goal, start, baseline, deterministic=False)})
    return rows


def _per_verified(rows: list[dict], side: str) -> float:
    verified = [r[side] for r in rows if r[side]["verified"]]
    return sum(v["model_calls"] for v in verified) / len(verified) if verified else float("nan")


def test_model_calls_per_verified_goal_against_one_call_per_step(benchmark, capsys, tmp_path):
    rows = benchmark.pedantic(run_comparison, args=(GOALS, tmp_path), rounds=1, iterations=1)
    engine, baseline = _per_verified(rows, "engine"), _per_verified(rows, "baseline")
    with capsys.disabled():
        print(f"\nmodel calls per verified goal over {len(rows)} goals: engine {engine:.2f}, baseline (one call "
              f"per step) {baseline:.2f}, ratio {engine / baseline:.2f}")
        for r in rows:
            e, b = r["engine"], r["baseline"]
            print(f"  {r['kind']:9} {r['goal']:45} from {r['start']:16} engine {e['model_calls']} calls "
                  f"({e['status']}, {e['seconds']:.2f} s), baseline {b['model_calls']} calls ({b['status']}, "
                  f"{b['seconds']:.2f} s)")
    benchmark.extra_info.update(engine_calls_per_goal=engine, baseline_calls_per_goal=baseline,
                                goals=len(rows), median_baseline=statistics.median(
                                    r["baseline"]["model_calls"] for r in rows))
    assert all(r["engine"]["verified"] and r["baseline"]["verified"] for r in rows), rows
    assert all(r["engine"]["model_calls"] == 0 for r in rows if r["kind"] in ("named", "page")), rows
    assert engine < baseline
