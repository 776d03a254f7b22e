"""Subcommands that read a graph without touching a device: validate, schema, graph, route."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the graph's modules load when a graph command runs, not when any command's parser is built
    from engine.config.schema import Graph


def _graph_arg(parser: argparse.ArgumentParser, *flags: str) -> None:
    kwargs = {"default": None, "help": "graph folder or file (default: the shipped default graph)"}
    if flags:
        parser.add_argument(*flags, dest="graph", metavar="GRAPH_DIR", **kwargs)
    else:
        parser.add_argument("graph", nargs="?", metavar="GRAPH_DIR", **kwargs)


def _validate(args: argparse.Namespace) -> int:
    from engine.config import loader

    report = loader.check_graph(args.graph, policies=args.policies)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    for problem in report.problems if not args.json else ():
        print(problem, file=sys.stderr)
    if not report.ok:
        if not args.json:
            print(report.summary(), file=sys.stderr)
        return 2
    if not args.json:
        print(report.summary())
    return 0


def _schema(args: argparse.Namespace) -> int:
    from engine.config import loader
    from engine.config.goals import goals_json_schema
    from engine.config.schedule import schedule_json_schema
    from engine.config.simstate import state_json_schema
    from engine.config.tasks import tasks_json_schema

    companions = {"sim_state": state_json_schema, "goals": goals_json_schema, "schedule": schedule_json_schema,
                  "tasks": tasks_json_schema}
    make = next((make for option, make in companions.items() if getattr(args, option)), loader.graph_json_schema)
    print(json.dumps(make(), indent=2))
    return 0


def _mermaid(graph: Graph) -> str:
    from engine.navigation import routes

    lines = ["flowchart LR"]
    for page in graph.pages:
        lines.append(f"  {page.name}")
        for link in page.links:
            label = routes.describe_link(link).replace('"', "'")
            lines.append(f'  {page.name} -->|"{label}"| {link.to}')
    return "\n".join(lines)


def _dot(graph: Graph) -> str:
    from engine.navigation import routes

    lines = [f"digraph {json.dumps(graph.game)} {{", "  rankdir=LR;"]
    for page in graph.pages:
        lines.append(f"  {json.dumps(page.name)};")
        for link in page.links:
            label = json.dumps(routes.describe_link(link))
            lines.append(f"  {json.dumps(page.name)} -> {json.dumps(link.to)} [label={label}];")
    lines.append("}")
    return "\n".join(lines)


def _graph(args: argparse.Namespace) -> int:
    from engine.config import loader

    graph = loader.load_graph(args.graph)
    print(_mermaid(graph) if args.format == "mermaid" else _dot(graph))
    return 0


def _route(args: argparse.Namespace) -> int:
    from engine.config import loader
    from engine.navigation import routes

    graph = loader.load_graph(args.graph)
    try:
        route = routes.plan_route(graph, args.src, args.dst)
    except routes.UnknownPage as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except routes.NoRoute as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(route.to_dict(), indent=2))
        return 0
    for hop in route.hops:
        print(f"{hop.from_page} -> {hop.to}  [{routes.describe_link(hop.link)}]  cost {hop.cost:g}")
    print(f"total cost {route.cost:g} in {len(route)} hop(s)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    validate = sub.add_parser(
        "validate", help="check a graph folder (and its tasks*.yaml and goals*.yaml) and list every problem with file:line:col"
    )
    _graph_arg(validate)
    validate.add_argument("--policies", metavar="FILE", help="also check this policy file; hops may name its policies")
    validate.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    validate.set_defaults(handler=_validate)

    schema = sub.add_parser("schema", help="print the JSON Schema of a graph file")
    schema.add_argument("--tasks", action="store_true", help="the schema of a tasks file instead")
    schema.add_argument("--goals", action="store_true", help="the schema of a goals file instead")
    schema.add_argument("--sim-state", action="store_true", help="the schema of a simulator state file instead")
    schema.add_argument("--schedule", action="store_true", help="the schema of a schedule file instead")
    schema.set_defaults(handler=_schema)

    graph = sub.add_parser("graph", help="draw the page graph as mermaid or graphviz dot")
    _graph_arg(graph)
    graph.add_argument("--format", choices=("mermaid", "dot"), default="mermaid",
                       help="mermaid (the default: a flowchart for Markdown) or graphviz dot")
    graph.set_defaults(handler=_graph)

    route = sub.add_parser("route", help="plan the cheapest route between two pages")
    route.add_argument("src", metavar="FROM", help="the page the route starts from")
    route.add_argument("dst", metavar="TO", help="the page it leads to")
    _graph_arg(route, "--graph")
    route.add_argument("--json", action="store_true", help="print the route as JSON")
    route.set_defaults(handler=_route)
