"""The tiny shell of a simulated phone: the commands an automation engine sends, answered from its game.

It understands screencap, input, wm size, dumpsys display / window, getprop, echo, pm list packages, pidof, am start /
force-stop and monkey (the game's app, named by the graph's ``app``), ls, chmod, rm, true and false, and toybox's
gzip, nc and cat (engine.sim.toybox), joined by ';' or '&&' and piped with '|', with ``$?`` expanded and
``VAR=value`` prefixes accepted: enough for adbutils, Debian's ``adb`` client, ALAS and MaaFramework's capture
pipelines. A stopped app shows a black launcher and ignores touches.
"""

from __future__ import annotations

import shlex
import struct
from typing import TYPE_CHECKING, Callable

import cv2
import numpy as np

from engine.sim.toybox import PIPED

if TYPE_CHECKING:
    from engine.sim.simdevice import SimDevice


def screencap_raw(frame: np.ndarray) -> bytes:
    """``screencap`` without -p: width, height, format (1 = RGBA_8888), colour space, then RGBA pixels."""
    h, w = frame.shape[:2]
    return struct.pack("<4I", w, h, 1, 0) + cv2.cvtColor(frame, cv2.COLOR_BGR2RGBA).tobytes()


def screencap_png(frame: np.ndarray) -> bytes:
    ok, png = cv2.imencode(".png", frame, [cv2.IMWRITE_PNG_COMPRESSION, 1])
    if not ok:  # pragma: no cover - cv2 encodes any uint8 BGR image
        raise RuntimeError("PNG encoding failed")
    return png.tobytes()


def app_names(graph) -> tuple[str, str]:
    """(package, activity) of the game's app as the graph declares it (its first server's when unresolved)."""
    app = getattr(graph, "app", None)
    if app is None:
        package = "com.sim." + "".join(ch for ch in graph.game.lower() if ch.isalnum())
        return package, package + ".MainActivity"

    def one(value):
        if isinstance(value, dict):
            return value.get(graph.server or graph.servers[0]) or value.get(graph.fallback_server)
        return value

    return one(app.package), one(app.activity)


def device_frame(device: SimDevice) -> np.ndarray:
    """What the screen shows: the game, or a black launcher when its app is stopped."""
    if device.stopped:
        return device.game.renderer.black()
    return device.game.frame()


def device_tap(device: SimDevice, x: int, y: int, cost_ms: float | None = None) -> None:
    """A tap on the app unless it is stopped; `cost_ms`: a touch agent's own cost (default: the `input tap` one)."""
    if not device.stopped:
        device.game.tap(x, y, **({} if cost_ms is None else {"cost_ms": cost_ms}))


def device_swipe(device: SimDevice, x1: int, y1: int, x2: int, y2: int, duration_ms: int,
                 cost_ms: float | None = None) -> None:
    if not device.stopped:
        device.game.swipe(x1, y1, x2, y2, duration_ms, **({} if cost_ms is None else {"cost_ms": cost_ms}))


def split_env(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    """Leading ``VAR=value`` words of a command, and the rest."""
    env: dict[str, str] = {}
    while argv and "=" in argv[0] and argv[0].split("=", 1)[0].replace("_", "a").isalnum():
        name, value = argv[0].split("=", 1)
        env[name] = value
        argv = argv[1:]
    return env, argv


def _split_commands(command: str, pipes: bool = False) -> list[str]:
    """Split a shell line on ';' and '&&' outside quotes (enough for adbutils' `cmd; echo X4EXIT:$?`); with
    `pipes`, split one command on '|' instead."""
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
        elif pipes and ch == "|":
            parts.append(current)
            current = ""
        elif not pipes and (ch == ";" or command.startswith("&&", i)):
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
        stdin, err_i, ran = b"", b"", False
        for stage in _split_commands(part, pipes=True):  # a pipeline: each stage's stdout is the next one's stdin
            try:
                argv = shlex.split(stage)
            except ValueError:
                argv = stage.split()
            argv = split_env(argv)[1]
            if argv:
                stdin, err_s, code = _run_one(device, argv, stdin)
                err_i += err_s
                ran = True
        if not ran:
            continue
        out += stdin
        err += err_i
        both += err_i + stdin
    return out, err, both, code


def _run_one(device: SimDevice, argv: list[str], stdin: bytes = b"") -> tuple[bytes, bytes, int]:
    name, args = argv[0], argv[1:]
    piped = PIPED.get(name)
    if piped is not None:
        return piped(device, args, stdin)
    handler: Callable | None = _COMMANDS.get(name)
    if handler is not None:
        try:
            return handler(device, args)
        except (ValueError, IndexError):
            return b"", f"{name}: bad arguments: {' '.join(args)}\n".encode(), 1
    return b"", f"/system/bin/sh: {name}: not found\n".encode(), 127


def _cmd_screencap(device: SimDevice, args: list[str]) -> tuple[bytes, bytes, int]:
    frame = device_frame(device)
    if "-p" in args:
        device.game.png_cost()  # the scenario's PNG compression cost beyond the raw capture
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
        device_tap(device, int(float(rest[0])), int(float(rest[1])))
    elif verb in ("swipe", "draganddrop"):
        x1, y1, x2, y2 = (int(float(v)) for v in rest[:4])
        device_swipe(device, x1, y1, x2, y2, int(rest[4]) if len(rest) > 4 else 300)
    elif verb == "keyevent":
        for key in rest:
            if key not in ("--longpress", "--doubletap") and not device.stopped:
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
            f"  mViewports=[DisplayViewport{{type=INTERNAL, valid=true, isActive=true, displayId=0, "
            f'uniqueId=\'local:0\', physicalPort=0, orientation=0, logicalFrame=Rect(0, 0 - {width}, {height}), '
            f"physicalFrame=Rect(0, 0 - {width}, {height}), deviceWidth={width}, deviceHeight={height}}}]\n"
        )
        return text.encode(), b"", 0
    if args[:1] == ["window"]:
        package, activity = app_names(device.game.graph)
        if device.stopped:
            package, activity = "com.android.launcher3", "com.android.launcher3.Launcher"
        window = f"Window{{7f3a u0 {package}/{activity}}}"
        text = (f"  mCurrentFocus={window}\n  mFocusedApp=ActivityRecord{{5e1 u0 {package}/{activity} t12}}\n"
                f"  mFocusedWindow={window}\n")
        return text.encode(), b"", 0
    return b"", b"", 0


