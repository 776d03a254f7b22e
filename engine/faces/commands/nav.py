"""Subcommands that act on the game: goto, state, run, tap, swipe; and tasks, which lists what run can run.

Each is one tool call through engine.faces.cli (the same bounded tools MCP serves): against the embedded simulator by
default, or a device with --serial. Progress per hop goes to stderr, the ToolResult to stdout.
"""

from __future__ import annotations

import argparse
import json

from engine.faces.cli import add_session_arguments, call_tool, swipe


def _tasks(args: argparse.Namespace) -> int:
    from engine.config.loader import load_graph
    from engine.runtime.session import load_task_book

    graph = load_graph(args.graph).resolve(args.server)
    book = load_task_book(args.graph, graph)
    rows = book.describe() if book is not None else []
    if args.json:
        print(json.dumps(rows))
    else:
        for row in rows:
            print(f"{row['name']:<24} {row['description']}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    commands = (
        ("goto", "navigate to a page and verify it", ("page",),
         lambda a: call_tool(a, "alas_goto", {"page": a.page})),
        ("state", "observe the current page and popups", (), lambda a: call_tool(a, "alas_state", {})),
        ("run", "run a named task (see `tasks`), verified", ("task",),
         lambda a: call_tool(a, "alas_run", {"name": a.task, **({"resume": True} if a.resume else {})})),
        ("tap", "tap a point, then observe", ("x", "y"),
         lambda a: call_tool(a, "adb_tap", {"x": a.x, "y": a.y})),
    )
    about = {"page": "the page to go to, by name (an unknown name gets the closest ones)",
             "task": "the task's name, as `tasks` lists it", "x": "horizontal pixel, in the graph's resolution",
             "y": "vertical pixel"}
    for name, help_text, positionals, handler in commands:
        parser = sub.add_parser(name, help=help_text)
        for positional in positionals:
            parser.add_argument(positional, type=int if positional in ("x", "y") else str, help=about[positional])
        if name == "run":
            parser.add_argument("--resume", action="store_true",
                                help="a routine (such as daily) skips the tasks it already did today")
        add_session_arguments(parser)
        parser.set_defaults(handler=handler)

    parser = sub.add_parser("swipe", help="swipe X1 Y1 X2 Y2 [MS] (duration in ms, default 300), then observe")
    parser.add_argument("numbers", nargs="+", type=int, metavar="N",
                        help="X1 Y1 X2 Y2 [MS]: from, to, and the duration in ms")
    add_session_arguments(parser)
    parser.set_defaults(handler=swipe)

    tasks = sub.add_parser("tasks", help="list the tasks `run` can run")
    tasks.add_argument("--graph", help="page graph folder (default: the shipped default graph)")
    tasks.add_argument("--server", help="game server (default: the graph's first)")
    tasks.add_argument("--json", action="store_true", help="print the tasks as JSON")
    tasks.set_defaults(handler=_tasks)
