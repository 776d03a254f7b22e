"""Proposals, the graph's lessons waiting for review: list, show, accept, reject, demote.

A proposal (written by engine.learning.learner) is a YAML file in a proposals folder beside a run's transcript, with its
frame (``NAME.frame.png``) and template crop (``NAME.crop.png``). ``python -m engine proposals`` and the studio
both come here.

Accepting writes the popup into the user's graph folder as a new file (``learned_<name>.yaml``, with the schema
modeline) and its template into the user's asset pack, but only after the graph still loads (file:line errors as
usual) and the new signature fires on no frame of a known page: those the learner kept (``known/``) and those of
the error bundles beside the proposals that the graph without it reads as a known page. Otherwise nothing stays
written and ``ProposalRefused`` names the frames where it fired. The shipped graph is never written.

A learned popup that misfires later (its dismissal does not work, or it fired where a known page was) is demoted:
its file leaves the graph folder for ``demoted/`` beside the proposals, with the reason.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

from engine.core.errors import ConfigError, ProposalRefused

log = logging.getLogger(__name__)

PRIORITY = 40
"""Learned popups are checked after the graph's own (whose priorities are higher where they matter)."""
MAX_BUNDLE_FRAMES = 400
"""Error-bundle frames checked at most (the newest bundles first): accepting stays bounded in time."""


LEARNED_PACK = "learned_assets"
"""The asset pack of learned templates inside a user's graph folder (project layout); layered over the session's."""


def learned_pack_dir(graph_dir: str | Path | None) -> Path | None:
    """Where the learned templates of a user's graph folder go (None for the shipped graph, which is never
    written)."""
    from engine.core.paths import builtin_graph_dir

    if graph_dir is None:
        return None
    folder = Path(graph_dir)
    folder = folder.parent if folder.is_file() else folder
    return None if folder.resolve() == builtin_graph_dir().resolve() else folder / LEARNED_PACK



def read_proposal(path: Path) -> dict[str, Any]:
    """One proposal file, read as untrusted YAML (bounded size, nesting and aliases: engine.config.yamlsrc).

    Raises:
        ValueError: it is not a proposal (file:line:col of the first problem when it is not even YAML).
    """
    from engine.config.yamlsrc import read_yaml

    source = read_yaml(path)
    if source.problems:
        raise ValueError(str(source.problems[0]))
    data = source.data
    if not isinstance(data, dict) or not {"name", "area", "tap"} <= set(data) or \
            not _ints(data["area"], 4) or not _ints(data["tap"], 2) or not isinstance(data["name"], str):
        raise ValueError(f"{path}: not a proposal (name, area [x1, y1, x2, y2] and tap [x, y] are needed)")
    return data


def _ints(value: Any, n: int) -> bool:
    return isinstance(value, list) and len(value) == n and all(isinstance(v, int) and 0 <= v < 100_000 for v in value)


