"""The command line's one door to the device: every command that touches it (goto, state, run, health,
screenshot, tap, swipe, and ``cli --...``) calls one tool of engine.runtime.tools, with the same bounds as MCP, and
prints the ToolResult the same way.

Exit codes, for every command: 0 ok, 1 the tool ran but did not succeed (not verified, timeout, device
unhealthy), 2 bad input (an unknown page or task, an off-screen point, a wrong graph, server or path), 3 not
implemented. Results go to stdout (short and human, or the whole ToolResult with ``--json``); progress and logs
go to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TextIO

from engine.core.errors import ConfigError
from engine.core.results import ToolResult, make_result

if TYPE_CHECKING:  # the tools (navigator, observer, numpy, OpenCV) load when a command opens a session
    from engine.runtime.tools import Tools

BAD_INPUT = ("bad_argument", "unknown_page", "unknown_task", "config_error", "refused")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp")


def port(text: str) -> int:
    """An argparse type: a TCP port, 0..65535 (0: a free one, where the command allows it)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"port {value} is not in 0..65535")
    return value


def check_session_arguments(args: argparse.Namespace) -> None:
    """Resolve ``--serial`` (auto: discover; sim: the embedded simulator; engine.faces.pick) into a serial, or None
    for the simulator, then refuse (ConfigError, exit 2) session options that would be silently ignored: ADB
    server options with the simulator (it runs its own ADB server), simulator options with a device."""
    from engine.faces.pick import AUTO, SIM, resolve_serial

    if args.serial not in (None, AUTO, SIM):  # refused before anything looks for a device or an ADB server
        _refuse_simulator_options(args)
    resolve_serial(args)
    if args.serial is None:
        given = [flag for flag, value in (("--adb-host", args.adb_host), ("--adb-port", args.adb_port))
                 if value is not None]
        if given:
            raise ConfigError(f"{' and '.join(given)} given without --serial: the embedded simulator runs behind "
                              "its own ADB server (to reach a `sim serve`, pass --serial sim-0 too)")
        return
    _refuse_simulator_options(args)


def _refuse_simulator_options(args: argparse.Namespace) -> None:
    given = [flag for flag, value in (("--scenario", args.scenario), ("--seed", args.seed)) if value is not None]
    if given:
        raise ConfigError(f"{' and '.join(given)} given with --serial {args.serial}: simulator options apply to "
                          "the embedded simulator only (a `sim serve` takes them itself)")


def add_session_arguments(parser: argparse.ArgumentParser, *, results: bool = True) -> None:
    """The options that say which device, game and simulator a session opens (every device command has them)."""
    group = parser.add_argument_group("session")
    group.add_argument("--serial", default=os.environ.get("ENGINE_SERIAL") or "auto",
                       help="ADB serial of the phone or emulator; auto: the one device `devices` finds, the "
                            "embedded simulator when it finds none; sim: the embedded simulator (default: "
                            "$ENGINE_SERIAL, else auto)")
    group.add_argument("--emulator-path", action="append", metavar="DIR",
                       help="an emulator install folder --serial auto reads besides the standard ones (repeatable)")
    group.add_argument("--adb-host", help="ADB server host (default: ANDROID_ADB_SERVER_HOST or 127.0.0.1)")
    group.add_argument("--adb-port", type=port, help="ADB server port (default: ANDROID_ADB_SERVER_PORT or 5037)")
    group.add_argument("--graph", default=os.environ.get("ENGINE_GRAPH"),
                       help="page graph folder (default: the shipped default graph)")
    group.add_argument("--server", default=os.environ.get("ENGINE_SERVER"),
                       help="game server whose per-server values apply (default: the graph's first server)")
    group.add_argument("--assets", default=os.environ.get("ENGINE_ASSETS"),
                       help="asset pack folder (ALAS layout or ours); the simulator draws its own without one")
    group.add_argument("--policies", help="policy file whose policies replace the shipped ones of the same name")
    group.add_argument("--control", choices=("adb", "maatouch", "minitouch", "auto"),
                       default=os.environ.get("ENGINE_CONTROL"),
                       help="what taps go through: adb input, a touch agent, or auto (the fastest that starts; "
                            "health says which); default: $ENGINE_CONTROL, else the tap policy's control")
    group.add_argument("--scenario", default=os.environ.get("ENGINE_SCENARIO"),
                       help="simulator fault scenario YAML (embedded simulator only; default: $ENGINE_SCENARIO)")
    group.add_argument("--seed", type=int, default=None, help="simulator seed")
    group.add_argument("--transcript", default=os.environ.get("ENGINE_TRANSCRIPT_DIR"), metavar="DIR",
                       help="folder for the JSONL transcript, traces and error bundles "
                            "(default: $ENGINE_TRANSCRIPT_DIR, else none)")
    alas = parser.add_argument_group("ALAS (alas_wrapped: a user's own AzurLaneAutoScript tasks as alas:<Task>)")
    alas.add_argument("--alas", default=os.environ.get("ALAS_DIR"), metavar="DIR",
                      help="an ALAS checkout whose tasks alas_run runs in a worker (default: $ALAS_DIR)")
    alas.add_argument("--alas-python", default=os.environ.get("ALAS_PYTHON"), metavar="PATH",
                      help="the interpreter ALAS runs under (default: $ALAS_PYTHON, else the checkout's toolkit)")
    alas.add_argument("--alas-config", default=os.environ.get("ALAS_CONFIG"), metavar="NAME",
                      help="ALAS's instance, config/NAME.json (default: $ALAS_CONFIG, else alas, as ALAS itself)")
    alas.add_argument("--alas-lang", default=os.environ.get("ALAS_LANG"), metavar="LANG",
                      help="language of ALAS's task names and help: en-US, zh-CN, ja-JP or zh-TW "
                           "(default: $ALAS_LANG, else en-US)")
    if results:
        parser.add_argument("--json", action="store_true", help="print the whole ToolResult as JSON")


