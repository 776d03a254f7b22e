"""``devices``: every device the engine can reach without the user knowing a port (engine.device.discovery).

    python -m engine devices [--json] [--emulator-path DIR ...] [--adb-host H] [--adb-port P] [--graph DIR]
    python -m engine devices --bench [--serial S] [--count N] [--no-touch] [--json]

A row says serial, emulator and instance, state (and what to do about it), resolution, and the game's package when
it is installed; then what the scan could not read, and the ADB server's version against the engine's adb.
Exit 0 when at least one device is usable, 1 when none is.

``--bench`` times every capture and touch method on one device (engine.device.bench), prints the table and stores
the fastest lossless pick of each kind for that serial; every later command uses it. Exit 0 when a capture method
was picked, 1 when none worked, 2 for bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

DEFAULT_COUNT = 10


def _package(graph_dir: str | None) -> str | None:
    """The game's package from the graph, when it declares its app (a graph that does not load gives none)."""
    try:
        from engine.config.loader import load_graph

        graph = load_graph(graph_dir) if graph_dir else load_graph()
    except Exception:  # noqa: BLE001 - the listing works without the game's package
        return None
    app = getattr(graph, "app", None)
    return getattr(app, "package", None)


def _bench(args: argparse.Namespace) -> int:
    from engine.core.errors import ConfigError
    from engine.device import adbserver, bench, discovery
    from engine.device.adb import AdbDevice

    down = adbserver.server_down(args.adb_host, args.adb_port, bound=2.0)
    if down:
        print(f"no benchmark: {down}", file=sys.stderr)
        return 1
    serial = args.serial
    if not serial:
        found = discovery.scan(adb_host=args.adb_host, adb_port=args.adb_port,
                               emulator_paths=args.emulator_path or (), details=False)
        if len(found.usable) != 1:
            raise ConfigError(f"{len(found.usable)} usable devices found: name one with --serial SERIAL")
        serial = found.usable[0].serial
    print(f"benchmarking {serial}: {args.count} frames per capture method"
          f"{'' if args.no_touch else ' and no-op touches per touch method'}", file=sys.stderr)
    with AdbDevice(serial, host=args.adb_host, port=args.adb_port) as device:
        report = bench.run(device, args.count, touch=not args.no_touch)
    if report.picks.get("capture"):
        bench.save(report)
    print(json.dumps(report.to_dict()) if args.json else bench.table(report))
    return 0 if report.picks.get("capture") else 1


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"{value} is not in 1..1000")
    return value


def _devices(args: argparse.Namespace) -> int:
    from engine.device import adbserver, discovery

    if args.bench:
        return _bench(args)
    if args.serial or args.no_touch or args.count != DEFAULT_COUNT:
        from engine.core.errors import ConfigError

        raise ConfigError("--serial, --count and --no-touch go with --bench")

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
    p.add_argument("--bench", action="store_true",
                   help="time every capture method (raw, gzip, nc, png) and touch method (adb, maatouch, minitouch) "
                        "on one device, print p50/p95/fps and a lossless check, and store the fastest lossless pick "
                        "of each kind for that serial under ENGINE_HOME (every later command uses it)")
    p.add_argument("--serial", help="with --bench: the device to measure (default: the only usable device found)")
    p.add_argument("--count", type=_count, default=DEFAULT_COUNT,
                   help=f"with --bench: frames (and touches) timed per method, 1..1000 (default {DEFAULT_COUNT})")
    p.add_argument("--no-touch", action="store_true", help="with --bench: time the capture methods only")
    p.set_defaults(handler=_devices)
