"""Subcommands that talk to the device itself: ``health`` and ``screenshot``.

Without ``--serial`` (or ENGINE_SERIAL) both run against the embedded simulator, through the same adbutils path
a phone takes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import cv2

from engine.errors import ConfigError


def _add_device_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--serial", default=os.environ.get("ENGINE_SERIAL"),
        help="device serial, e.g. 127.0.0.1:21503 for MEmu (default: ENGINE_SERIAL, else the embedded simulator)",
    )
    parser.add_argument("--adb-host", help="ADB server host (default: ANDROID_ADB_SERVER_HOST or 127.0.0.1)")
    parser.add_argument("--adb-port", type=int, help="ADB server port (default: ANDROID_ADB_SERVER_PORT or 5037)")
    parser.add_argument("--policies", type=Path, help="policy file overriding the shipped policies")


def _open(args: argparse.Namespace):
    from engine.device import open_device
    from engine.policies import load_policies

    return open_device(
        args.serial, policies=load_policies(args.policies), adb_host=args.adb_host, adb_port=args.adb_port
    )


def _health(args: argparse.Namespace) -> int:
    device = _open(args)
    try:
        health = device.health()
    finally:
        device.close()
    if args.json:
        print(json.dumps(health.to_dict()))
    else:
        print(health.describe())
    return 0 if health.ok else 1


def _screenshot(args: argparse.Namespace) -> int:
    out: Path = args.out
    if out.suffix.lower() not in (".png", ".jpg", ".jpeg", ".bmp"):
        raise ConfigError(f"{out}: the file name must end in .png, .jpg or .bmp")
    device = _open(args)
    try:
        frame = device.screenshot(allow_black=args.allow_black)
    finally:
        device.close()
    if not cv2.imwrite(str(out), frame):
        print(f"error: cannot write {out}", file=sys.stderr)
        return 1
    height, width = frame.shape[:2]
    print(json.dumps({"ok": True, "path": str(out), "width": width, "height": height, "serial": device.serial,
                      "method": device.screenshot_method}))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    health = sub.add_parser("health", help="probe the ADB server, the device and its screen (exit 1 if unhealthy)")
    _add_device_args(health)
    health.add_argument("--json", action="store_true", help="print the health record as JSON")
    health.set_defaults(handler=_health)

    shot = sub.add_parser("screenshot", help="save one frame at the graph's resolution")
    shot.add_argument("out", type=Path, metavar="OUT.png")
    _add_device_args(shot)
    shot.add_argument("--allow-black", action="store_true", help="save black or flat frames instead of failing")
    shot.set_defaults(handler=_screenshot)