def open_tools(args: argparse.Namespace, on_event: Callable[[str, dict[str, Any]], None] | None = None, *,
               navigation: bool = True) -> tuple[Tools, Callable[[], None]]:
    """Open a session from the parsed session options; returns its tools and the session's close. `navigation`
    False: the device's own tools only (engine.runtime.session.Session.navigation).

    The serial is resolved (check_session_arguments: a scan, an ADB server probed) in a thread while this one
    imports the session's modules and loads its policies and graph, which need no device: the scan mostly waits on
    sockets (a dead server: adbserver.SERVER_PROBE_BOUND, 0.8 s), which bare ``health`` paid on top of that work.
    A refused flag is still refused before a session opens, and before a broken graph is reported."""
    from concurrent.futures import ThreadPoolExecutor

    from engine.device import adbserver, discovery, procnet  # noqa: F401  loaded before the thread starts: the
    from engine.faces import pick  # two threads never import at once

    auto = args.serial == pick.AUTO
    with ThreadPoolExecutor(1, thread_name_prefix="serial") as pool:
        checked = pool.submit(check_session_arguments, args)
        from engine.runtime.session import load_files, open_session

        try:
            files = load_files(args.graph, args.policies, args.server)
        except Exception:  # a broken graph (GraphError, ConfigError) is said after a refused flag, as it was
            checked.result()
            raise
        if auto and not checked.done():  # still waiting on a server: the simulator it falls back to, meanwhile
            import engine.runtime.devices  # noqa: F401
        checked.result()
    providers = outside_tasks(args)
    session = open_session(
        args.serial, graph_dir=args.graph, server=args.server, assets=args.assets, scenario=args.scenario,
        seed=args.seed, transcript_dir=args.transcript, policies_file=args.policies, adb_host=args.adb_host,
        adb_port=args.adb_port, control=getattr(args, "control", None), providers=providers,
        schedule_db=schedule_db(), navigation=navigation, files=files,
    )
    session.tools.on_event = on_event
    return session.tools, session.close


def schedule_db() -> str:
    """The scheduler's database the tools share: a path or a URL (engine.schedule.store.database_url: ENGINE_DB_URL,
    ENGINE_DB_URL_FILE, ENGINE_SCHEDULE_DB, else a file in ENGINE_HOME)."""
    from engine.schedule.store import database_url

    return database_url()


def outside_tasks(args: argparse.Namespace) -> list[Any]:
    """The task providers the options ask for: an ALAS checkout's tasks with --alas (ConfigError when wrong)."""
    if not getattr(args, "alas", None):
        given = [f for f, v in (("--alas-python", getattr(args, "alas_python", None)),
                                ("--alas-config", getattr(args, "alas_config", None)),
                                ("--alas-lang", getattr(args, "alas_lang", None))) if v]
        if given:
            raise ConfigError(f"{' and '.join(given)} given without --alas DIR (the ALAS checkout)")
        return []
    from alas_wrapped.checkout import Checkout
    from alas_wrapped.provider import AlasProvider

    # The interpreter is checked when ALAS's tasks are listed or run, not before: a goto needs no ALAS Python.
    return [AlasProvider(Checkout.open(args.alas, args.alas_python, args.alas_config,
                                       getattr(args, "alas_lang", None), defer_python=True))]


def exit_code(result: ToolResult) -> int:
    """0 ok, 1 ran but did not succeed, 2 bad input, 3 not implemented."""
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
    if data.get("expected") is not None and not result.ok:
        lines.append(f"  expected: {data['expected']}")
    for key, value in (data.get("values") or {}).items():
        lines.append(f"  {key}: {value}")
    for task in data.get("tasks") or []:
        state = "" if task.get("enabled") is None else \
            f" [{'enabled' if task['enabled'] else 'disabled'}, next run {task.get('next_run')}]"
        lines.append(f"  {task.get('name')}: {task.get('description', '')}".rstrip(": ") + state)
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


def emit(result: ToolResult, as_json: bool, out: TextIO) -> int:
    """Print `result` (human or JSON, secrets redacted: engine.core.redact) and return its exit code."""
    from engine.core.redact import redact_text

    text = json.dumps(result.to_dict(), ensure_ascii=False, default=str) if as_json else human(result)
    out.write(redact_text(text) + "\n")
    out.flush()
    return exit_code(result)


