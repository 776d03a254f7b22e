"""Proposals, the graph's lessons waiting for review: list, show, accept, reject, demote.

A proposal (written by engine.learning.learner) is a YAML file in a proposals folder beside a run's transcript, with its
frame (``NAME.frame.png``) and template crop (``NAME.crop.png``). ``python -m engine proposals`` and the studio
both come here.

Accepting writes the popup into the user's graph folder as a new file (``learned_<name>.yaml``, with the schema
modeline) and its templates into the user's asset pack, but only after the graph still loads (file:line errors as
usual) and the new popup fires on no clean frame (engine.learning.evidence: frames the learner verified, frames the
user labelled, the pack's references, and error-bundle frames of known pages that do not show the proposal
itself; a bounded sample of each). Otherwise nothing stays written and ``ProposalRefused`` names the frames where
it fired. The shipped graph is never written.

A proposal with a ``button`` and a ``box`` (the dialog's area) becomes a popup whose dismissal finds the button
inside the box and taps it there (``search`` in its tap): a dialog whose button moves is one popup. One whose
panel moved between sightings (``shift``) is looked for that much farther (its signature's ``offset``, its search
box); one closed by a key (``key``) is dismissed by that key.

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
BUTTON_SUFFIX = "_BUTTON"
"""The learned button a popup's dismissal searches for is named after the popup with this suffix."""


MOVE_PAD = 16
"""Pixels added to a moving dialog's search margin (engine.learning.proposals._margin)."""
MAX_WAITING = 32
"""Proposals kept waiting in a proposals folder: past this, the least seen (then the longest unseen) go. A screen
that differs every time (a game's random screen closed by back, a notice with a timer) is proposed anew at each
showing and never counted up; unbounded, a chore running for days would fill the disk with its frames (1.5 to
4 MB each at 1920x1080) and every new lesson would compare itself with all of them."""
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


def prune(folder: Path, keep: int = MAX_WAITING, *, spare: str | None = None) -> list[str]:
    """Delete the waiting proposals of `folder` past the `keep` most seen (fewest sightings first, then the longest
    unseen; never `spare`, the one just written), with their frames and crops; the names deleted. Accepted, rejected
    and demoted ones (in their own folders) are not counted."""
    rows = []
    for path in Path(folder).glob("*.yaml"):
        try:
            proposal = read_proposal(path)
            seen = int(proposal.get("sightings", 1))
        except (ValueError, OSError, yaml.YAMLError, TypeError):
            proposal, seen = {}, 0  # (not a proposal: first to go)
        if path.stem != spare:
            rows.append((seen, str(proposal.get("last_seen", "")), path.stem, path))
    gone = []
    for _seen, _last, name, path in sorted(rows)[:max(0, len(rows) + (spare is not None) - keep)]:
        for part in (path, path.with_suffix(".frame.png"), path.with_suffix(".crop.png")):
            part.unlink(missing_ok=True)
        gone.append(name)
    if gone:
        log.info("proposals: %d dropped to keep %d waiting in %s (fewest sightings first): %s", len(gone), keep,
                 folder, ", ".join(gone[:5]))
    return gone


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


def _found_button(proposal: dict[str, Any]) -> tuple[list[int], list[int]] | None:
    """The proposal's button and the dialog's box it is searched in, when it has them."""
    button, box = proposal.get("button"), proposal.get("box")
    return ([int(v) for v in button], [int(v) for v in box]) if _ints(button, 4) and _ints(box, 4) else None