def list_proposals(folder: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The proposals waiting in `folder`, and a warning for each file that is not one."""
    rows, warnings = [], []
    for path in sorted(Path(folder).glob("*.yaml")):
        try:
            rows.append(read_proposal(path))
        except (ValueError, OSError, yaml.YAMLError) as exc:
            warnings.append(f"{path}: {exc}")
    return rows, warnings


def load(folder: Path, name: str) -> tuple[Path, dict[str, Any]]:
    """The proposal called `name` in `folder` (ConfigError naming those there are)."""
    path = Path(folder) / f"{name}.yaml"
    if Path(name).name != name or name.startswith(".") or not path.is_file():
        known = sorted(p.stem for p in Path(folder).glob("*.yaml"))
        raise ConfigError(f"no proposal {name!r} in {folder}" + (f"; there are: {', '.join(known)}" if known else ""))
    try:
        return path, read_proposal(path)
    except (ValueError, OSError, yaml.YAMLError) as exc:
        raise ConfigError(str(exc), file=str(path)) from None


def popup_yaml(proposal: dict[str, Any], schema: str | None = None) -> str:
    """The graph file a proposal becomes: its button (area, learned/ asset) and its popup (template, tap)."""
    name, area = proposal["name"], [int(v) for v in proposal["area"]]
    data = {
        "buttons": [{"name": name, "area": area, "asset": f"learned/{name}"}],
        "popups": [{"name": name, "description": f"learned: {proposal.get('label', name)} "
                                                 f"(seen {proposal.get('sightings', 1)} time(s))",
                    "signatures": [{"type": "template", "button": name}],
                    "dismiss": [{"type": "tap", "point": [int(v) for v in proposal["tap"]]}],
                    "priority": PRIORITY, "learned": name}],
    }
    head = f"# yaml-language-server: $schema={schema}\n" if schema else ""
    return head + yaml.safe_dump(data, sort_keys=False, default_flow_style=None)


def graph_file(graph_dir: Path, name: str) -> Path:
    return Path(graph_dir) / f"learned_{name.lower()}.yaml"


def accept(folder: Path, name: str, graph_dir: Path, pack_dir: Path | None = None, *, pages_pack: Any,
           by: str = "user") -> dict[str, Any]:
    """Write proposal `name` into `graph_dir` and `pack_dir` after checking it; move it to ``accepted/``.

    `pack_dir` defaults to the graph folder's learned pack (LEARNED_PACK). `pages_pack` is
    the pack the graph's pages are recognised with (a session's: the simulator's drawn templates when it ran
    without ``--assets``), under the templates of `pack_dir`.

    Raises:
        ConfigError: no such proposal, the shipped graph, a missing frame, the graph no longer loads.
        ProposalRefused: the signature fires on known pages' frames (nothing stays written).
    """
    import cv2

    from engine.core.paths import builtin_graph_dir, schema_file

    path, proposal = load(folder, name)
    graph_dir = Path(graph_dir)
    pack_dir = Path(pack_dir) if pack_dir is not None else graph_dir / LEARNED_PACK
    if not graph_dir.is_dir():
        raise ConfigError(f"graph folder {graph_dir}: no such folder")
    if graph_dir.resolve() == builtin_graph_dir().resolve():
        raise ConfigError("the shipped graph is never written: copy it and use the copy as your graph folder")
    frame = cv2.imread(str(path.with_suffix(".frame.png")), cv2.IMREAD_COLOR)
    if frame is None:
        raise ConfigError(f"{path.with_suffix('.frame.png')}: the proposal's frame is missing")
    target = graph_file(graph_dir, proposal["name"])
    if target.exists():
        raise ConfigError(f"{target} exists already: {proposal['name']} was accepted before")
    before = _load_graph(graph_dir)
    index_file = pack_dir / "index.json"
    index_before = index_file.read_bytes() if index_file.is_file() else None
    target.write_text(popup_yaml(proposal, os.path.relpath(schema_file(), graph_dir)))
    written = [target, *_write_template(pack_dir, proposal, frame)]
    try:
        fired = fires_on_known(folder, graph_dir, pack_dir, proposal["name"], before, pages_pack)
    except ConfigError:
        _undo(written, index_file, index_before)
        raise
    if fired:
        _undo(written, index_file, index_before)
        raise ProposalRefused(f"{proposal['name']}'s signature also fires on frames of known pages: "
                              f"{', '.join(str(f) for f in fired)}; nothing was written (cut another crop, or "
                              "reject it)", fired)
    _move(path, Path(folder) / "accepted")
    log.info("accepted %s (%s) into %s", proposal["name"], by, target)
    return {"accepted": proposal["name"], "by": by, "graph_file": str(target), "template": str(written[1])}


def reject(folder: Path, name: str) -> dict[str, Any]:
    path, proposal = load(folder, name)
    _move(path, Path(folder) / "rejected")
    return {"rejected": proposal["name"]}


def demote(folder: Path, graph_dir: Path, name: str, reason: str, frame: Any = None) -> dict[str, Any]:
    """Take learned popup `name` out of `graph_dir` (its file goes to ``demoted/`` with the reason and the frame
    where it misfired). Returns what was done; never raises on a missing file (the demotion is still reported)."""
    import cv2

    into = Path(folder) / "demoted"
    into.mkdir(parents=True, exist_ok=True)
    source = graph_file(graph_dir, name)
    moved = source.is_file()
    if moved:
        shutil.move(str(source), str(into / source.name))
    if frame is not None:
        cv2.imwrite(str(into / f"{name}.misfire.png"), frame)
    report = {"demoted": name, "reason": reason, "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
              "graph_file": str(source), "removed_from_graph": moved}
    (into / f"{name}.yaml").write_text(yaml.safe_dump(report, sort_keys=False))
    log.warning("learned popup %s demoted: %s", name, reason)
    return report


def _load_graph(graph_dir: Path) -> Any:
    from engine.config.loader import load_graph

    return load_graph(graph_dir).resolve(None)


def _write_template(pack_dir: Path, proposal: dict[str, Any], frame: Any) -> list[Path]:
    from engine.config.assetpacks import INDEX_FILE, DirectoryAssetPack, crop, new_index, save_index, write_template
    from engine.config.assets import Template

    area = tuple(int(v) for v in proposal["area"])
    pack_dir.mkdir(parents=True, exist_ok=True)
    index = DirectoryAssetPack(pack_dir).index if (pack_dir / INDEX_FILE).is_file() else new_index(None)
    files = write_template(pack_dir, Template(name=f"learned/{proposal['name']}", frames=(crop(frame, area),),
                                              area=area), index)
    save_index(pack_dir, index)
    return files


def known_frames(folder: Path, before: Any, pack: Any) -> list[Path]:
    """Frames of known pages: those the learner kept, and error-bundle frames (newest bundles first, at most
    MAX_BUNDLE_FRAMES) that the graph `before` the proposal reads as a known page without popups."""
    import cv2

    from engine.observe.observer import Observer

    frames = sorted((Path(folder) / "known").glob("*.png"))
    bundles = Path(folder).parent / "error_bundles"
    if bundles.is_dir():
        observer = Observer(before, pack)
        newest = sorted(bundles.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
        for path in [f for b in newest if b.is_dir() for f in sorted(b.glob("*.png"))][:MAX_BUNDLE_FRAMES]:
            frame = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if frame is not None and frame.shape[1::-1] == tuple(before.resolution):
                obs = observer.observe(frame)
                if obs.page is not None and not obs.popups and not obs.loading:
                    frames.append(path)
    return frames


def fires_on_known(folder: Path, graph_dir: Path, pack_dir: Path, name: str, before: Any,
                   pages_pack: Any) -> list[Path]:
    """The known pages' frames on which the new popup is observed (the graph is loaded, so it is validated)."""
    import cv2

    from engine.config.assetpacks import DirectoryAssetPack, LayeredPack
    from engine.observe.observer import Observer

    graph = _load_graph(graph_dir)
    pack = LayeredPack([DirectoryAssetPack(pack_dir, graph.server), pages_pack], graph.server)
    observer = Observer(graph, pack)
    fired = []
    for frame_path in known_frames(folder, before, pack):
        frame = cv2.imread(str(frame_path), cv2.IMREAD_COLOR)
        if frame is not None and name in observer.observe(frame).popups:
            fired.append(frame_path)
    return fired


def _undo(paths: list[Path], index_file: Path, index_before: bytes | None) -> None:
    """Take back what a refused accept wrote: its files, and the pack index as it was."""
    for p in paths:
        p.unlink(missing_ok=True)
    if index_before is None:
        index_file.unlink(missing_ok=True)
    else:
        index_file.write_bytes(index_before)


def _move(path: Path, into: Path) -> None:
    into.mkdir(exist_ok=True)
    for part in (path, path.with_suffix(".frame.png"), path.with_suffix(".crop.png")):
        if part.exists():
            shutil.move(str(part), str(into / part.name))
