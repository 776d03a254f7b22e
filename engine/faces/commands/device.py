"""Subcommands that ask the device itself: ``health`` and ``screenshot``, each one tool call through engine.faces.cli.

Without ``--serial`` (or ENGINE_SERIAL) both take the only device a scan finds, else the embedded simulator
(engine.faces.pick), through the same adbutils path a phone takes.
"""

from __future__ import annotations

import argparse

from engine.faces.cli import add_session_arguments, call_tool, check_image_path

SERVER_BOUND = 1.0
"""Seconds ``health`` gives the ADB server (a probe, and starting one when none runs) before it answers without a
session: the tool surface promises health in under 2 s, and a session opens a graph and the simulator's peers."""


def _health(args: argparse.Namespace) -> int:
    """``health``: a named device behind no answering ADB server is reported at once (which: none, dead, cannot
    start, port held), before a session loads anything; otherwise the adb_health tool answers."""
    import sys
    import time

    from engine.faces.pick import AUTO, SIM

    if args.serial not in (None, AUTO, SIM) and args.scenario is None and args.seed is None:
        from engine.device import adbserver

        started = time.monotonic()
        down = adbserver.server_down(args.adb_host, args.adb_port, bound=SERVER_BOUND,
                                     on_start=lambda said: print(f"device: {said}", file=sys.stderr))
        if down:
            from engine.core.results import make_result
            from engine.device.health import Health
            from engine.faces.cli import emit

            health = Health(status="adb_server_down", serial=args.serial, error=down,
                            latency_ms=(time.monotonic() - started) * 1000)
            result = make_result("adb_health", ok=False, status="adb_server_down", text=f"device adb_server_down: "
                                 f"{down}", tool_success=True, state_verification="not_checked",
                                 elapsed_ms=health.latency_ms, extra={"health": health.to_dict()})
            return emit(result, args.json, sys.stdout)
        if not getattr(args, "alas", None):
            early = _device_not_there(args)
            if early is not None:
                return early
    return call_tool(args, "adb_health", {}, navigation=False)  # the device's probe: no observer or navigator


def _device_not_there(args: argparse.Namespace) -> int | None:
    """A serial the server does not list as a device (missing, offline, unauthorized) is answered by the device's
    own probe, without a session (a graph, an observer): None when it is there and the adb_health tool should run."""
    import sys

    from engine.core.results import make_result
    from engine.device.adb import AdbDevice
    from engine.faces.cli import emit

    device = AdbDevice(args.serial, host=args.adb_host, port=args.adb_port, control="adb")
    try:
        if device.listed_state() == "device":
            return None
        health = device.health()
    finally:
        device.close()
    if health.ok:
        return None
    result = make_result("adb_health", ok=False, status=health.status, text=f"device {health.status}"
                         + (f": {health.error}" if health.error else ""), tool_success=True,
                         state_verification="not_checked", elapsed_ms=health.latency_ms,
                         extra={"health": health.to_dict()})
    return emit(result, args.json, sys.stdout)


def register(sub: argparse._SubParsersAction) -> None:
    health = sub.add_parser("health", help="probe the ADB server, the device and its screen (exit 1 if unhealthy)")
    add_session_arguments(health)
    health.set_defaults(handler=_health)

    shot = sub.add_parser("screenshot", help="save one frame at the graph's resolution (a black frame is reported)")
    shot.add_argument("out", metavar="OUT.png", help="the PNG file to write")
    add_session_arguments(shot)
    shot.set_defaults(handler=lambda a: call_tool(a, "adb_screenshot", {}, image=check_image_path(a.out),
                                                  navigation=False))
