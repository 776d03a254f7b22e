"""``python -m engine agent GOAL``: reach a goal (a name from goals.yaml, or free text) and verify it by looking.

Progress goes to stderr, one line per turn and call; the result, shaped like a ToolResult whose status is the stop
reason, goes to stdout. Exit 0 only when the harness verified the goal; 2 for bad input, or when the goal needs a
model and none is configured (GEMINI_API_KEY); 1 for every other stop.

Each episode writes its transcript and checkpoint to a folder: --transcript DIR, else
$ENGINE_HOME/<game>/episodes/<episode id>. ``--resume DIR`` continues the episode saved there.
"""

from __future__ import annotations

import argparse
import re
import sys
import uuid
from pathlib import Path
from typing import Any

from engine.errors import ConfigError

_GOAL_NAME = re.compile(r"^[a-z][a-z0-9_.\-]*$")


def _provider(spec: str | None) -> Any:
    """The model named by --model: ``replay:FILE`` plays recorded turns; anything else is a Gemini model name
    (None when GEMINI_API_KEY is not set)."""
    if spec and spec.startswith("replay:"):
        from engine.agent.models import ReplayProvider

        return ReplayProvider(spec.removeprefix("replay:"))
    from engine.agent.gemini import GeminiProvider

    return GeminiProvider.from_env(model=spec)


def _goal(args: argparse.Namespace, graph: Any, has_model: bool) -> Any:
    from engine.agent.goals import free_text_goal, load_goals
    from engine.paths import builtin_graph_dir
    from engine.results import did_you_mean

    source = Path(args.goals) if args.goals else (Path(args.graph) if args.graph else builtin_graph_dir())
    if source.is_file() and not args.goals:
        source = source.parent
    book = load_goals(source, graph) if args.goals or any(source.glob("goals*.yaml")) else None
    names = book.names() if book is not None else []
    if args.goal in names:
        return book.get(args.goal)
    if _GOAL_NAME.match(args.goal) and " " not in args.goal:
        hint, _ = did_you_mean(args.goal, names)
        raise ConfigError(f"unknown goal {args.goal!r}{hint or '; goals: ' + (', '.join(names) or 'none')} "
                          "(a free-text goal has spaces in it)")
    if not has_model:
        raise ConfigError("a free-text goal needs a model: set GEMINI_API_KEY (or pass --model replay:FILE)")
    return free_text_goal(args.goal)


def _progress(kind: str, data: dict[str, Any]) -> None:
    if kind == "turn":
        action = data["action"]
        what = action.get("error") or f"{action.get('name')} {action.get('arguments')}"
        print(f"turn {data['turn']}: {action['kind']}: {what}", file=sys.stderr)
    elif kind == "call":
        print(f"  {data['tool']} {data['arguments']} -> {data['status']}", file=sys.stderr)
    elif kind == "verify":
        print(f"  looked: {data['page'] or 'unknown screen'}, goal {'held' if data['held'] else 'not met'}",
              file=sys.stderr)


def _agent(args: argparse.Namespace) -> int:
    from engine.agent.checkpoint import EpisodeState, load_checkpoint
    from engine.agent.goals import Goal
    from engine.agent.loop import Agent, AgentConfig
    from engine.agent.memory import EpisodicMemory
    from engine.agent.skills import SkillStore, agent_home, game_dir
    from engine.cli import check_session_arguments, emit, outside_tasks
    from engine.loader import load_graph
    from engine.policies import load_policies
    from engine.session import open_session

    check_session_arguments(args)
    if args.max_turns is not None and args.max_turns < 1:
        raise ConfigError("--max-turns must be at least 1")
    if args.goal is None and args.resume is None:
        raise ConfigError("name a goal (or a free-text goal in quotes), or --resume DIR")
    provider = _provider(args.model)
    if args.resume is not None:
        state = load_checkpoint(args.resume)
        folder = Path(args.resume).parent if Path(args.resume).is_file() else Path(args.resume)
        goal = Goal.model_validate(state.goal)
    else:
        graph = load_graph(args.graph, policies=load_policies(args.policies).names).resolve(args.server)
        goal = _goal(args, graph, provider is not None)
        state = EpisodeState(episode=uuid.uuid4().hex[:12], goal=goal.model_dump(mode="json"))
        folder = Path(args.transcript) if args.transcript else \
            game_dir(agent_home(), graph) / "episodes" / state.episode
    session = open_session(args.serial, graph_dir=args.graph, server=args.server, assets=args.assets,
                           scenario=args.scenario, seed=args.seed, policies_file=args.policies,
                           adb_host=args.adb_host, adb_port=args.adb_port, transcript_dir=folder,
                           providers=outside_tasks(args))
    try:
        home = game_dir(agent_home(), session.graph)
        agent = Agent(session.tools, provider, memory=EpisodicMemory(home / "episodes.jsonl"),
                      skills=SkillStore(session.skills_path) if session.skills_path else None,
                      config=AgentConfig(max_turns=args.max_turns, on_event=_progress))
        result = agent.run(goal, state=state, folder=folder)
    finally:
        session.close()
        if hasattr(provider, "close"):
            provider.close()
    code = emit(result, args.json, sys.stdout)
    if not result.ok and result.data.get("model_error") == "not_configured":
        return 2
    return 0 if result.ok else max(code, 1)


def register(sub: argparse._SubParsersAction) -> None:
    from engine.cli import add_session_arguments

    parser = sub.add_parser("agent", help="reach a goal (a goals.yaml name or free text), verified by looking",
                            description=__doc__.splitlines()[0])
    parser.add_argument("goal", nargs="?", help="a goal name (see goals.yaml) or a free-text goal in quotes")
    parser.add_argument("--goals", metavar="FILE", help="goals file or folder (default: goals*.yaml beside the graph)")
    parser.add_argument("--model", help="Gemini model name (default: $ENGINE_AGENT_MODEL or gemini-2.5-flash), "
                                        "or replay:FILE to play recorded model turns")
    parser.add_argument("--max-turns", type=int, metavar="N", help="cap the goal's model-turn budget")
    parser.add_argument("--resume", metavar="DIR", help="continue the episode checkpointed in DIR")
    add_session_arguments(parser)
    parser.set_defaults(handler=_agent)
