"""The studio's proposals panel: the popups the engine learned from the vision model (engine.learning.learner), shown
with their frames and crops, accepted into the user's graph folder or rejected (the API is listed in
engine.faces.studio.app).

The work is engine.learning.proposals' (the ``proposals`` command's too); here it runs off the event loop, one review at
a time, and an accepted popup is taken up by the live session at once when its learner can (``Learner.adopt``).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from engine.config.schema import NAME_PATTERN
from engine.core.errors import ConfigError, PathRefused
from engine.faces.studio.replies import NO_STORE, as_json, error, studio_of
from engine.faces.studio.security import SAFE_NAME, confine_name

log = logging.getLogger(__name__)

FOLDER = "proposals"
"""The proposals folder's name inside the transcript folder (engine.learning.learner.attach writes there)."""
IMAGES = {"frame_url": "frame.png", "crop_url": "crop.png"}
NO_FOLDER = "this session keeps no proposals: start the studio with --transcript DIR to learn from its runs"
SHIPPED = "the shipped graph is never written: start the studio with --graph on your copy"


def proposals_folder(studio: Any) -> Path | None:
    return studio.transcript_dir / FOLDER if studio.transcript_dir is not None else None


def _proposal_file(folder: Path | None, name: str) -> Path:
    """The YAML file of proposal `name` (PathRefused: 400 for a name that is not a plain one, 404 when missing)."""
    if folder is None:
        raise PathRefused(NO_FOLDER, 404)
    if not re.match(NAME_PATTERN, name) or not SAFE_NAME.match(name):
        raise PathRefused(f"{name!r} is not a proposal's name", 400)
    try:
        return confine_name(folder, f"{name}.yaml")
    except PathRefused:
        raise PathRefused(f"no proposal {name!r}", 404) from None


# --------------------------------------------------------------------------------------------------- listing


def _row(folder: Path, proposal: dict[str, Any], warnings: list[str]) -> dict[str, Any]:
    """A proposal as the page shows it: its fields, its images' URLs (None when missing) and the popup's YAML."""
    from engine.learning.proposals import popup_yaml

    name = str(proposal["name"])
    row: dict[str, Any] = json.loads(json.dumps(proposal, default=str))  # dates and the like as text
    for key, image in IMAGES.items():
        row[key] = f"/api/proposals/{name}/{image}" if (folder / f"{name}.{image}").is_file() else None
    try:
        row["yaml"] = popup_yaml(proposal)
    except (TypeError, ValueError) as exc:
        row["yaml"] = None
        warnings.append(f"{name}: its area or tap is not whole pixels ({exc}): reject it")
    return row


def _list(folder: Path | None) -> dict[str, Any]:
    from engine.learning.proposals import list_proposals

    if folder is None:
        return {"proposals": [], "warnings": [], "folder": None, "note": NO_FOLDER}
    if not folder.is_dir():
        return {"proposals": [], "warnings": [], "folder": str(folder), "note": "no proposal yet"}
    rows, warnings = list_proposals(folder)
    shown = [_row(folder, proposal, warnings) for proposal in rows]
    return {"proposals": shown, "warnings": warnings, "folder": str(folder)}


async def listing(request: Request) -> Response:
    return as_json(await run_in_threadpool(_list, proposals_folder(studio_of(request))))


async def _image(request: Request, suffix: str) -> Response:
    name = request.path_params["name"]
    path = _proposal_file(proposals_folder(studio_of(request)), name).with_name(f"{name}{suffix}")
    if not path.is_file():
        return error(404, f"{path.name} is missing")
    return Response(await run_in_threadpool(path.read_bytes), media_type="image/png", headers=NO_STORE)


async def frame_png(request: Request) -> Response:
    """The screen the proposal was learned on."""
    return await _image(request, ".frame.png")


async def crop_png(request: Request) -> Response:
    """The proposal's template, cut from its frame at its area."""
    return await _image(request, ".crop.png")


# --------------------------------------------------------------------------------------------------- review


def _shown_path(studio: Any, path: Path) -> str:
    """A frame where a refused signature fired, relative to the transcript folder when it is inside."""
    root = studio.transcript_dir
    resolved = Path(path).resolve()
    return str(resolved.relative_to(root)) if root is not None and resolved.is_relative_to(root) else str(path)


def _adopt(studio: Any) -> bool:
    """Let the live session see the graph folder as it now is; False when it cannot (a restart will)."""
    learner = getattr(studio.session.navigator, "learner", None)
    if learner is None or getattr(learner, "adopt", None) is None:
        return False
    try:
        learner.adopt()
    except Exception as exc:  # noqa: BLE001 - the popup is accepted; a graph the session cannot take up is logged
        log.warning("the accepted popup could not be taken up by the live session: %s", exc)
        return False
    studio.svg_cache.clear()
    return True


def _accept(studio: Any, folder: Path, name: str) -> dict[str, Any]:
    from engine.learning.proposals import accept, learned_pack_dir

    with studio.reviewing:
        _proposal_file(folder, name)
        done = accept(folder, name, studio.graph_dir, learned_pack_dir(studio.graph_dir),
                      pages_pack=studio.session.assets, by="user")
        done["adopted"] = _adopt(studio)
    return done


async def accept_one(request: Request) -> Response:
    from engine.core.errors import ProposalRefused
    from engine.learning.proposals import learned_pack_dir

    studio = studio_of(request)
    folder, name = proposals_folder(studio), request.path_params["name"]
    _proposal_file(folder, name)
    if learned_pack_dir(studio.graph_dir) is None:
        return error(409, SHIPPED)
    try:
        done = await run_in_threadpool(_accept, studio, folder, name)
    except ProposalRefused as exc:
        return error(409, str(exc), fired=[_shown_path(studio, p) for p in exc.fired])
    except ConfigError as exc:
        return error(400, str(exc))
    log.info("studio: accepted %s into %s (live session %s)", name, done["graph_file"],
             "took it up" if done["adopted"] else "takes it up when restarted")
    return as_json(done)


def _reject(studio: Any, folder: Path, name: str) -> dict[str, Any]:
    from engine.learning.proposals import reject

    with studio.reviewing:
        _proposal_file(folder, name)
        return reject(folder, name)


async def reject_one(request: Request) -> Response:
    studio = studio_of(request)
    folder, name = proposals_folder(studio), request.path_params["name"]
    _proposal_file(folder, name)
    try:
        done = await run_in_threadpool(_reject, studio, folder, name)
    except ConfigError as exc:
        return error(400, str(exc))
    log.info("studio: rejected %s", name)
    return as_json(done)
