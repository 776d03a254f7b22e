"""The tiny shell of a simulated phone: the commands an automation engine sends, answered from its game.

It understands screencap, input, wm size, dumpsys display, getprop, echo, am start / monkey (a relaunch), true and
false, joined by ';' or '&&', with ``$?`` expanded: enough for adbutils and Debian's ``adb`` client.
"""

from __future__ import annotations

import shlex
import struct
from typing import TYPE_CHECKING, Callable

import cv2
import numpy as np

if TYPE_CHECKING:
    from engine.sim.adb_protocol import SimDevice


def screencap_raw(frame: np.ndarray) -> bytes:
    """``screencap`` without -p: width, height, format (1 = RGBA_8888), colour space, then RGBA pixels."""
    h, w = frame.shape[:2]
    return struct.pack("<4I", w, h, 1, 0) + cv2.cvtColor(frame, cv2.COLOR_BGR2RGBA).tobytes()


def screencap_png(frame: np.ndarray) -> bytes:
    ok, png = cv2.imencode(".png", frame, [cv2.IMWRITE_PNG_COMPRESSION, 1])
    if not ok:  # pragma: no cover - cv2 encodes any uint8 BGR image
        raise RuntimeError("PNG encoding failed")
    return png.tobytes()


def _split_commands(command: str) -> list[str]:
    """Split a shell line on ';' and '&&' outside quotes (enough for adbutils' `cmd; echo X4EXIT:$?`)."""
    parts, current, quote, i = [], "", None, 0
    while i < len(command):
        ch = command[i]
        if quote:
            current += ch
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            current += ch
        elif ch == ";" or command.startswith("&&", i):
            parts.append(current)
            current = ""
            i += 1 if ch == ";" else 2
            continue
        else:
            current += ch
        i += 1
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def run_shell(device: SimDevice, command: str) -> tuple[bytes, bytes, bytes, int]:
    """Run a (tiny subset of a) shell line on the simulated phone: (stdout, stderr, both interleaved, exit code).

    The interleaved stream is what a v1 shell (a pty) shows: adbutils' shell2 parses its exit marker from it.
    """
    out, err, both, code = b"", b"", b"", 0
    for part in _split_commands(command):
        part = part.replace("$?", str(code))
        try:
            argv = shlex.split(part)
        except ValueError:
            argv = part.split()
        if not argv:
            continue
        out_i, err_i, code = _run_one(device, argv)
        out += out_i
        err += err_i
        both += err_i + out_i
    return out, err, both, code


def _run_one(device: SimDevice, argv: list[str]) -> tuple[bytes, bytes, int]:
    name, args = argv[0], argv[1:]
    handler: Callable | None = _COMMANDS.get(name)
    if handler is not None:
        try:
            return handler(device, args)
        except (ValueError, IndexError):
            return b"", f"{name}: bad arguments: {' '.join(args)}\n".encode(), 1
    return b"", f"/system/bin/sh: {name}: not found\n".encode(), 127


def _cmd_screencap(device: SimDevice, args: list[str]) -> tuple[bytes, bytes, int]:
    frame = device.game.frame()
    if "-p" in args:
        return screencap_png(frame), b"", 0
    return screencap_raw(frame), b"", 0


def _cmd_input(device: SimDevice, args: list[str]) -> tuple[bytes, bytes, int]:
    game = device.game
    args = list(args)
    while args and args[0] in ("-d", "touchscreen", "touchpad", "keyboard"):
        args = args[2:] if args[0] == "-d" else args[1:]
    if not args:
        return b"", b"usage: input [<source>] <command> [<arg>...]\n", 1
    verb, rest = args[0], args[1:]
    if verb == "tap":
        game.tap(int(float(rest[0])), int(float(rest[1])))
    elif verb in ("swipe", "draganddrop"):
        x1, y1, x2, y2 = (int(float(v)) for v in rest[:4])
        game.swipe(x1, y1, x2, y2, int(rest[4]) if len(rest) > 4 else 300)
    elif verb == "keyevent":
        for key in rest:
            if key not in ("--longpress", "--doubletap"):
                game.key(key)
    elif verb == "text":
        pass
    else:
        return b"", f"Error: Unknown command: {verb}\n".encode(), 1
    return b"", b"", 0


def _cmd_wm(device: SimDevice, args: list[str]) -> tuple[bytes, bytes, int]:
    width, height = device.game.graph.resolution
    if args[:1] == ["size"]:
        return f"Physical size: {width}x{height}\n".encode(), b"", 0
    if args[:1] == ["density"]:
        return b"Physical density: 240\n", b"", 0
    return b"", b"wm: unknown command\n", 1


def _cmd_dumpsys(device: SimDevice, args: list[str]) -> tuple[bytes, bytes, int]:
    width, height = device.game.graph.resolution
    if args[:1] == ["display"]:
        text = (
            "DISPLAY MANAGER (dumpsys display)\n"
            f"  mDisplayWidth={width}\n  mDisplayHeight={height}\n"
            f'  DisplayDeviceInfo{{"Built-in Screen": uniqueId="local:0", {width} x {height}, modeId 1, '
            "density 240, rotation 0}\n"
            f"  mOverrideDisplayInfo=DisplayInfo{{\"Built-in Screen\", displayId 0, real {width} x {height}, "
            f"largest app {width} x {height}, rotation 0}}\n"
            "  orientation=0\n"
        )
        return text.encode(), b"", 0
    if args[:1] == ["window"]:
        return b"  mCurrentFocus=Window{0 u0 com.sim.game/com.sim.game.MainActivity}\n", b"", 0
    return b"", b"", 0


def _cmd_getprop(device: SimDevice, args: list[str]) -> tuple[bytes, bytes, int]:
    props = {
        "ro.product.model": "SimGame",
        "ro.product.manufacturer": "engine.sim",
        "ro.product.cpu.abi": "x86_64",
        "ro.build.version.sdk": "30",
        "ro.build.version.release": "11",
        "ro.serialno": device.serial,
        "sys.boot_completed": "1",
    }
    if args:
        return (props.get(args[0], "") + "\n").encode(), b"", 0
    return "".join(f"[{k}]: [{v}]\n" for k, v in props.items()).encode(), b"", 0


def _cmd_echo(device: SimDevice, args: list[str]) -> tuple[bytes, bytes, int]:
    if args[:1] == ["-n"]:
        return " ".join(args[1:]).encode(), b"", 0
    return (" ".join(args) + "\n").encode(), b"", 0


def _cmd_restart(device: SimDevice, args: list[str]) -> tuple[bytes, bytes, int]:
    # `am start ...` / `monkey -p pkg ...` relaunch the app: the game restarts at its login screen.
    if args[:1] in (["start"], ["start-activity"]) or "-p" in args:
        device.game.restart()
        return b"Starting: Intent { }\n", b"", 0
    return b"", b"", 0


_COMMANDS: dict[str, Callable[[SimDevice, list[str]], tuple[bytes, bytes, int]]] = {
    "screencap": _cmd_screencap,
    "input": _cmd_input,
    "wm": _cmd_wm,
    "dumpsys": _cmd_dumpsys,
    "getprop": _cmd_getprop,
    "echo": _cmd_echo,
    "true": lambda d, a: (b"", b"", 0),
    "false": lambda d, a: (b"", b"", 1),
    "am": _cmd_restart,
    "monkey": _cmd_restart,
}
