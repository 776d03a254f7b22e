"""``python -m engine``: the command line. Results go to stdout, logs to stderr, exit 0 only on success.

Exit codes: 0 success, 1 the request ran but did not succeed (target not verified, device unhealthy),
2 bad input (a malformed graph, an unknown page, bad arguments), 3 not implemented yet.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from engine.errors import ConfigError, EngineError

# Each module in engine/commands registers its subcommands; a module that is not there yet is skipped.
COMMAND_MODULES = ("graph", "sim", "device", "observe", "assets", "nav", "tools")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engine", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log lines on stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"engine.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"engine.commands.{name}":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = logging.WARNING - 10 * args.verbose
    if os.environ.get("ENGINE_LOG_LEVEL"):
        level = os.environ["ENGINE_LOG_LEVEL"].upper()
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.handler(args) or 0)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except EngineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
