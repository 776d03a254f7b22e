"""Subcommands that ask the device itself: ``health`` and ``screenshot``, each one tool call through engine.faces.cli.

Without ``--serial`` (or ENGINE_SERIAL) both take the only device a scan finds, else the embedded simulator
(engine.faces.pick), through the same adbutils path a phone takes.
"""

from __future__ import annotations

import argparse

from engine.faces.cli import add_session_arguments, call_tool, check_image_path


def register(sub: argparse._SubParsersAction) -> None:
    health = sub.add_parser("health", help="probe the ADB server, the device and its screen (exit 1 if unhealthy)")
    add_session_arguments(health)
    health.set_defaults(handler=lambda a: call_tool(a, "adb_health", {}))

    shot = sub.add_parser("screenshot", help="save one frame at the graph's resolution (a black frame is reported)")
    shot.add_argument("out", metavar="OUT.png")
    add_session_arguments(shot)
    shot.set_defaults(handler=lambda a: call_tool(a, "adb_screenshot", {}, image=check_image_path(a.out)))
