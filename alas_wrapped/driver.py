"""Run one AzurLaneAutoScript task, then exit: the program alas_wrapped's worker starts under ALAS's own Python.

    python driver.py --root ALAS_DIR --config NAME --task Commission --serial 127.0.0.1:5555

It needs nothing but the standard library and the ALAS checkout (never our packages: ALAS pins its own Python and
dependencies). It takes ALAS's own code path for one task, the steps of ``AzurLaneAutoScript.loop`` in alas.py for
the task its scheduler picked: name the file log after the instance (``logger.set_file_logger``), load the config,
make the task the config's ``task`` and ``bind`` it, open the device, clear its stuck and click records, and call
``AzurLaneAutoScript.run(inflection.underscore(task))``, which catches and logs ALAS's exceptions. The device serial
ALAS uses is `--serial` (``config.override(Emulator_Serial=...)``, which holds across binds); the ADB server port
comes from ANDROID_ADB_SERVER_PORT, which ALAS's ``adb_client`` reads.

It prints one line ``ALAS_WRAPPED_RESULT {"ok": ..., "task": ..., "exception": [class, bases...]}`` at the end
(`exception`: what left the task's function, before ALAS's run caught it) and exits 0 when ALAS's run returned True,
1 when it returned False or ALAS called ``exit(1)``, 3 when the task is not a function of ALAS, 4 when ALAS cannot
be imported. The engine kills the process group when the task overruns its bound.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

MARK = "ALAS_WRAPPED_RESULT"


def snake(task: str) -> str:
    """ALAS's task name as its function name, as ``inflection.underscore`` gives it (alas.py uses that):
    Commission -> commission, ShopFrequent -> shop_frequent, OpsiHazard1Leveling -> opsi_hazard1_leveling."""
    try:
        import inflection  # ALAS's own requirement

        return inflection.underscore(task)
    except ImportError:
        word = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", task)
        return re.sub(r"([a-z\d])([A-Z])", r"\1_\2", word).replace("-", "_").lower()


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


def marked(lines: list[str], mark: str = MARK) -> dict | None:
    """The JSON object of the last line that starts with `mark` (what `report` prints), else None."""
    for line in reversed(lines):
        if line.startswith(mark + " "):
            try:
                value = json.loads(line[len(mark) + 1:])
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None


def watch(script: object, command: str, caught: dict) -> None:
    """Note the class (and bases) of whatever leaves the task's function, then let ALAS's run handle it as ever:
    alas.py calls ``self.__getattribute__(command)()``, which finds this wrapper on the instance first."""
    function = getattr(script, command)

    def watched(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except BaseException as exc:
            caught["exception"] = [c.__name__ for c in type(exc).__mro__ if c not in (BaseException, object)]
            caught["message"] = str(exc)[:500]
            raise

    setattr(script, command, watched)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", required=True, help="the ALAS checkout")
    parser.add_argument("--config", default="alas", help="the ALAS instance (config/<name>.json)")
    parser.add_argument("--task", required=True, help="the ALAS task (Commission, Research...)")
    parser.add_argument("--serial", default=None, help="the device serial ALAS must use")
    args = parser.parse_args(argv)

    die_with_parent()
    root = os.path.abspath(args.root)
    os.chdir(root)
    sys.path.insert(0, root)
    sys.argv[0] = os.path.join(root, "alas.py")  # ALAS's logger names its first log file after the program
    try:
        from alas import AzurLaneAutoScript
        from module.config.config import name_to_function
        from module.logger import logger
    except BaseException as exc:  # noqa: BLE001 - whatever stops ALAS from loading is reported, not raised
        report(False, args.task, error=f"cannot import ALAS from {root}: {type(exc).__name__}: {exc}")
        return 4
    caught: dict = {}
    try:
        logger.set_file_logger(args.config)
        script = AzurLaneAutoScript(config_name=args.config)
        config = script.config  # ALAS logs a broken config and exits 1 itself
        if args.serial:
            config.override(Emulator_Serial=args.serial)
        task = name_to_function(args.task)
        config.task = task
        config.bind(task)
        command = snake(args.task)
        if not callable(getattr(script, command, None)):
            report(False, args.task, error=f"ALAS has no task function {command!r}")
            return 3
        device = script.device  # ALAS logs a device it cannot open and exits 1 itself
        device.config = config
        device.stuck_record_clear()
        device.click_record_clear()
        print(f"alas_wrapped: running {args.task} ({command}) of instance {args.config!r} on {args.serial}",
              flush=True)
        logger.hr(args.task, level=0)
        watch(script, command, caught)
        ok = bool(script.run(command))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
        report(False, args.task, exit=code, **caught)
        return code or 1
    except Exception as exc:  # noqa: BLE001 - a step before ALAS's run failed: said, with its traceback
        import traceback

        traceback.print_exc(file=sys.stdout)
        report(False, args.task, error=f"{type(exc).__name__}: {exc}"[:500], **caught)
        return 1
    report(ok, args.task, **caught)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