def popup_yaml(proposal: dict[str, Any], schema: str | None = None) -> str:
    """The graph file a proposal becomes: its buttons (area, learned/ asset) and its popup (template, tap: at the
    fixed point, or at its button found inside the dialog)."""
    name, area = proposal["name"], [int(v) for v in proposal["area"]]
    buttons = [{"name": name, "area": area, "asset": f"learned/{name}"}]
    dismiss: dict[str, Any] = {"type": "tap", "point": [int(v) for v in proposal["tap"]]}
    signature: dict[str, Any] = {"type": "template", "button": name}
    margin = _margin(proposal)
    if margin:  # the dialog moved between sightings: its signature and its button are looked for that far
        signature["offset"] = [margin, margin]
    found = _found_button(proposal)
    if proposal.get("key") in ("back", "home"):
        dismiss = {"type": "key", "key": proposal["key"]}
    elif found is not None:
        buttons.append({"name": name + BUTTON_SUFFIX, "area": found[0], "asset": f"learned/{name}{BUTTON_SUFFIX}"})
        box = found[1]
        search = [max(0, box[0] - margin), max(0, box[1] - margin), box[2] + margin, box[3] + margin]
        dismiss = {"type": "tap", "button": name + BUTTON_SUFFIX, "search": search}
    moves = " (its button moves)" if proposal.get("moves") else ""
    moves += f" (found by the {proposal['found_by']})" if proposal.get("found_by") in ("search", "model") else ""
    data = {
        "buttons": buttons,
        "popups": [{"name": name, "description": f"learned: {proposal.get('label', name)} "
                                                 f"(seen {proposal.get('sightings', 1)} time(s)){moves}",
                    "signatures": [signature],
                    "dismiss": [dismiss],
                    "priority": PRIORITY, "learned": name}],
    }
    head = f"# yaml-language-server: $schema={schema}\n" if schema else ""
    return head + yaml.safe_dump(data, sort_keys=False, default_flow_style=None)


def _margin(proposal: dict[str, Any]) -> int:
    """How far from where it was seen first a dialog that moved is looked for: twice the farthest shift seen (a
    few sightings rarely see its extremes) plus MOVE_PAD; 0 when it never moved."""
    shift = proposal.get("shift")
    return 2 * shift + MOVE_PAD if isinstance(shift, int) and 0 < shift < 1000 else 0


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
        ProposalRefused: the new popup fires on clean frames (nothing stays written).
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
        verdict = _judge(folder, proposal, frame, graph_dir, pack_dir, before, pages_pack)
    except ConfigError:
        _undo(written, index_file, index_before)
        raise
    if verdict.fired:
        _undo(written, index_file, index_before)
        raise ProposalRefused(f"{proposal['name']}'s signature also fires on frames of known pages: "
                              f"{', '.join(str(f) for f in verdict.fired)}; nothing was written (cut another crop, "
                              "or reject it)", verdict.fired)
    _move(path, Path(folder) / "accepted")
    log.info("accepted %s (%s) into %s; checked %s, %d bundle frame(s) showed it", proposal["name"], by, target,
             verdict.checked, verdict.sightings)
    return {"accepted": proposal["name"], "by": by, "graph_file": str(target), "template": str(written[1]),
            "checked": verdict.checked, "bundle_sightings": verdict.sightings}


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
    """The signature's template (first in the list), and the button's when the dismissal searches for it."""
    from engine.config.assetpacks import INDEX_FILE, DirectoryAssetPack, crop, new_index, save_index, write_template
    from engine.config.assets import Template

    name = proposal["name"]
    cuts = [(f"learned/{name}", tuple(int(v) for v in proposal["area"]))]
    found = _found_button(proposal)
    if found is not None:
        cuts.append((f"learned/{name}{BUTTON_SUFFIX}", tuple(found[0])))
    pack_dir.mkdir(parents=True, exist_ok=True)
    index = DirectoryAssetPack(pack_dir).index if (pack_dir / INDEX_FILE).is_file() else new_index(None)
    files = [f for asset, area in cuts
             for f in write_template(pack_dir, Template(name=asset, frames=(crop(frame, area),), area=area), index)]
    save_index(pack_dir, index)
    return files


def _judge(folder: Path, proposal: dict[str, Any], frame: Any, graph_dir: Path, pack_dir: Path, before: Any,
           pages_pack: Any) -> Any:
    """The grown graph (loaded, so validated) and its pack judge the proposal on clean evidence
    (engine.learning.evidence); its signature is cut from its `frame`."""
    from engine.config.assetpacks import DirectoryAssetPack, LayeredPack, crop
    from engine.learning.evidence import judge
    from engine.observe.observer import Observer

    graph = _load_graph(graph_dir)
    pack = LayeredPack([DirectoryAssetPack(pack_dir, graph.server), pages_pack], graph.server)
    observer, name = Observer(graph, pack), proposal["name"]
    signature = crop(frame, tuple(int(v) for v in proposal["area"]))
    return judge(folder, proposal, signature, lambda f: name in observer.observe(f).popups, before, pack)


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
