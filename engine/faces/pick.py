"""Which device a command drives: ``--serial auto`` (the default) finds the devices and takes the only one, ``sim``
is the embedded simulator, anything else is a serial (a MuMu 12 port that moved by up to 2 is followed)."""

from __future__ import annotations

import argparse
import sys

from engine.core.errors import ConfigError

AUTO, SIM = "auto", "sim"


def resolve_serial(args: argparse.Namespace) -> None:
    """Replace ``args.serial`` by the serial to open, or None for the embedded simulator; say on stderr what auto
    picked. Several usable devices: ConfigError (exit 2) listing them and how to choose. Idempotent."""
    from engine.device import discovery

    serial = getattr(args, "serial", None)
    if serial is None:
        return
    if serial == SIM:
        args.serial = None
        return
    if serial != AUTO:
        serial = discovery.follow_bluestacks(serial, getattr(args, "emulator_path", None) or ())
        moved = discovery.follow_mumu(serial)
        if moved != serial:
            print(f"device: nothing answers on {serial}; MuMu moved it to {moved}, using that", file=sys.stderr)
        args.serial = moved
        _check_server(args)
        return
    if getattr(args, "scenario", None) is not None or getattr(args, "seed", None) is not None:
        args.serial = None  # simulator options ask for the simulator
        return
    found = discovery.scan(adb_host=getattr(args, "adb_host", None), adb_port=getattr(args, "adb_port", None),
                           emulator_paths=getattr(args, "emulator_path", None) or (), details=False)
    usable = found.usable
    if not usable:
        args.serial = None
        server = found.server or {}
        down = server.get("down") or f"no ADB server at {server.get('address')}"  # or a dead one: which, said
        why = "" if server.get("running") else f", {down}" + (" (none was started)" if down.startswith("no ") else "")
        print(f"device: no device found ({found.elapsed_ms:.0f} ms scan{why}); using the built-in simulator "
              "(`python -m engine devices` says what was looked at)", file=sys.stderr)
        return
    if len(usable) > 1:
        listing = "; ".join(discovery.describe(row) for row in usable)
        raise ConfigError(f"{len(usable)} devices found: {listing}. Choose one with --serial SERIAL (or "
                          f"ENGINE_SERIAL=SERIAL), or --serial sim for the built-in simulator")
    args.serial = usable[0].serial
    print(f"device: using {discovery.describe(usable[0])}, the only device found", file=sys.stderr)
    _check_server(args)


def _check_server(args: argparse.Namespace) -> None:
    """One ADB server, no fights: a port held by something else is an error naming it (exit 2); another adb
    version is said on stderr with both versions and the fix (engine.device.adbserver)."""
    from engine.core.errors import AdbServerDown
    from engine.device import adbserver

    host, port = getattr(args, "adb_host", None), getattr(args, "adb_port", None)
    try:
        found = adbserver.settle(host, port)
    except AdbServerDown as exc:
        raise ConfigError(str(exc)) from None
    if found.problem:
        print(f"warning: {found.problem}. {found.fix}", file=sys.stderr)
    if found.listening == "none" and found.address.startswith("127.0.0.1:"):
        # adb's own convention: the client starts the server it needs; this one is recorded as the engine's
        try:
            version = adbserver.start(host, port)
            print(f"device: started an ADB server on {found.address} (1.0.{version}, {found.binary}); it stays up "
                  "for your other adb tools", file=sys.stderr)
        except AdbServerDown as exc:
            print(f"device: no ADB server at {found.address} and none could be started: {exc}", file=sys.stderr)
