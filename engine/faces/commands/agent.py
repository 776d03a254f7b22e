"""``python -m engine agent GOAL``: reach a goal and verify it by looking, against criteria the user gave.

GOAL is a goal of goals.yaml (its criteria), a page of the graph (success: that page shows), a task (success: it
ran verified), or free text in quotes, whose criteria come from ``--until`` (none: the episode can only end
``unverified``). The model never writes the criteria.

Progress goes to stderr, one line per turn and call; the result, shaped like a ToolResult whose status is the stop
reason, goes to stdout. Exit 0 only when the harness verified the goal; 2 for bad input, or when the model cannot
be used as configured (no GEMINI_API_KEY, a key the service refuses, a model it does not serve); 1 for every other
stop.

Each episode writes its transcript and checkpoint to a folder: --transcript DIR, else
$ENGINE_HOME/<game>/episodes/<episode id>. ``--resume DIR`` continues the episode saved there.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import uuid
from pathlib import Path
from typing import Any

from engine.core.errors import ConfigError

_UNTIL = re.compile(r"^(page|popup|popup_absent|task)=(\S+)$")


def _provider(spec: str | None, policies: Any) -> Any:
    """The model named by --model: ``replay:FILE`` plays recorded turns; anything else is a Gemini model name
    (None when GEMINI_API_KEY is not set)."""
    if spec and spec.startswith("replay:"):
        from engine.agent.models import ReplayProvider

        return ReplayProvider(spec.removeprefix("replay:"))
    from engine.agent.gemini import GeminiProvider

    return GeminiProvider.from_env(model=spec, policies=policies)


def _criteria(texts: list[str], graph: Any, tasks: set[str]) -> list[Any]:
    """The --until criteria: ``page=NAME``, ``popup_absent=NAME``, ``task=NAME``, ``no_popup``, or a JSON
    criterion (``{"field": {...}}``), each checked against the graph."""
    from pydantic import ValidationError

    from engine.config.goals import Criterion, check_criteria

    found = []
    for text in texts:
        match = _UNTIL.match(text.strip())
        try:
            if text.strip() == "no_popup":
                raw: Any = {"no_popup": True}
            elif match:
                raw = {match.group(1): match.group(2)}
            else:
                raw = json.loads(text)
            criterion = Criterion.model_validate(raw)
        except (ValueError, ValidationError) as exc:
            why = exc.errors(include_url=False)[0]["msg"] if isinstance(exc, ValidationError) else "not JSON"
            raise ConfigError(f"--until {text!r}: {why} (give page=NAME, popup_absent=NAME, task=NAME, no_popup, "
                              'or a JSON criterion such as {"field": {"name": ..., "op": "ge", "value": 1}})') from None
        problems = check_criteria([criterion], graph, tasks)
        if problems:
            raise ConfigError(f"--until {text!r}: {problems[0]}")
        found.append(criterion)
    return found


def _goal(args: argparse.Namespace, graph: Any, has_model: bool) -> Any:
    from engine.config.goals import GOAL_NAME, Goal, free_text_goal, load_goals, task_names_beside
    from engine.core.paths import builtin_graph_dir
    from engine.core.results import did_you_mean

    folder = Path(args.graph) if args.graph else builtin_graph_dir()
    folder = folder.parent if folder.is_file() else folder
    source = Path(args.goals) if args.goals else folder
    book = load_goals(source, graph) if args.goals or any(source.glob("goals*.yaml")) else None
    names = book.names() if book is not None else []
    tasks = task_names_beside(folder, graph)
    until = _criteria(args.until or [], graph, tasks)
    if args.goal in names:
        if until:
            raise ConfigError(f"--until is for a page, a task or free text; goal {args.goal} has its own criteria")
        return book.get(args.goal)
    pages = [p for p in graph.page_names if p != graph.unknown_page]
    if args.goal in pages or args.goal in tasks:
        kind = "page" if args.goal in pages else "task"
        what = f"Show {args.goal}." if kind == "page" else f"Run {args.goal}, verified."
        return Goal(name=args.goal, description=what, success=[{kind: args.goal}, *until])
    if re.match(GOAL_NAME, args.goal) and " " not in args.goal:
        known = [*names, *pages, *sorted(tasks)]
        hint, _ = did_you_mean(args.goal, known)
        raise ConfigError(f"unknown goal {args.goal!r}{hint or '; goals: ' + (', '.join(names) or 'none')} "
                          "(a goal, a page or a task; a free-text goal has spaces in it)")
    if not has_model:
        raise ConfigError("a free-text goal needs a model: set GEMINI_API_KEY (or pass --model replay:FILE)")
    return free_text_goal(args.goal, success=until)


def _progress(kind: str, data: dict[str, Any]) -> None:
    if kind == "turn":
        action = data["action"]
        what = action.get("error") or f"{action.get('name')} {action.get('arguments')}"
        print(f"turn {data['turn']}: {action['kind']}: {what}"[:300], file=sys.stderr)
    elif kind == "call":
        print(f"  {data['tool']} {data['arguments']} -> {data['status']}"[:300], file=sys.stderr)
    elif kind == "verify":
        print(f"  looked: {data['page'] or 'unknown screen'}, goal {'held' if data['held'] else 'not met'}",
              file=sys.stderr)


def _agent(args: argparse.Namespace) -> int:
    from engine.agent.checkpoint import EpisodeState, load_checkpoint
    from engine.agent.loop import Agent, AgentConfig
    from engine.agent.memory import EpisodicMemory
    from engine.config.goals import Goal
    from engine.config.loader import load_graph
    from engine.config.policies import load_policies
    from engine.core.paths import agent_home, game_dir
    from engine.faces.cli import check_session_arguments, emit, outside_tasks, schedule_db
    from engine.llm import CONFIGURATION_REASONS
    from engine.runtime.session import open_session
    from engine.tasks.skills import SkillStore

    check_session_arguments(args)
    if args.max_turns is not None and args.max_turns < 1:
        raise ConfigError("--max-turns must be at least 1")
    if args.max_seconds is not None and not 0 < args.max_seconds <= 86400:
        raise ConfigError("--max-seconds must be more than 0 and at most 86400")
    if args.goal is None and args.resume is None:
        raise ConfigError("name a goal (or a free-text goal in quotes), or --resume DIR")
    if args.until and args.resume is not None:
        raise ConfigError("--until cannot change a resumed episode's criteria")
    policies = load_policies(args.policies)
    provider = _provider(args.model, policies)
    if args.resume is not None:
        state = load_checkpoint(args.resume)
        folder = Path(args.resume).parent if Path(args.resume).is_file() else Path(args.resume)
        goal = Goal.model_validate(state.goal)
    else:
        graph = load_graph(args.graph, policies=policies.names).resolve(args.server)
        goal = _goal(args, graph, provider is not None)
        state = EpisodeState(episode=uuid.uuid4().hex[:12], goal=goal.model_dump(mode="json"))
        folder = Path(args.transcript) if args.transcript else \
            game_dir(agent_home(), graph) / "episodes" / state.episode
    if not goal.success:
        print(f"note: goal {goal.name} has no success criteria, so it can only end unverified (give --until)",
              file=sys.stderr)
    session = open_session(args.serial, graph_dir=args.graph, server=args.server, assets=args.assets,
                           scenario=args.scenario, seed=args.seed, policies_file=args.policies,
                           adb_host=args.adb_host, adb_port=args.adb_port, transcript_dir=folder,
                           providers=outside_tasks(args), schedule_db=schedule_db())
    try:
        home = game_dir(agent_home(), session.graph)
        agent = Agent(session.tools, provider, memory=EpisodicMemory(home / "episodes.jsonl"),
                      skills=SkillStore(session.skills_path) if session.skills_path else None,
                      config=AgentConfig(max_turns=args.max_turns, max_seconds=args.max_seconds,
                                         on_event=_progress))
        result = agent.run(goal, state=state, folder=folder)
    finally:
        session.close()
        if hasattr(provider, "close"):
            provider.close()
    code = emit(result, args.json, sys.stdout)
    reason = result.data.get("model_error")
    if result.status == "model_error":
        print(f"error: {result.text}"[:1000], file=sys.stderr)  # stderr is redacted (engine.__main__)
    if not result.ok and reason in CONFIGURATION_REASONS:
        return 2
    return 0 if result.ok else max(code, 1)


def register(sub: argparse._SubParsersAction) -> None:
    from engine.faces.cli import add_session_arguments

    parser = sub.add_parser("agent", help="reach a goal (a goals.yaml name, a page, a task or free text), verified "
                                          "by looking", description=__doc__.splitlines()[0])
    parser.add_argument("goal", nargs="?", help="a goal name (see goals.yaml), a page, a task, or a free-text goal "
                                                "in quotes")
    parser.add_argument("--until", action="append", metavar="CRITERION",
                        help="a success criterion of a free-text (or page, task) goal: page=NAME, popup_absent=NAME, "
                             "task=NAME, no_popup, or JSON; repeat for more (all must hold)")
    parser.add_argument("--goals", metavar="FILE", help="goals file or folder (default: goals*.yaml beside the graph)")
    parser.add_argument("--model", help="Gemini model name (default: $ENGINE_AGENT_MODEL, else the `model` policy's "
                                        "model in policies/default.yaml), or replay:FILE to play recorded turns")
    parser.add_argument("--max-turns", type=int, metavar="N", help="cap the goal's model-turn budget")
    parser.add_argument("--max-seconds", type=float, metavar="S",
                        help="cap the goal's wall budget: the episode, model calls included, ends within it")
    parser.add_argument("--resume", metavar="DIR", help="continue the episode checkpointed in DIR")
    add_session_arguments(parser)
    parser.set_defaults(handler=_agent)
