"""CLI mode: one tool call per invocation (``python -m engine cli --goto page_commission``), the same ToolResult
the MCP server answers, printed as a short human form or as JSON; exit code 0 only when it is ok.

Exit codes follow engine/__main__.py: 0 ok, 1 the tool ran but did not succeed (not verified, timeout, device
unhealthy), 2 bad input (off-screen point, unknown page or task), 3 not implemented yet.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from pathlib import Path
from typing import Any, Callable, TextIO

from engine.results import ToolResult
from engine.tools import ImageResult, Tools

log = logging.getLogger(__name__)

BAD_INPUT = ("bad_argument", "unknown_page", "unknown_task")


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that say which device, game and simulator a session opens (shared by cli and serve)."""
    group = parser.add_argument_group("session")
    group.add_argument("--serial", default=os.environ.get("ENGINE_SERIAL"),
                       help="ADB serial of the phone or emulator (default: $ENGINE_SERIAL, else the embedded "
                            "simulator)")
    group.add_argument("--graph", default=os.environ.get("ENGINE_GRAPH"),
                       help="page graph folder (default: the shipped Azur Lane graph)")
    group.add_argument("--server", default="en", help="game server whose per-server values apply (default en)")
    group.add_argument("--assets", default=os.environ.get("ENGINE_ASSETS"),
                       help="asset pack folder (ALAS layout or ours); the simulator draws its own without one")
    group.add_argument("--scenario", default=os.environ.get("ENGINE_SCENARIO"),
                       help="simulator fault scenario YAML (embedded simulator only; default: $ENGINE_SCENARIO)")
    group.add_argument("--seed", type=int, default=None, help="simulator seed")
    group.add_argument("--transcript", default=os.environ.get("ENGINE_TRANSCRIPT_DIR"),
                       help="folder for the JSONL transcript, traces and error bundles "
                            "(default: $ENGINE_TRANSCRIPT_DIR, else none)")


def open_tools(args: argparse.Namespace) -> tuple[Tools, Callable[[], None]]:
    """Open a session from the parsed session options and wrap it in Tools; returns (tools, close)."""
    from engine.session import open_session

    scenario: Any = None
    if args.scenario:
        from engine.sim.scenario import Scenario

        scenario = Scenario.from_file(args.scenario)
    session = open_session(
        args.serial,
        graph_dir=args.graph,
        server=args.server,
        assets=args.assets,
        scenario=scenario,
        seed=args.seed,
        transcript_dir=args.transcript,
    )
    try:
        tools = Tools.from_session(session)
    except BaseException:
        session.close()
        raise
    return tools, session.close


def exit_code(result: ToolResult) -> int:
    if result.ok:
        return 0
    if result.status in BAD_INPUT:
        return 2
    if result.status == "not_implemented":
        return 3
    return 1


def human(result: ToolResult) -> str:
    """The short human form: a status line, then what was observed and what to do next."""
    data = result.data
    lines = [f"{'ok' if result.ok else 'FAILED'} [{result.status}] {result.text}"]
    obs = data.get("observation") or {}
    if obs:
        seen = obs.get("page") or "unknown screen"
        extra = f", popups: {', '.join(obs['popups'])}" if obs.get("popups") else ""
        lines.append(f"  observed: {seen} (confidence {obs.get('confidence', 0):.2f}{extra})")
    for task in data.get("tasks") or []:
        lines.append(f"  {task.get('name')}: {task.get('description', '')}".rstrip(": "))
    health = data.get("health")
    if isinstance(health, dict) and health.get("suggestion") and not result.ok:
        lines.append(f"  health: {health['suggestion']}")
    if data.get("suggestions") and "did you mean" not in result.text:
        lines.append(f"  did you mean: {', '.join(data['suggestions'])}")
    suggested = (data.get("screenshot_analysis") or {}).get("suggested_action")
    if suggested and not result.ok:
        lines.append(f"  suggested action: {suggested}")
    if data.get("elapsed_ms") is not None:
        lines.append(f"  elapsed: {data['elapsed_ms']:.0f} ms")
    return "\n".join(lines)


def request(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The tool call the flags ask for."""
    if args.health:
        return "adb_health", {}
    if args.screenshot:
        return "adb_screenshot", {}
    if args.state:
        return "alas_state", {}
    if args.tap:
        return "adb_tap", {"x": args.tap[0], "y": args.tap[1]}
    if args.swipe:
        if len(args.swipe) not in (4, 5):
            raise ValueError(f"--swipe takes X1 Y1 X2 Y2 [MS], not {len(args.swipe)} numbers")
        x1, y1, x2, y2, *ms = args.swipe
        return "adb_swipe", {"x1": x1, "y1": y1, "x2": x2, "y2": y2, **({"duration_ms": ms[0]} if ms else {})}
    if args.goto:
        return "alas_goto", {"page": args.goto}
    if args.run:
        return "alas_run", {"name": args.run}
    return "alas_tools", {}


def run_cli(args: argparse.Namespace, out: TextIO, tools: Tools | None = None) -> int:
    """Run the one tool the flags name and print its result to `out`; the exit code says whether it is ok."""
    try:
        name, arguments = request(args)
    except ValueError as exc:
        return _print(ToolResult(False, "bad_argument", str(exc), {"tool": "adb_swipe"}), args, out)
    close: Callable[[], None] = lambda: None
    if tools is None:
        tools, close = open_tools(args)
    try:
        result = tools.call(name, arguments)
        if isinstance(result, ImageResult) and args.screenshot and result.png:
            path = Path(args.screenshot)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(result.png)
            result.data["path"] = str(path)
            result.text += f", saved to {path}"
    finally:
        tools.close()
        close()
    return _print(result, args, out)


def _print(result: ToolResult, args: argparse.Namespace, out: TextIO) -> int:
    if args.json:
        out.write(json.dumps(result.to_dict(), ensure_ascii=False, default=str) + "\n")
    else:
        out.write(human(result) + "\n")
    out.flush()
    return exit_code(result)
