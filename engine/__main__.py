"""``python -m engine``: the command line. Results go to stdout, logs to stderr, exit 0 only on success.

Exit codes: 0 success, 1 the request ran but did not succeed (target not verified, device unhealthy),
2 bad input (a malformed graph, an unknown page, bad arguments, a path that cannot be read or written),
3 not implemented yet. Whatever goes wrong, the user sees one line on stderr, never a traceback (the traceback
of an unexpected error is logged at DEBUG: ``-vv`` or ``ENGINE_LOG_LEVEL=DEBUG`` shows it).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import signal
import sys
from typing import NoReturn

from engine.core.errors import ConfigError, EngineError

log = logging.getLogger("engine")

# Each module in engine/commands registers its subcommands; a module that is not there yet is skipped.
COMMAND_MODULES = ("graph", "sim", "device", "observe", "assets", "nav", "tools", "agent", "studio", "proposals",
                   "schedule", "explore")

BAD_PATH_ERRORS = (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError, FileExistsError)
"""OS errors that mean the path the user gave is wrong (exit 2), not that the run failed."""


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one line on stderr (no usage block) and exit 2; subparsers inherit it."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m engine", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log lines on stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"engine.faces.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"engine.faces.commands.{name}":
                raise
            continue
        module.register(sub)
    return parser


def one_line(text: object) -> str:
    """`text` on one line (an exception's message may span several)."""
    return " | ".join(part.strip() for part in str(text).splitlines() if part.strip())


def run(args: argparse.Namespace) -> int:
    """Run the parsed command; every exception becomes one stderr line and an exit code."""
    try:
        return int(args.handler(args) or 0)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)  # a graph error lists one located problem per line
        return 2
    except EngineError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BAD_PATH_ERRORS as exc:
        log.debug("bad path", exc_info=True)
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"error: {where}{exc.strerror or one_line(exc)}", file=sys.stderr)
        return 2
    except MemoryError:
        log.debug("out of memory", exc_info=True)
        print("error: out of memory (an input is too large)", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - the last door: a bug is still one line, never a traceback
        log.debug("unexpected error", exc_info=True)
        print(f"error: unexpected {type(exc).__name__}: {one_line(exc)} (run with -vv for the traceback)",
              file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level: int | str = logging.WARNING - 10 * args.verbose
    if os.environ.get("ENGINE_LOG_LEVEL"):
        level = os.environ["ENGINE_LOG_LEVEL"].upper()
    from engine.core.redact import RedactingStream

    saved = sys.stderr
    sys.stderr = RedactingStream(saved)  # logs, progress and error lines: secrets never reach stderr
    try:
        try:
            logging.basicConfig(level=level, stream=sys.stderr,
                                format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        except ValueError:
            parser.error(f"ENGINE_LOG_LEVEL={os.environ['ENGINE_LOG_LEVEL']!r} is not a logging level")
        if not getattr(args, "handler", None):
            parser.print_help(sys.stderr)
            return 2
        signal.signal(signal.SIGTERM, _terminated)
        return run(args)
    finally:
        sys.stderr = saved


def _terminated(signum: int, frame: object) -> NoReturn:
    """SIGTERM ends the command like Ctrl-C: through its `finally` blocks, so sessions close, the simulator stops
    and outside workers (alas_wrapped) are killed, instead of the process vanishing and leaving them running."""
    raise KeyboardInterrupt("terminated")


if __name__ == "__main__":
    sys.exit(main())