def _cmd_getprop(device: SimDevice, args: list[str]) -> tuple[bytes, bytes, int]:
    props = {
        "ro.product.model": "SimGame",
        "ro.product.brand": "engine",
        "ro.product.name": "sim",
        "ro.product.device": "sim",
        "ro.product.cpu.abilist": "x86_64,x86,arm64-v8a,armeabi-v7a,armeabi",
        "ro.build.version.preview_sdk": "0",
        "ro.build.characteristics": "emulator",
        "ro.kernel.qemu": "1",
        "ro.product.manufacturer": "engine.sim",
        "ro.product.cpu.abi": "x86_64",
        "ro.build.version.sdk": "30",
        "ro.build.version.release": "11",
        "ro.serialno": device.serial,
        "sys.boot_completed": "1",
        **device.props,
    }
    if args:
        return (props.get(args[0], "") + "\n").encode(), b"", 0
    return "".join(f"[{k}]: [{v}]\n" for k, v in props.items()).encode(), b"", 0


def _cmd_echo(device: SimDevice, args: list[str]) -> tuple[bytes, bytes, int]:
    if args[:1] == ["-n"]:
        return " ".join(args[1:]).encode(), b"", 0
    return (" ".join(args) + "\n").encode(), b"", 0


def _cmd_am(device: SimDevice, args: list[str]) -> tuple[bytes, bytes, int]:
    """``am start [-n PKG/ACT]`` starts the game at its start page; ``am force-stop PKG`` stops it."""
    package, activity = app_names(device.game.graph)
    if args[:1] == ["force-stop"]:
        if args[1:2] == [package]:
            device.stopped = True
        return b"", b"", 0
    if args[:1] in (["start"], ["start-activity"]):
        component = args[args.index("-n") + 1] if "-n" in args else f"{package}/{activity}"
        if component.split("/", 1)[0] != package:
            return b"", f"Error: Activity not started, unable to resolve Intent {component}\n".encode(), 1
        _launch(device)
        return f"Starting: Intent {{ cmp={component} }}\n".encode(), b"", 0
    return b"", b"", 0


def _cmd_monkey(device: SimDevice, args: list[str]) -> tuple[bytes, bytes, int]:
    package, _ = app_names(device.game.graph)
    if "-p" in args and args[args.index("-p") + 1] == package:
        _launch(device)
        return b"Events injected: 1\n", b"", 0
    return b"", b"** No activities found to run, monkey aborted.\n", 251


def _launch(device: SimDevice) -> None:
    # A launch restarts a stopped app at its start page; a running one restarts too (the simulator's relaunch).
    device.stopped = False
    device.game.restart()


def _cmd_pm(device: SimDevice, args: list[str]) -> tuple[bytes, bytes, int]:
    package, _ = app_names(device.game.graph)
    if args[:2] == ["list", "packages"]:
        names = ["com.android.settings", "com.android.launcher3", package]
        wanted = [a for a in args[2:] if not a.startswith("-")]
        names = [n for n in names if not wanted or wanted[0] in n]
        return "".join(f"package:{n}\n" for n in names).encode(), b"", 0
    if args[:1] == ["path"] and args[1:2] == [package]:
        return f"package:/data/app/{package}/base.apk\n".encode(), b"", 0
    return b"", b"", 1


def _cmd_pidof(device: SimDevice, args: list[str]) -> tuple[bytes, bytes, int]:
    package, _ = app_names(device.game.graph)
    if args[-1:] == [package] and not device.stopped:
        return b"4242\n", b"", 0
    return b"", b"", 1


def _cmd_files(device: SimDevice, args: list[str], name: str) -> tuple[bytes, bytes, int]:
    paths = [a for a in args if not a.startswith("-")]
    if name == "chmod":
        paths = paths[1:]
    missing = [p for p in paths if p not in device.files]
    if name == "rm":
        for p in paths:
            device.files.pop(p, None)
            device.mtimes.pop(p, None)
        missing = [] if "-f" in args else missing
    if missing:
        return b"", f"{name}: {missing[0]}: No such file or directory\n".encode(), 1
    return ("".join(p + "\n" for p in paths) if name == "ls" else "").encode(), b"", 0


_COMMANDS: dict[str, Callable[[SimDevice, list[str]], tuple[bytes, bytes, int]]] = {
    "screencap": _cmd_screencap,
    "input": _cmd_input,
    "wm": _cmd_wm,
    "dumpsys": _cmd_dumpsys,
    "getprop": _cmd_getprop,
    "echo": _cmd_echo,
    "true": lambda d, a: (b"", b"", 0),
    "false": lambda d, a: (b"", b"", 1),
    "am": _cmd_am,
    "monkey": _cmd_monkey,
    "pm": _cmd_pm,
    "pidof": _cmd_pidof,
    "ls": lambda d, a: _cmd_files(d, a, "ls"),
    "chmod": lambda d, a: _cmd_files(d, a, "chmod"),
    "rm": lambda d, a: _cmd_files(d, a, "rm"),
}
