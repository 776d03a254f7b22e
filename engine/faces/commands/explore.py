"""``python -m engine explore --out DIR``: play a game nobody has described, from pixels alone, and write a draft
graph folder (draft.yaml, graph YAML, its asset pack, evidence, the recording).

The device opens like every other command's: the built-in simulator playing --graph when no --serial is given, else
the phone. Progress goes to stderr, a JSON summary to stdout. Re-running with the same --out continues its
recording (--resume says so explicitly and refuses a folder without one).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from engine.core.errors import ConfigError
from engine.faces.cli import check_session_arguments

SIM_PACE = 0.5
"""The built-in simulator answers at once: its screens are waited for half as long as a phone's."""


def _resolution(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not WIDTHxHEIGHT (for example 1280x720)") from None
    if not (64 <= w <= 8192 and 64 <= h <= 8192):
        raise argparse.ArgumentTypeError(f"{text} is not a screen size")
    return w, h


def _reader():
    from verifiers.ocr import find_text

    # Every line found, however unsure (drafting names pages by confident ones; engine.explore.words compares the
    # shapes of the unsure ones).
    return lambda frame: [(b.text, b.confidence, b.box) for b in find_text(frame, min_confidence=0.0)]


def _namer(graph_dir: str, assets: str | None, server: str | None):
    """Names from the graph being extended: its observer names the pages it knows (--from)."""
    from engine.faces.commands.observe import build_observer

    pack = assets or (str(Path(graph_dir) / "assets") if (Path(graph_dir) / "assets").is_dir() else None)
    observer = build_observer(graph_dir, pack, server)
    return lambda frame: observer.observe(frame).page


def _open(args: argparse.Namespace):
    """(device, restart, app, pace) as the options ask."""
    from engine.config.loader import load_graph

    from_graph = load_graph(args.from_graph).resolve(args.server) if args.from_graph else None
    if args.serial is None:
        from engine.runtime.devices import open_simulated
        from engine.sim import Scenario, style_beside
        from engine.sim.shell import app_names

        graph = load_graph(args.graph).resolve(args.server)
        scenario = Scenario.from_file(args.scenario) if args.scenario else None
        pack = None
        if args.assets:
            from engine.config.assetpacks import load_pack

            pack = load_pack(args.assets, graph.server, fallback=graph.fallback_server)
        device = open_simulated(graph, scenario=scenario, seed=args.seed or 0, assets=pack,
                                style=style_beside(args.graph))  # a generated game is drawn in its own style
        package, activity = app_names(graph)
        return device, (lambda: device.restart_app(package, activity)), None, SIM_PACE
    from engine.device import open_device
    from engine.device.apps import foreground_app

    size = args.resolution or (tuple(from_graph.resolution) if from_graph is not None else None)
    if size is None:
        size = _device_shape(args)
    device = open_device(args.serial, graph=_Size(size), adb_host=args.adb_host, adb_port=args.adb_port)
    package = args.package or (_one(from_graph.app.package) if from_graph is not None and from_graph.app else None)
    activity = args.activity or (_one(from_graph.app.activity) if from_graph is not None and from_graph.app else None)
    if package is None:  # the game is the app in front when the explore starts
        package, activity = foreground_app(device) or (None, None)
        print(f"explore: the game is {package}/{activity}, the app in the foreground (--package to say otherwise)"
              if package else "explore: no app in the foreground to restart the game with (--package names it)",
              file=sys.stderr, flush=True)
    restart = (lambda: device.restart_app(package, activity)) if package else None
    app = {"package": package, "activity": activity} if package and activity else None
    return device, restart, app, 1.0


REFERENCE_LONG_SIDE = 1280
"""The long side of the draft's reference frame when the device's is longer (its frames are scaled to it, as ALAS
keeps 1280x720 on every device): the explorer's regions and sketches are measured in frames of about this size."""


def _device_shape(args: argparse.Namespace) -> tuple[int, int]:
    """The reference size for this device: its first frame's shape (orientation and aspect), the long side at most
    REFERENCE_LONG_SIDE."""
    from engine.core.errors import EngineError
    from engine.device import open_device

    probe = open_device(args.serial, graph=_Size((1280, 720)), adb_host=args.adb_host, adb_port=args.adb_port)
    try:
        try:
            probe.screenshot(allow_black=True)
        except EngineError:  # a frame across the probe's orientation still says its size
            pass
        native = probe.frame_size
    finally:
        probe.close()
    if native is None:
        raise ConfigError(f"--serial {args.serial}: the device sent no frame to take its screen size from; "
                          "pass --resolution WIDTHxHEIGHT")
    scale = min(1.0, REFERENCE_LONG_SIDE / max(native))
    size = (max(1, round(native[0] * scale)), max(1, round(native[1] * scale)))
    print(f"explore: the device shows {native[0]}x{native[1]}; the draft's frames are {size[0]}x{size[1]}",
          file=sys.stderr, flush=True)
    return size


class _Size:
    def __init__(self, size: tuple[int, int]) -> None:
        self.resolution = size


def _one(value):
    return next(iter(value.values())) if isinstance(value, dict) else value


def _run(args: argparse.Namespace) -> int:
    from engine.explore.recording import FILE
    from engine.explore.run import explore

    check_session_arguments(args)
    out = Path(args.out)
    if args.resume and not (out / FILE).is_file():
        raise ConfigError(f"--resume: {out} holds no {FILE} to continue", file=str(out))
    if args.taps is not None and args.taps < 1 or args.minutes <= 0:
        raise ConfigError("--taps must be at least 1 and --minutes more than 0")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file, not a folder", file=str(out))
    namer = _namer(args.from_graph, args.assets, args.server) if args.from_graph else None
    device, restart, app, pace = _open(args)
    try:
        result = explore(device, out, taps=args.taps, minutes=args.minutes, restart=restart,
                         reader=None if args.no_ocr else _reader(), namer=namer,
                         game=args.game or f"draft_{out.resolve().name}".replace("-", "_"),
                         server=args.server or "en", app=app, from_graph=args.from_graph,
                         progress=lambda line: print(line, file=sys.stderr, flush=True), pace=pace)
    finally:
        device.close()
    from engine.config.loader import check_graph

    report = check_graph(out)
    draft = result.draft
    why = ("the device failed" if result.device_failed else "no page was drafted" if not draft.pages else
           "the draft does not validate" if not report.ok else None)
    summary = {"ok": why is None, "why": why, "out": str(out), "pages": len(draft.pages), "links": len(draft.links),
               "popups": len(draft.popups), "loading_screens": len(draft.loading), "review": len(draft.review),
               "taps": result.taps, "restarts": result.restarts, "minutes": round(result.seconds / 60.0, 2),
               "stopped": result.stopped_because, "validate": report.summary()}
    print(json.dumps(summary))
    if why is not None:
        print(f"explore: not ok: {why} ({result.stopped_because}); the partial draft is in {out}", file=sys.stderr)
    return 0 if why is None else 1


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("explore", help="explore a game from pixels alone and write a draft graph folder")
    parser.add_argument("--out", required=True, metavar="DIR", help="the draft folder (continued when it has a "
                                                                    "recording)")
    parser.add_argument("--serial", default=None, help="ADB serial of the phone (default: the built-in simulator)")
    parser.add_argument("--adb-host", help="ADB server host (with --serial)")
    parser.add_argument("--adb-port", type=int, help="ADB server port (with --serial)")
    parser.add_argument("--minutes", type=float, default=20.0, help="time budget (default 20)")
    parser.add_argument("--taps", type=int, default=None,
                        help="action cap: taps, swipes and keys (default: none, --minutes ends the run)")
    parser.add_argument("--server", default=None, help="game server the draft is for (default: en)")
    parser.add_argument("--from", dest="from_graph", metavar="GRAPH", default=None,
                        help="a graph to extend: its observer names the pages it knows")
    parser.add_argument("--resume", action="store_true", help="continue the recording in --out (required there)")
    parser.add_argument("--game", default=None, help="the draft graph's game name (default: draft_<out folder>)")
    parser.add_argument("--package", default=None, help="the game's Android package, restarted when stuck (default: "
                                                         "--from's, else the app in the foreground at the start)")
    parser.add_argument("--activity", default=None, help="the game's launcher activity (with --package)")
    parser.add_argument("--resolution", type=_resolution, default=None,
                        help="reference size of frames on a phone, WIDTHxHEIGHT (default: --from's, else the "
                             "device's first frame, its long side at most 1280)")
    parser.add_argument("--no-ocr", action="store_true", help="do not read titles (numbered page names)")
    sim = parser.add_argument_group("built-in simulator (no --serial)")
    sim.add_argument("--graph", default=None, help="the graph the simulator plays (default: the shipped one)")
    sim.add_argument("--assets", default=None, help="asset pack the simulator draws with (and --from's observer "
                                                    "uses; default for --from: GRAPH/assets when there)")
    sim.add_argument("--scenario", default=None, help="simulator fault scenario YAML")
    sim.add_argument("--seed", type=int, default=None, help="simulator seed")
    parser.set_defaults(handler=_run)
