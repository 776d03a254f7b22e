"""``python -m engine sim``: serve the simulated game over the ADB protocol, render one of its pages, or generate a
game from a seed (engine.sim.generate)."""

from __future__ import annotations

import argparse
import logging
import sys
import threading

from engine.core.errors import ConfigError
from engine.faces.cli import port

log = logging.getLogger(__name__)


def _build_game(args: argparse.Namespace):
    from engine.config.loader import load_graph
    from engine.config.simstate import state_beside
    from engine.sim import SimGame, style_beside
    from engine.sim.scenario import Scenario

    graph = load_graph(args.graph).resolve(args.server)
    assets = None
    if args.assets:
        from engine.config.assetpacks import load_pack

        assets = load_pack(args.assets, graph.server, fallback=graph.fallback_server)
    scenario = Scenario.from_file(args.scenario) if getattr(args, "scenario", None) else None
    style = style_beside(args.graph)
    if style is not None:  # a graph folder drawn in its own style (engine.sim.style), as `sim generate` writes
        from engine.sim.styledgame import StyledGame

        return StyledGame(graph, style, assets=assets, scenario=scenario, seed=getattr(args, "seed", None),
                          state=state_beside(args.graph, graph))
    return SimGame(graph, assets=assets, scenario=scenario, seed=getattr(args, "seed", None),
                   state=state_beside(args.graph, graph))


def _serve(args: argparse.Namespace) -> int:
    from engine.sim import FakeAdbServer
    from engine.sim.adbd import AdbdServer, emulator_serial, notify_adb_server

    if args.adbd is not None and args.port:
        raise ConfigError("--adbd PORT serves the device side of ADB on its own port; --port is for the fake ADB "
                          "server (the host side): give one of them")
    if args.adbd is None and (args.model is not None or args.notify_adb_server is not None):
        raise ConfigError("--model and --notify-adb-server are for a simulated emulator: they need --adbd PORT")
    game = _build_game(args)
    stop = threading.Event()
    wanted = args.adbd if args.adbd is not None else args.port
    try:
        if args.adbd is not None:
            server = AdbdServer(game, host=args.host, port=args.adbd, serial=args.serial, model=args.model).start()
        else:
            server = FakeAdbServer({args.serial or "sim-0": game}, host=args.host, port=args.port).start()
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{wanted}: {exc}") from None
    if args.adbd is not None:
        if args.notify_adb_server is not None:
            notify_adb_server(server.port, args.notify_adb_server)
        also = emulator_serial(server.port)
        print(f"emulator {server.serial} (adbd) on {args.host}:{server.port}; adb connect {args.host}:{server.port}"
              + (f" (an adb server started now also lists it as {also})" if also else ""), file=sys.stderr, flush=True)
    else:
        print(f"serving {args.serial or 'sim-0'} on {args.host}:{server.port}", file=sys.stderr, flush=True)
    try:
        # Bounded waits so Ctrl-C is seen promptly; `--for` bounds the whole run (scripts, smoke tests).
        deadline = args.seconds
        while not stop.wait(0.2):
            if deadline is not None:
                deadline -= 0.2
                if deadline <= 0:
                    break
    except KeyboardInterrupt:
        print("stopping", file=sys.stderr)
    finally:
        server.stop()
    return 0


def _render(args: argparse.Namespace) -> int:
    import cv2

    from engine.faces.cli import check_image_path

    check_image_path(args.out)
    game = _build_game(args)
    try:
        game.goto(args.page)
    except KeyError:
        raise ConfigError(f"no page {args.page!r} in the graph") from None
    for name in args.popup or []:
        try:
            game.show_popup(name)
        except KeyError:
            raise ConfigError(f"no popup {name!r} in the graph") from None
    try:
        written = cv2.imwrite(args.out, game.frame())
    except cv2.error:
        written = False
    if not written:
        raise ConfigError(f"cannot write {args.out} (use a .png name in an existing folder)")
    print(args.out)
    return 0


def _generate(args: argparse.Namespace) -> int:
    from engine.sim.generate import generate

    try:
        folder = generate(args.seed, args.out)
    except OSError as exc:
        raise ConfigError(f"cannot write the game into {args.out}: {exc.strerror or exc}") from None
    print(folder)
    return 0


def seconds(text: str) -> float:
    """An argparse type: a positive, finite number of seconds."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} seconds must be positive and finite")
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--graph", help="graph folder (default: the shipped default graph)")
    parser.add_argument("--assets", help="asset pack folder (ALAS layout or ours); default: synthetic art")
    parser.add_argument("--server", help="game server whose values to use (default: the graph's first)")


def register(sub: argparse._SubParsersAction) -> None:
    sim = sub.add_parser("sim", help="the simulated game: serve it over ADB, render its pages")
    verbs = sim.add_subparsers(dest="sim_command", metavar="VERB")

    serve = verbs.add_parser("serve", help="run a fake ADB server backed by the simulated game until Ctrl-C")
    _common(serve)
    serve.add_argument("--port", type=port, default=0, help="port to listen on (default: a free one)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--serial", default=None,
                       help="the device's serial (default sim-0; with --adbd its ro.serialno, default sim-PORT)")
    serve.add_argument("--adbd", type=port, default=None, metavar="PORT",
                       help="stand as an emulator: the device side of ADB (adbd) on PORT, for a real adb server to "
                       "`adb connect` (5555..5585: also found at its start as emulator-<PORT-1>); run it again for "
                       "more emulators")
    serve.add_argument("--model", default=None, help="with --adbd: ro.product.model (default SimGame_PORT)")
    serve.add_argument("--notify-adb-server", type=port, default=None, metavar="ADB_PORT",
                       help="with --adbd: tell the adb server on this port that the emulator is up (host:emulator:, "
                       "as an Android emulator tells 5037), so a running server lists it as emulator-<PORT-1>")
    serve.add_argument("--scenario", help="fault scenario YAML (engine.sim.scenario.Scenario)")
    serve.add_argument("--seed", type=int, default=None, help="seed of the scenario's faults")
    serve.add_argument("--for", dest="seconds", type=seconds, default=None, help="stop after this many seconds")
    serve.set_defaults(handler=_serve)

    render = verbs.add_parser("render", help="write one page (optionally under popups) as a PNG")
    _common(render)
    render.add_argument("page", help="the page to draw, by name")
    render.add_argument("out", help="the PNG file to write")
    render.add_argument("--popup", action="append", help="show this popup on top (repeatable)")
    render.set_defaults(handler=_render)

    generate = verbs.add_parser("generate", help="write a generated game (graph YAML and its drawing style) from a "
                                "seed into a folder the simulator plays like any graph")
    generate.add_argument("--seed", type=int, required=True, help="the game's seed: the same seed writes the same "
                          "game, byte for byte")
    generate.add_argument("--out", required=True, help="folder to write the game into (created)")
    generate.set_defaults(handler=_generate)

    sim.set_defaults(handler=lambda args: (sim.print_help(sys.stderr), 2)[1])