def progress(kind: str, entry: dict[str, Any]) -> None:
    """One stderr line per hop, dismissal, recovery rung and outside worker's output line, while a run goes on."""
    if kind == "action" and "hop" in entry:
        print(f"hop {entry.get('hop')}: {entry.get('source')} -> {entry.get('to')}", file=sys.stderr)
    elif kind == "dismiss":
        print(f"  dismissing {entry.get('popup')}", file=sys.stderr)
    elif kind == "recover":
        where = f"a dialog over {entry['page']}" if entry.get("page") else "unknown screen"
        print(f"  {where}: trying {entry.get('rung')}", file=sys.stderr)
    elif kind == "dialog_closed":
        print(f"  closed by {entry.get('rung')} ({entry.get('taps')} tap(s))", file=sys.stderr)
    elif kind == "worker_log":  # an outside worker's output line (alas_wrapped), secrets redacted
        from engine.core.redact import redact

        print(f"{entry.get('task')} | {redact(entry.get('line'))}", file=sys.stderr)


def check_image_path(path: str) -> Path:
    """Refuse (ConfigError, exit 2), before any device work, an image path whose type we cannot write, which is
    a folder, or whose folder cannot be made or written."""
    out = Path(path)
    if out.suffix.lower() not in IMAGE_SUFFIXES:
        raise ConfigError(f"{out}: the file name must end in {', '.join(IMAGE_SUFFIXES)}")
    if out.is_dir():
        raise ConfigError(f"cannot write {out}: it is a folder")
    folder = next((p for p in (out.parent, *out.parent.parents) if p.exists()), Path("."))
    if not folder.is_dir():
        raise ConfigError(f"cannot write {out}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise ConfigError(f"cannot write {out}: permission denied")
    return out


def save_image(result: ToolResult, path: Path) -> None:
    """Write a screenshot result's frame to `path` (PNG bytes as they are; other types re-encoded)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix.lower() == ".png":
            path.write_bytes(result.png)
        else:
            import cv2
            import numpy as np

            frame = cv2.imdecode(np.frombuffer(result.png, np.uint8), cv2.IMREAD_COLOR)
            if not cv2.imwrite(str(path), frame):
                raise OSError(f"cannot encode {path.suffix}")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None
    result.data["path"] = str(path)
    result.text += f", saved to {path}"


def call_tool(args: argparse.Namespace, name: str, arguments: dict[str, Any], out: TextIO | None = None, *,
              image: Path | None = None, tools: Tools | None = None, navigation: bool = True) -> int:
    """Open a session (unless `tools` is given; `navigation` as open_tools), call one tool, print its result; the
    exit code says how it went."""
    close: Callable[[], None] = lambda: None
    if tools is None:
        tools, close = open_tools(args, on_event=progress, navigation=navigation)
    try:
        result = tools.call(name, arguments)
        if image is not None and result.png:
            save_image(result, image)
    finally:
        close()
    return emit(result, args.json, out or sys.stdout)


def swipe(args: argparse.Namespace) -> int:
    """``python -m engine swipe X1 Y1 X2 Y2 [MS]``."""
    try:
        arguments = swipe_arguments(args.numbers)
    except ValueError as exc:
        return emit(make_result("adb_swipe", ok=False, status="bad_argument", text=str(exc)), args.json, sys.stdout)
    return call_tool(args, "adb_swipe", arguments)


def request(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The tool call ``cli``'s flags ask for."""
    if args.health:
        return "adb_health", {}
    if args.screenshot:
        return "adb_screenshot", {}
    if args.state:
        return "alas_state", {}
    if args.tap:
        return "adb_tap", {"x": args.tap[0], "y": args.tap[1]}
    if args.swipe:
        return "adb_swipe", swipe_arguments(args.swipe)
    if args.goto:
        return "alas_goto", {"page": args.goto}
    if args.run:
        return "alas_run", {"name": args.run}
    return "alas_tools", {}


def swipe_arguments(numbers: list[int]) -> dict[str, int]:
    """``X1 Y1 X2 Y2 [MS]`` as adb_swipe's arguments (ValueError for another count)."""
    if len(numbers) not in (4, 5):
        raise ValueError(f"a swipe takes X1 Y1 X2 Y2 [MS], not {len(numbers)} numbers")
    x1, y1, x2, y2, *ms = numbers
    return {"x1": x1, "y1": y1, "x2": x2, "y2": y2, **({"duration_ms": ms[0]} if ms else {})}


def run_cli(args: argparse.Namespace, out: TextIO, tools: Tools | None = None) -> int:
    """``python -m engine cli --FLAG``: run the one tool the flags name and print its result."""
    try:
        name, arguments = request(args)
    except ValueError as exc:  # arguments no tool would take: the same result a tool gives for them
        return emit(make_result("adb_swipe", ok=False, status="bad_argument", text=str(exc)), args.json, out)
    image = check_image_path(args.screenshot) if args.screenshot else None
    return call_tool(args, name, arguments, out, image=image, tools=tools)
