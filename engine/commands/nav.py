"""Subcommands that act on the game: goto, state, run, tasks (the navigator lands in issue 5)."""

from __future__ import annotations

import argparse
import sys


def _not_yet(args: argparse.Namespace) -> int:
    print(f"{args.command}: not implemented yet (the navigator has not landed)", file=sys.stderr)
    return 3


def register(sub: argparse._SubParsersAction) -> None:
    goto = sub.add_parser("goto", help="navigate to a page and verify it")
    goto.add_argument("page")
    goto.set_defaults(handler=_not_yet)
