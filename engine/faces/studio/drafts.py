"""The studio's draft panel: an explorer's draft folder (``studio --draft DIR``) shown page by page with its member
frames and signature boxes, edited (rename, merge, split, drop a link) and accepted as graph YAML; the edits are
engine.explore.review's, run off the event loop one at a time (the API is listed in engine.faces.studio.app).

Every path a request names is resolved inside the draft folder (``..``, absolute paths and symlinks out are refused),
and an edit names the draft's revision it was made on, so two tabs cannot undo each other's edits unseen.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

import yaml
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from engine.core.errors import DraftEditRefused, EngineError
from engine.faces.studio.authoring import body_json, read_frame
from engine.faces.studio.replies import NO_STORE, as_json, error, studio_of

log = logging.getLogger(__name__)

NO_DRAFT = "no draft is open: start the studio with --draft DIR (a folder `python -m engine explore` wrote)"
MEMBERS_SHOWN = 60
"""Member frames listed per page at most (the count says how many it has)."""
IMAGE_FOLDERS = ("evidence", "frames", "assets")
MAX_IMAGE_BYTES = 32 << 20
"""A PNG of the draft larger than this is not served (a frame at 1280x720 is a few MB at most)."""
STATUS = {"unknown": 404, "invalid": 400, "taken": 409, "stale": 409, "exists": 409}
"""DraftEditRefused.reason -> HTTP status."""


def _url(path: str) -> str:
    return f"/api/draft/files/{path}"


def _signature(sig: Any) -> dict[str, Any]:
    return sig.model_dump(mode="json", exclude_none=True)


def _frames(members: Any) -> dict[str, Any]:
    shown = list(members)[:MEMBERS_SHOWN]
    return {"members": [{"path": m, "url": _url(m)} for m in shown], "count": len(list(members))}


def view(folder: Path) -> dict[str, Any]:
    """The draft in `folder` as the page shows it, with its revision."""
    from engine.explore import review

    draft, rev = review.read(folder)
    outgoing: dict[str, int] = {}
    incoming: dict[str, int] = {}
    links = []
    for index, link in enumerate(draft.links):
        src = link.from_
        outgoing[src] = outgoing.get(src, 0) + 1
        incoming[link.to] = incoming.get(link.to, 0) + 1
        links.append({"index": index, "from": src, "to": link.to, "seen": link.seen, "tried": link.tried,
                      "action": link.action.model_dump(mode="json", exclude_none=True)})
    pages = [{"name": p.name, "title": p.title, "visits": p.visits, "loading": p.loading, **_frames(p.members),
              "signatures": [_signature(s) for s in p.signatures],
              "links_out": outgoing.get(p.name, 0), "links_in": incoming.get(p.name, 0)} for p in draft.pages]
    popups = [{"name": p.name, "over": list(p.over), "box": list(p.box) if p.box else None, **_frames(p.members),
               "signatures": [_signature(s) for s in p.signatures],
               "dismiss": p.dismiss.model_dump(mode="json", exclude_none=True) if p.dismiss else None}
              for p in draft.popups]
    return {"folder": str(folder), "rev": rev, "game": draft.game, "server": draft.server,
            "resolution": list(draft.resolution), "made": _plain(draft.made), "pages": pages, "links": links,
            "popups": popups, "loading": len(draft.loading),
            "review": [{"kind": r.kind, "pages": list(r.pages), "note": r.note} for r in draft.review],
            "original": (folder / review.ORIGINAL).is_file()}


def _plain(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if dump is not None else value


def _answer(exc: Exception) -> Response:
    if isinstance(exc, DraftEditRefused):
        return error(STATUS.get(exc.reason, 400), str(exc), reason=exc.reason, exists=exc.exists)
    return error(400, f"the draft cannot be read: {exc}", reason="invalid")


FAULTS = (EngineError, ValueError, OSError, yaml.YAMLError)
"""What reading or editing a draft may raise that is the draft's or the request's fault (pydantic's
ValidationError is a ValueError)."""


async def show(request: Request) -> Response:
    studio = studio_of(request)
    if studio.draft_dir is None:
        return as_json({"folder": None, "note": NO_DRAFT})
    try:
        return as_json(await run_in_threadpool(view, studio.draft_dir))
    except FAULTS as exc:
        return _answer(exc)


async def file(request: Request) -> Response:
    """One PNG of the draft folder (a member frame, a recording frame, a template)."""
    from engine.explore.review import inside

    studio = studio_of(request)
    if studio.draft_dir is None:
        return error(404, NO_DRAFT)
    relative = request.path_params["path"]
    try:
        path = inside(studio.draft_dir, relative)
    except DraftEditRefused as exc:
        return _answer(exc)
    parts = path.relative_to(studio.draft_dir).parts
    if path.suffix.lower() != ".png" or len(parts) < 2 or parts[0] not in IMAGE_FOLDERS or not path.is_file():
        return error(404, f"{relative[:200]!r} is not a frame of the draft")
    if path.stat().st_size > MAX_IMAGE_BYTES:
        return error(413, f"{relative[:200]!r} is over {MAX_IMAGE_BYTES >> 20} MiB")
    return Response(await run_in_threadpool(path.read_bytes), media_type="image/png", headers=NO_STORE)


# --------------------------------------------------------------------------------------------------- edits


def _edit(studio: Any, rev: str, make: Callable[[Any, Any], Any], did: str) -> dict[str, Any]:
    from engine.explore import review

    folder = studio.draft_dir
    signer = review.frame_signer(folder, read_frame)
    with studio.drafting:
        review.edit_folder(folder, rev, lambda draft: make(draft, signer))
        shown = view(folder)
    log.info("studio: draft %s: %s", folder, did)
    return {**shown, "did": did}


def _strings(body: dict[str, Any] | None, *keys: str) -> bool:
    return body is not None and all(isinstance(body.get(k), str) for k in keys)


async def _run(request: Request, keys: tuple[str, ...], usage: str, make: Callable[[dict], tuple]) -> Response:
    studio = studio_of(request)
    if studio.draft_dir is None:
        return error(404, NO_DRAFT)
    body = await body_json(request)
    if not _strings(body, "rev", *keys):
        return error(400, f"send {usage}", reason="invalid")
    try:
        edit, did = make(body)
        return as_json(await run_in_threadpool(_edit, studio, body["rev"], edit, did))
    except FAULTS as exc:
        return _answer(exc)


async def rename(request: Request) -> Response:
    from engine.explore import review

    return await _run(request, ("old", "new"), '{"rev", "old": PAGE_OR_POPUP, "new": NAME}', lambda b: (
        lambda draft, _: review.rename(draft, b["old"], b["new"]), f"renamed {b['old']} to {b['new']}"))


async def merge(request: Request) -> Response:
    from engine.explore import review

    return await _run(request, ("keep", "other"), '{"rev", "keep": PAGE, "other": PAGE}', lambda b: (
        lambda draft, signer: review.merge(draft, b["keep"], b["other"], signer),
        f"merged {b['other']} into {b['keep']}"))


def _split(body: dict[str, Any]) -> tuple:
    from engine.explore import review

    frames = body.get("frames")
    if not isinstance(frames, list) or not all(isinstance(f, str) for f in frames) or len(frames) > 10_000:
        raise DraftEditRefused('"frames" must be a list of member frame paths', "invalid")
    return (lambda draft, signer: review.split(draft, body["page"], frames, body["name"], signer),
            f"split {len(frames)} frame(s) of {body['page']} into {body['name']}")


async def split(request: Request) -> Response:
    return await _run(request, ("page", "name"), '{"rev", "page": PAGE, "frames": [PATH, ...], "name": NEW_PAGE}',
                      _split)


def _drop(body: dict[str, Any]) -> tuple:
    from engine.explore import review

    return (lambda draft, _: review.drop_link(draft, body.get("index"), body["from"], body["to"]),
            f"dropped the link from {body['from']} to {body['to']}")


async def drop_link(request: Request) -> Response:
    return await _run(request, ("from", "to"), '{"rev", "index": N, "from": PAGE, "to": PAGE}', _drop)


# --------------------------------------------------------------------------------------------------- accept


def _accept(studio: Any, rev: str, out: str, overwrite: bool) -> dict[str, Any]:
    from engine.config.loader import check_graph
    from engine.explore import review

    with studio.drafting:
        if review.revision(studio.draft_dir) != rev:
            raise DraftEditRefused("the draft changed since it was read: reload it before accepting", "stale")
        done = review.accept(studio.draft_dir, out, overwrite=overwrite)
    report = check_graph(done.folder)
    return {"folder": str(done.folder), "written": done.written, "unchanged": done.unchanged,
            "replaced": [{"path": p, "backup": b} for p, b in done.replaced],
            "validate": {"ok": report.ok, "summary": report.summary(),
                         "problems": [p.to_dict() for p in report.problems]}}


async def accept(request: Request) -> Response:
    studio = studio_of(request)
    if studio.draft_dir is None:
        return error(404, NO_DRAFT)
    body = await body_json(request)
    out = "" if body is None or body.get("out") is None else body.get("out")
    if not _strings(body, "rev") or not isinstance(out, str) or not isinstance(body.get("overwrite", False), bool):
        return error(400, 'send {"rev", "out": FOLDER_BELOW_THE_DRAFT (default: the draft folder), '
                          '"overwrite": false}', reason="invalid")
    try:
        done = await run_in_threadpool(_accept, studio, body["rev"], out, body.get("overwrite", False))
    except FAULTS as exc:
        return _answer(exc)
    log.info("studio: draft accepted into %s (%s)", done["folder"], done["validate"]["summary"])
    return as_json(done)
