"""Run one AzurLaneAutoScript task, then exit: the program alas_wrapped's worker starts under ALAS's own Python.

    python driver.py --root ALAS_DIR --config NAME --task Commission --serial 127.0.0.1:5555

It needs nothing but the standard library and the ALAS checkout (never our packages: ALAS pins its own Python and
dependencies). It does what ALAS's scheduler does for one task: load the user's config, bind the task's settings,
point the device at `--serial`, and call the task's function (``AzurLaneAutoScript.run(<task in snake case>)``).

It prints one line ``ALAS_WRAPPED_RESULT {"ok": ..., "task": ...}`` at the end and exits 0 when ALAS's run returned
True, 1 when it returned False, 3 when the task is not a function of ALAS, 4 when ALAS cannot be imported. ALAS's
own `exit(1)` on a crash passes through. The engine kills the process group when the task overruns its bound.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

MARK = "ALAS_WRAPPED_RESULT"


def snake(task: str) -> str:
    """ALAS's task name as its function name: Commission -> commission, ShopFrequent -> shop_frequent, EventA ->
    event_a, OpsiHazard1Leveling -> opsi_hazard1_leveling (what `inflection.underscore` gives)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", task).lower()


def die_with_parent() -> None:
    """Linux: end this driver when the engine's thread that started it goes away, even by SIGKILL (the engine
    kills the whole process group itself whenever it can; this covers the case where it cannot)."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def report(ok: bool, task: str, **more: object) -> None:
    print(f"{MARK} {json.dumps({'ok': ok, 'task': task, **more})}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", required=True, help="the ALAS checkout")
    parser.add_argument("--config", default="alas", help="the ALAS config name (config/<name>.json)")
    parser.add_argument("--task", required=True, help="the ALAS task (Commission, Research...)")
    parser.add_argument("--serial", default=None, help="the device serial ALAS must use")
    args = parser.parse_args(argv)

    die_with_parent()
    os.chdir(args.root)
    sys.path.insert(0, os.path.abspath(args.root))
    try:
        from alas import AzurLaneAutoScript
    except Exception as exc:  # noqa: BLE001 - whatever stops ALAS from loading is reported, not raised
        report(False, args.task, error=f"cannot import ALAS from {args.root}: {type(exc).__name__}: {exc}")
        return 4
    script = AzurLaneAutoScript(config_name=args.config)
    command = snake(args.task)
    if not callable(getattr(script, command, None)):
        report(False, args.task, error=f"ALAS has no task function {command!r}")
        return 3
    config = script.config
    config.bind(args.task)
    if args.serial:
        config.override(Emulator_Serial=args.serial)
    print(f"alas_wrapped: running {args.task} ({command}) with config {args.config!r} on {args.serial}", flush=True)
    ok = bool(script.run(command))
    report(ok, args.task)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
