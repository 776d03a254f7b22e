"""``python -m engine assets ...``: import templates from an ALAS checkout, capture one from a device, list."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _import_alas(args: argparse.Namespace) -> int:
    from alas_wrapped.assets_import import import_alas
    from engine.config.loader import load_graph

    graph = load_graph(args.graph)
    report = import_alas(args.alas_root, args.server, args.out, graph)
    print(json.dumps(report.to_dict(), indent=1))
    for warning in report.warnings:
        print(f"warning: {warning.message} (server {args.server})", file=sys.stderr)
    if report.missing:
        print(f"{len(report.missing)} asset(s) missing from {args.alas_root} for server {args.server}",
              file=sys.stderr)
        return 1
    return 0


def _capture(args: argparse.Namespace) -> int:
    from engine.config.assetpacks import INDEX_FILE, DirectoryAssetPack, crop, new_index, save_index, write_template
    from engine.config.assets import Template
    from engine.config.loader import load_graph
    from engine.core.errors import ConfigError
    from engine.device import open_device
    from engine.runtime.devices import open_simulated

    graph = load_graph(args.graph).resolve(args.server)
    server = graph.server
    try:
        button = graph.button(args.name)
    except KeyError:
        raise ConfigError(f"no button {args.name!r} in the graph") from None
    name = button.asset if isinstance(button.asset, str) else f"captured/{button.name}"
    out = Path(args.out)
    index = DirectoryAssetPack(out).index if (out / INDEX_FILE).is_file() else new_index(server)
    device = open_device(args.serial, graph=graph) if args.serial else open_simulated(graph)
    try:
        frame = device.screenshot()
    finally:
        device.close()
    area = tuple(button.area)
    click = tuple(button.click) if button.click else None
    written = write_template(out, Template(name=name, frames=(crop(frame, area),), area=area, click=click), index)
    save_index(out, index)
    print(json.dumps({"name": name, "area": list(area), "files": [str(p) for p in written]}))
    return 0


def _list(args: argparse.Namespace) -> int:
    from engine.config.assetpacks import load_pack
    from engine.config.loader import load_graph

    # Only an ALAS folder needs the graph: its fallback server answers for files a server lacks.
    fallback = load_graph(args.graph).fallback_server if args.server else None
    pack = load_pack(args.dir, args.server, fallback=fallback)
    for name in pack.names():
        print(name)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("assets", help="template asset packs: import from ALAS, capture from a device, list")
    commands = parser.add_subparsers(dest="assets_command", metavar="ASSETS_COMMAND")
    parser.set_defaults(handler=lambda args: (parser.print_help(sys.stderr), 2)[1])

    imp = commands.add_parser("import-alas", help="import the templates the graph names from an ALAS checkout "
                              "(warns on stderr about templates off their graph area)")
    imp.add_argument("alas_root", metavar="ALAS_ROOT", help="ALAS checkout (with assets/) or its assets folder")
    imp.add_argument("--server", required=True, help="the game server whose templates are imported (en, cn, ...)")
    imp.add_argument("--out", required=True, metavar="DIR", help="the asset pack folder to write")
    imp.add_argument("--graph", default=None, metavar="GRAPH_DIR",
                     help="the graph whose buttons name the templates (default: the shipped default graph)")
    imp.set_defaults(handler=_import_alas)

    cap = commands.add_parser("capture", help="crop a button's template from a live screen at its declared area")
    cap.add_argument("name", metavar="BUTTON", help="the graph button whose declared area is cropped")
    cap.add_argument("--serial", default=None, help="device serial (default: the embedded simulator)")
    cap.add_argument("--out", default="assets", metavar="DIR", help="the asset pack folder (default: assets)")
    cap.add_argument("--graph", default=None, metavar="GRAPH_DIR",
                     help="graph folder (default: the shipped default graph)")
    cap.add_argument("--server", default=None, help="game server (default: the graph's first)")
    cap.set_defaults(handler=_capture)

    lst = commands.add_parser("list", help="list the template names of an asset folder")
    lst.add_argument("dir", help="the asset folder (ALAS layout or ours)")
    lst.add_argument("--server", default=None, help="list this server's templates (default: the graph's first)")
    lst.add_argument("--graph", default=None, metavar="GRAPH_DIR", help="whose fallback server an ALAS folder uses")
    lst.set_defaults(handler=_list)
