"""``python -m engine proposals list|show|accept|reject``: review what the graph learned (engine.learning.learner).

A proposal is a screen the vision model resolved during a run (its frame, a template crop, the tap that closed it,
the page that tap led to, how often it was seen). Accepting one writes it into *your* graph folder as a new popup
file (``learned_<name>.yaml``, with the schema modeline) and its template into *your* asset pack, after checking
that the graph still validates and that the new signature does not fire on any frame of a known page kept with
the proposals or of the error bundles beside them; otherwise nothing is written and the command exits 2 naming
the frames where it fired. The shipped graph is never written. The work is engine.learning.proposals' (the studio's
too).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from engine.core.errors import ConfigError


def _folder(args: argparse.Namespace) -> Path:
    folder = args.dir or (Path(os.environ["ENGINE_TRANSCRIPT_DIR"]) / "proposals"
                          if os.environ.get("ENGINE_TRANSCRIPT_DIR") else None)
    if folder is None:
        raise ConfigError("no proposals folder: pass --dir DIR (a run's --transcript DIR/proposals)")
    if not Path(folder).is_dir():
        raise ConfigError(f"{folder}: no such proposals folder")
    return Path(folder)


def _list(args: argparse.Namespace) -> int:
    from engine.learning.proposals import list_proposals

    rows, warnings = list_proposals(_folder(args))
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(json.dumps({"proposals": rows}, indent=1, default=str))
    return 0


def _show(args: argparse.Namespace) -> int:
    from engine.learning.proposals import load, popup_yaml

    path, proposal = load(_folder(args), args.name)
    files = {"frame": str(path.with_suffix(".frame.png")), "crop": str(path.with_suffix(".crop.png"))}
    print(json.dumps({**proposal, "files": files, "yaml": popup_yaml(proposal)}, indent=1, default=str))
    return 0


def _reject(args: argparse.Namespace) -> int:
    from engine.learning.proposals import reject

    print(json.dumps(reject(_folder(args), args.name), indent=1))
    return 0


def _accept(args: argparse.Namespace) -> int:
    from engine.learning.proposals import accept, load

    load(_folder(args), args.name)  # a broken proposal is named before the graph is read

    from engine.config.assetpacks import load_pack
    from engine.config.loader import load_graph
    from engine.sim import SyntheticAssets

    # The pack the runs recognised pages with (error-bundle frames are read with it): the simulator's drawn
    # templates, unless --pages-assets names a real device's pack.
    if args.pages_assets and not Path(args.pages_assets).is_dir():
        raise ConfigError(f"--pages-assets {args.pages_assets}: no such folder")
    graph = load_graph(args.graph).resolve(None)
    pages = load_pack(args.pages_assets, graph.server, fallback=graph.fallback_server) if args.pages_assets \
        else SyntheticAssets(graph)
    pack = Path(args.assets) if args.assets else None  # (default: the graph folder's learned pack)
    print(json.dumps(accept(_folder(args), args.name, Path(args.graph), pack, pages_pack=pages), indent=1))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("proposals", help="review what the graph learned from the vision model: list, show, "
                                              "accept into your graph, reject")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, handler, helptext in (("list", _list, "every proposal"), ("show", _show, "one proposal and its YAML"),
                                    ("accept", _accept, "write one into your graph folder and asset pack"),
                                    ("reject", _reject, "set one aside (moved to rejected/)")):
        p = actions.add_parser(name, help=helptext)
        if name != "list":
            p.add_argument("name", help="the proposal's name (LEARNED_...)")
        p.add_argument("--dir", default=None, help="the proposals folder (default: $ENGINE_TRANSCRIPT_DIR/proposals)")
        if name == "accept":
            p.add_argument("--graph", required=True, help="your graph folder (never the shipped one)")
            p.add_argument("--pages-assets", default=None, help="the asset pack your runs recognise pages with "
                                                                "(their --assets), to read error-bundle frames; "
                                                                "default: the simulator's drawn templates")
            p.add_argument("--assets", default=None, help="the asset pack the template goes into (default: the "
                                                          "graph folder's learned_assets/, which sessions on that "
                                                          "graph layer over their pack)")
        p.set_defaults(handler=handler)
