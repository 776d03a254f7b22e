"""Subcommands that act on the game: goto, state, run, tasks.

Against the embedded simulator by default, or a device with --serial. Progress per hop goes to stderr, the
ToolResult to stdout (--json for machines); the exit code is 0 only when the target was verified.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from engine.results import ToolResult


def add_device_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by every command that opens a session."""
    parser.add_argument("--serial", help="ADB serial of a phone or emulator (default: the built-in simulator)")
    parser.add_argument("--graph", help="page graph folder (default: the shipped Azur Lane graph)")
    parser.add_argument("--server", default="en", help="game server: en or cn (default en)")
    parser.add_argument("--assets", help="asset pack folder (ALAS layout or ours); default: synthetic")
    parser.add_argument("--scenario", help="simulator fault scenario YAML (simulator only)")
    parser.add_argument("--seed", type=int, default=0, help="simulator seed (default 0)")
    parser.add_argument("--transcript", metavar="DIR", help="write the JSONL transcript and error bundles here")
    parser.add_argument("--json", action="store_true", help="print the ToolResult as JSON")


def open_from_args(args: argparse.Namespace, **extra: Any):
    from engine.session import open_session

    return open_session(
        args.serial,
        graph_dir=args.graph,
        server=args.server,
        assets=args.assets,
        scenario=args.scenario,
        seed=args.seed,
        transcript_dir=args.transcript,
        **extra,
    )


def print_result(result: ToolResult, as_json: bool) -> int:
    if as_json:
        print(json.dumps(result.to_dict(), default=str))
    else:
        data = result.data
        print(f"{'ok' if result.ok else 'FAILED'} [{result.status}] {result.text}")
        if data.get("observed") is not None or data.get("expected") is not None:
            print(f"  expected: {data.get('expected')}  observed: {data.get('observed')}")
        suggested = (data.get("screenshot_analysis") or {}).get("suggested_action")
        if not result.ok and suggested:
            print(f"  suggested action: {suggested}")
        for key, value in (data.get("values") or {}).items():
            print(f"  {key}: {value}")
        if data.get("suggestions"):
            print(f"  did you mean: {', '.join(data['suggestions'])}")
    return 0 if result.ok else 1


def _progress(kind: str, entry: dict[str, Any]) -> None:
    if kind == "action":
        print(f"hop {entry.get('hop')}: {entry.get('source')} -> {entry.get('to')}", file=sys.stderr)
    elif kind == "dismiss":
        print(f"  dismissing {entry.get('popup')}", file=sys.stderr)
    elif kind == "recover":
        print(f"  unknown screen: trying {entry.get('rung')}", file=sys.stderr)


def _with_session(args: argparse.Namespace, work) -> int:
    session = open_from_args(args)
    try:
        session.navigator.on_event = _progress
        result = work(session)
    finally:
        session.close()
    code = print_result(result, args.json)
    if result.status.startswith("unknown_"):
        return 2
    return code


def _goto(args: argparse.Namespace) -> int:
    return _with_session(args, lambda s: s.navigator.goto(args.page))


def _state(args: argparse.Namespace) -> int:
    return _with_session(args, lambda s: s.navigator.state())


def _run(args: argparse.Namespace) -> int:
    return _with_session(args, lambda s: s.navigator.run(args.task))


def _tasks(args: argparse.Namespace) -> int:
    from engine.loader import load_graph
    from engine.session import _tasks as load_book

    graph = load_graph(args.graph, server=args.server)
    book = load_book(args.graph, graph)
    rows = book.describe() if book is not None else []
    if args.json:
        print(json.dumps(rows))
    else:
        for row in rows:
            print(f"{row['name']:<24} {row['description']}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    goto = sub.add_parser("goto", help="navigate to a page and verify it")
    goto.add_argument("page")
    add_device_options(goto)
    goto.set_defaults(handler=_goto)

    state = sub.add_parser("state", help="observe the current page and popups")
    add_device_options(state)
    state.set_defaults(handler=_state)

    run = sub.add_parser("run", help="run a named task (see `tasks`), verified")
    run.add_argument("task")
    add_device_options(run)
    run.set_defaults(handler=_run)

    tasks = sub.add_parser("tasks", help="list the tasks `run` can run")
    tasks.add_argument("--graph", help="page graph folder (default: the shipped Azur Lane graph)")
    tasks.add_argument("--server", default="en")
    tasks.add_argument("--json", action="store_true")
    tasks.set_defaults(handler=_tasks)
