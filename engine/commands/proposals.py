"""``python -m engine proposals list|show|accept|reject``: review what the graph learned (engine.learning).

A proposal is a screen the vision model resolved during a run (its frame, a template crop, the tap that closed it,
the page that tap led to, how often it was seen). Accepting one writes it into *your* graph folder as a new popup
file (``learned_<name>.yaml``, with the schema modeline) and its template into *your* asset pack, after checking
that the graph still validates and that the new signature does not fire on any frame of a known page kept with
the proposals; otherwise nothing is written and the command exits 2 naming the frames where it fired. The shipped
graph is never written.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from engine.errors import ConfigError

PRIORITY = 40
"""Learned popups are checked after the graph's own (whose priorities are higher where they matter)."""


def _folder(args: argparse.Namespace) -> Path:
    folder = args.dir or (Path(os.environ["ENGINE_TRANSCRIPT_DIR"]) / "proposals"
                          if os.environ.get("ENGINE_TRANSCRIPT_DIR") else None)
    if folder is None:
        raise ConfigError("no proposals folder: pass --dir DIR (a run's --transcript DIR/proposals)")
    if not Path(folder).is_dir():
        raise ConfigError(f"{folder}: no such proposals folder")
    return Path(folder)


def _proposal(folder: Path, name: str) -> tuple[Path, dict[str, Any]]:
    from engine.learning import read_proposal

    path = folder / f"{name}.yaml"
    if Path(name).name != name or not path.is_file():
        known = sorted(p.stem for p in folder.glob("*.yaml"))
        raise ConfigError(f"no proposal {name!r} in {folder}" + (f"; there are: {', '.join(known)}" if known else ""))
    try:
        return path, read_proposal(path)
    except (ValueError, OSError) as exc:
        raise ConfigError(str(exc), file=str(path)) from None


def _list(args: argparse.Namespace) -> int:
    from engine.learning import read_proposal

    folder = _folder(args)
    rows = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            rows.append(read_proposal(path))
        except (ValueError, OSError) as exc:
            print(f"warning: {path}: {exc}", file=sys.stderr)
    print(json.dumps({"proposals": rows}, indent=1, default=str))
    return 0


def _show(args: argparse.Namespace) -> int:
    path, proposal = _proposal(_folder(args), args.name)
    files = {"frame": str(path.with_suffix(".frame.png")), "crop": str(path.with_suffix(".crop.png"))}
    print(json.dumps({**proposal, "files": files, "yaml": popup_yaml(proposal)}, indent=1, default=str))
    return 0


def _reject(args: argparse.Namespace) -> int:
    path, proposal = _proposal(_folder(args), args.name)
    _move(path, path.parent / "rejected")
    print(f"rejected {proposal['name']}", file=sys.stderr)
    return 0


def popup_yaml(proposal: dict[str, Any], schema: str | None = None) -> str:
    import yaml

    name, area = proposal["name"], [int(v) for v in proposal["area"]]
    data = {
        "buttons": [{"name": name, "area": area, "asset": f"learned/{name}"}],
        "popups": [{"name": name, "description": f"learned: {proposal.get('label', name)} "
                                                 f"(seen {proposal.get('sightings', 1)} time(s))",
                    "signatures": [{"type": "template", "button": name}],
                    "dismiss": [{"type": "tap", "point": [int(v) for v in proposal["tap"]]}],
                    "priority": PRIORITY}],
    }
    head = f"# yaml-language-server: $schema={schema}\n" if schema else ""
    return head + yaml.safe_dump(data, sort_keys=False, default_flow_style=None)


def _accept(args: argparse.Namespace) -> int:
    import cv2

    from engine.paths import builtin_graph_dir, schema_file

    folder = _folder(args)
    path, proposal = _proposal(folder, args.name)
    graph_dir, pack_dir = Path(args.graph), Path(args.assets)
    if not graph_dir.is_dir():
        raise ConfigError(f"--graph {graph_dir}: no such folder")
    if graph_dir.resolve() == builtin_graph_dir().resolve():
        raise ConfigError("the shipped graph is never written: copy it and pass the copy as --graph")
    frame = cv2.imread(str(path.with_suffix(".frame.png")), cv2.IMREAD_COLOR)
    if frame is None:
        raise ConfigError(f"{path.with_suffix('.frame.png')}: the proposal's frame is missing")
    target = graph_dir / f"learned_{proposal['name'].lower()}.yaml"
    if target.exists():
        raise ConfigError(f"{target} exists already: {proposal['name']} was accepted before")
    schema = os.path.relpath(schema_file(), graph_dir)
    target.write_text(popup_yaml(proposal, schema))
    written = [target, *_write_template(pack_dir, proposal, frame)]
    try:
        fired = _fires_on_known(folder, graph_dir, pack_dir, proposal["name"])
    except ConfigError:
        _remove(written)
        raise
    if fired:
        _remove(written)
        raise ConfigError(f"{proposal['name']}'s signature also fires on frames of known pages: "
                          f"{', '.join(str(f) for f in fired)}; nothing was written (cut another crop, or reject it)")
    _move(path, folder / "accepted")
    print(json.dumps({"accepted": proposal["name"], "graph_file": str(target),
                      "template": str(written[1])}, indent=1))
    return 0


def _write_template(pack_dir: Path, proposal: dict[str, Any], frame: Any) -> list[Path]:
    from engine.assetpacks import INDEX_FILE, DirectoryAssetPack, crop, new_index, save_index, write_template
    from engine.assets import Template

    area = tuple(int(v) for v in proposal["area"])
    pack_dir.mkdir(parents=True, exist_ok=True)
    index = DirectoryAssetPack(pack_dir).index if (pack_dir / INDEX_FILE).is_file() else new_index(None)
    files = write_template(pack_dir, Template(name=f"learned/{proposal['name']}", frames=(crop(frame, area),),
                                              area=area), index)
    save_index(pack_dir, index)
    return files


def _fires_on_known(folder: Path, graph_dir: Path, pack_dir: Path, name: str) -> list[Path]:
    """The known pages' frames on which the new popup is observed (the graph is loaded, so it is validated)."""
    import cv2

    from engine.assetpacks import DirectoryAssetPack
    from engine.loader import load_graph
    from engine.observe import Observer

    graph = load_graph(graph_dir).resolve(None)
    observer = Observer(graph, DirectoryAssetPack(pack_dir, graph.server))
    fired = []
    for frame_path in sorted((folder / "known").glob("*.png")):
        frame = cv2.imread(str(frame_path), cv2.IMREAD_COLOR)
        if frame is not None and name in observer.observe(frame).popups:
            fired.append(frame_path)
    return fired


def _remove(paths: list[Path]) -> None:
    for p in paths:
        p.unlink(missing_ok=True)


def _move(path: Path, into: Path) -> None:
    into.mkdir(exist_ok=True)
    for part in (path, path.with_suffix(".frame.png"), path.with_suffix(".crop.png")):
        if part.exists():
            shutil.move(str(part), str(into / part.name))


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
            p.add_argument("--assets", required=True, help="your asset pack folder (project layout)")
        p.set_defaults(handler=handler)
