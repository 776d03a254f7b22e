"""``devices``: every device the engine can reach without the user knowing a port (engine.device.discovery).

    python -m engine devices [--json] [--emulator-path DIR ...] [--adb-host H] [--adb-port P] [--graph DIR]

A row says serial, emulator and instance, state (and what to do about it), resolution, and the game's package when
it is installed; then what the scan could not read, and the ADB server's version against the engine's adb.
Exit 0 when at least one device is usable, 1 when none is.
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _package(graph_dir: str | None) -> str | None:
    """The game's package from the graph, when it declares its app (a graph that does not load gives none)."""
    try:
        from engine.config.loader import load_graph

        graph = load_graph(graph_dir) if graph_dir else load_graph()
    except Exception:  # noqa: BLE001 - the listing works without the game's package
        return None
    app = getattr(graph, "app", None)
    return getattr(app, "package", None)


def _devices(args: argparse.Namespace) -> int:
    from engine.device import adbserver, discovery

    found = discovery.scan(adb_host=args.adb_host, adb_port=args.adb_port, emulator_paths=args.emulator_path or (),
                           package=_package(args.graph))
    server = adbserver.check(args.adb_host, args.adb_port, listening=found.server.get("running"),
                             version=found.server.get("version"))
    if args.json:
        print(json.dumps({**found.to_dict(), "adb": server.to_dict()}, ensure_ascii=False))
        return 0 if found.usable else 1
    if not found.rows:
        print("no device found")
    for row in found.rows:
        print(discovery.describe(row))
        extra = [f"{k}: {v}" for k, v in (("resolution", row.resolution), ("model", row.model),
                                          ("game installed", row.package), ("also", ", ".join(row.aliases)),
                                          ("note", row.note)) if v]
        if extra:
            print("    " + "; ".join(extra))
        if row.state != "device":
            print(f"    what to do: {row.what_to_do}")
        print(f"    found by: {', '.join(row.found_by)}")
        for command in row.restart:
            print(f"    restart: {command}")
    for problem in found.problems:
        print(f"could not read: {problem}")
    print(f"adb: {server.describe()}")
    print(f"scan: {found.elapsed_ms:.0f} ms; use one with --serial SERIAL (default auto: the only usable device)",
          file=sys.stderr)
    return 0 if found.usable else 1


def register(sub: argparse._SubParsersAction) -> None:
    from engine.faces.cli import port

    p = sub.add_parser("devices", help="list every device the engine can reach: the ADB server's list, installed "
                                       "emulator instances, and a probe of their default ports")
    p.add_argument("--json", action="store_true", help="print the scan as JSON")
    p.add_argument("--emulator-path", action="append", metavar="DIR",
                   help="an emulator's install (or data) folder to read besides the standard ones (repeatable; "
                        "also $ENGINE_EMULATOR_PATHS)")
    p.add_argument("--adb-host", help="ADB server host (default: ANDROID_ADB_SERVER_HOST or 127.0.0.1)")
    p.add_argument("--adb-port", type=port, help="ADB server port (default: ANDROID_ADB_SERVER_PORT or 5037)")
    p.add_argument("--graph", default=os.environ.get("ENGINE_GRAPH"),
                   help="page graph folder, for the game's package (default: the shipped default graph)")
    p.set_defaults(handler=_devices)
