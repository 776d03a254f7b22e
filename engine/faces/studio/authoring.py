"""The studio's authoring panel: frames captured or uploaded, templates cut from them into the asset pack, a
signature tested on a folder of frames, the graph folder validated (the API is listed in engine.faces.studio.app)."""

from __future__ import annotations

import itertools
import json
import logging
import re
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import yaml
from pydantic import TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from engine.config.schema import NAME_PATTERN
from engine.core.errors import EngineError, PathRefused
from engine.core.imageheader import check_image_bytes, check_image_file
from engine.faces.studio.replies import NO_STORE, as_json, error, studio_of
from engine.faces.studio.security import confine, confine_name
from engine.faces.studio.signatures import compile_signature, studio_pack

log = logging.getLogger(__name__)

FRAME_SUFFIXES = (".png", ".jpg", ".jpeg")
MAX_TEST_FRAMES = 200
"""Frames one signature test reads at most (the rest are counted in ``skipped``)."""
MAX_VISITED = 20_000
"""Files and folders one signature test's walk looks at, at most."""
ASSET_MODULE = "studio"
"""Templates cut here are named ``studio/NAME`` in the pack."""
_counter = itertools.count(1)


async def body_json(request: Request) -> dict[str, Any] | None:
    try:
        body = json.loads(await request.body() or b"null")
    except (ValueError, UnicodeDecodeError):
        return None
    return body if isinstance(body, dict) else None


def pack_folder(assets_dir: Path | None, captures_dir: Path) -> Path:
    """Where templates are cut: the session's pack when it is in the project's layout, else captures/pack."""
    if assets_dir is not None and assets_dir.is_dir():
        alas = (assets_dir / "assets").is_dir() or any(assets_dir.glob("*/*/*.png"))
        if (assets_dir / "index.json").is_file() or not alas:
            return assets_dir
    return captures_dir / "pack"


# --------------------------------------------------------------------------------------------------- frames


def save_frame(captures: Path, frame: np.ndarray, prefix: str) -> dict[str, Any]:
    name = f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}-{next(_counter):03d}.png"
    ok, encoded = cv2.imencode(".png", np.ascontiguousarray(frame))
    if not ok:
        raise ValueError("the frame could not be encoded as PNG")
    (captures / name).write_bytes(encoded.tobytes())
    height, width = frame.shape[:2]
    return {"name": name, "url": f"/api/frames/{name}", "width": width, "height": height}


def _decode(data: bytes, resolution: tuple[int, int]) -> np.ndarray:
    """An uploaded PNG or JPEG as a BGR frame at the graph's resolution (ValueError or BadFrame when not)."""
    from engine.device.frames import fit

    if not (data.startswith(b"\x89PNG\r\n\x1a\n") or data.startswith(b"\xff\xd8")):
        raise ValueError("only PNG and JPEG images are accepted")
    check_image_bytes(data, "the upload")
    frame = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if frame is None:
        raise ValueError("the image could not be decoded")
    return fit(frame, resolution)


async def capture(request: Request) -> Response:
    studio = studio_of(request)
    result = await run_in_threadpool(studio.tools.call, "adb_screenshot", {})
    if not result.png:
        return error(503, f"no frame: {result.text}", status=result.status)
    frame = cv2.imdecode(np.frombuffer(result.png, np.uint8), cv2.IMREAD_COLOR)
    if frame is None:
        return error(503, "no frame: the device's screenshot could not be decoded", status="bad_frame")
    return as_json(await run_in_threadpool(save_frame, studio.captures_dir, frame, "capture"))


async def upload(request: Request) -> Response:
    studio = studio_of(request)
    if request.headers.get("content-type", "").startswith("multipart/form-data"):
        form = await request.form(max_files=1, max_fields=4)
        part = form.get("file") or next((v for v in form.values() if hasattr(v, "read")), None)
        if part is None or not hasattr(part, "read"):
            await form.close()
            return error(400, 'send the image as the multipart field "file"')
        data = await part.read()
        await form.close()
    else:
        data = await request.body()
    if not data:
        return error(400, "the body is empty: send a PNG or JPEG")
    try:
        frame = await run_in_threadpool(_decode, data, tuple(studio.graph.resolution))
    except (ValueError, EngineError) as exc:
        return error(400, f"refused: {exc}")
    return as_json(await run_in_threadpool(save_frame, studio.captures_dir, frame, "upload"))


def _frame_names(captures: Path) -> list[str]:
    files = [p for p in captures.iterdir() if p.is_file() and p.suffix.lower() in FRAME_SUFFIXES]
    return [p.name for p in sorted(files, key=lambda p: (-p.stat().st_mtime, p.name))]


async def frames(request: Request) -> Response:
    return as_json({"frames": await run_in_threadpool(_frame_names, studio_of(request).captures_dir)})


async def frame_file(request: Request) -> Response:
    path = confine_name(studio_of(request).captures_dir, request.path_params["name"])
    if path.suffix.lower() not in FRAME_SUFFIXES or not path.is_file():
        return error(404, "not a saved frame")
    kind = "image/png" if path.suffix.lower() == ".png" else "image/jpeg"
    return Response(await run_in_threadpool(path.read_bytes), media_type=kind, headers=NO_STORE)


def read_frame(path: Path) -> np.ndarray:
    check_image_file(path)
    frame = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if frame is None:
        raise ValueError(f"{path.name} could not be decoded")
    return frame


# --------------------------------------------------------------------------------------------------- templates


def _box(value: Any, width: int, height: int) -> tuple[int, int, int, int]:
    if not isinstance(value, list) or len(value) != 4 or not all(isinstance(v, int) and not isinstance(v, bool)
                                                                 for v in value):
        raise ValueError("box must be [x1, y1, x2, y2] in whole pixels")
    x1, y1, x2, y2 = value
    if not (0 <= x1 < x2 <= width and 0 <= y1 < y2 <= height):
        raise ValueError(f"box {value} is not inside the {width}x{height} frame with x1 < x2 and y1 < y2")
    if x2 - x1 < 3 or y2 - y1 < 3:
        raise ValueError(f"box {value} is too small for a template (at least 3x3 pixels)")
    return x1, y1, x2, y2


def snippet(name: str, asset: str, area: tuple[int, int, int, int]) -> str:
    """The YAML to paste: the button and a template signature on it."""
    button = {"name": name, "area": list(area), "asset": asset}
    text = yaml.safe_dump({"buttons": [button]}, sort_keys=False, default_flow_style=None)
    signature = yaml.safe_dump({"signatures": [{"type": "template", "button": name}]}, sort_keys=False)
    return (f"# the button (add to a graph file's buttons:)\n{text}"
            f"# its signature (add to a page's or popup's signatures:)\n{signature}")


class _TemplateExists(Exception):
    """A template of that name was cut before: the page must ask before it is replaced."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"a template {path.name} exists already ({path}): overwrite it? The old file is kept "
                         f"beside it as a .bak")
        self.path = path


def keep_old(path: Path) -> Path:
    """Move `path` aside to ``NAME.png.YYYYmmdd-HHMMSS[-N].bak`` beside it (not a .png, so no pack reads it)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = path.with_name(f"{path.name}.{stamp}.bak")
    number = 1
    while backup.exists():
        number += 1
        backup = path.with_name(f"{path.name}.{stamp}-{number}.bak")
    path.rename(backup)
    return backup


def _cut(studio: Any, frame_name: str, box_value: Any, name: str, overwrite: bool = False) -> dict[str, Any]:
    from engine.config.assetpacks import INDEX_FILE, DirectoryAssetPack, crop, new_index, save_index, write_template
    from engine.config.assets import Template

    frame = read_frame(confine_name(studio.captures_dir, frame_name))
    height, width = frame.shape[:2]
    if (width, height) != tuple(studio.graph.resolution):
        raise ValueError(f"the frame is {width}x{height}, not the graph's {studio.graph.resolution}")
    area = _box(box_value, width, height)
    asset = f"{ASSET_MODULE}/{name}"
    pack = studio.pack_dir
    pack.mkdir(parents=True, exist_ok=True)
    with studio.lock:
        index = DirectoryAssetPack(pack).index if (pack / INDEX_FILE).is_file() else new_index(studio.graph.server)
        existing = [p for p in (pack / ASSET_MODULE).glob(f"{name}*.png") if p.stem.split("@")[0] == name]
        if existing and not overwrite:
            raise _TemplateExists(pack / f"{asset}.png")
        replaced = [{"path": str(p), "backup": str(keep_old(p))} for p in sorted(existing)]
        old_area = (index.get("templates", {}).get(asset) or {}).get("area")
        written = write_template(pack, Template(name=asset, frames=(crop(frame, area),), area=area), index)
        save_index(pack, index)
    return {"path": str(written[0]), "asset": asset, "yaml": snippet(name, asset, area),
            "button": {"name": name, "area": list(area), "asset": asset},
            "signature": {"type": "template", "asset": asset, "area": list(area), "name": name},
            "replaced": replaced, "old_area": old_area if replaced else None}


async def template(request: Request) -> Response:
    studio = studio_of(request)
    body = await body_json(request)
    if body is None or not all(isinstance(body.get(k), str) for k in ("frame", "name")):
        return error(400, 'send {"frame": NAME, "box": [x1, y1, x2, y2], "name": "BUTTON_NAME"[, "overwrite": true]}')
    if not re.match(NAME_PATTERN, body["name"]) or len(body["name"]) > 100:
        return error(400, f"name {body['name']!r} does not match the graph's name pattern {NAME_PATTERN}")
    try:
        return as_json(await run_in_threadpool(_cut, studio, body["frame"], body.get("box"), body["name"],
                                               body.get("overwrite") is True))
    except _TemplateExists as exc:
        return error(409, str(exc), exists=str(exc.path), overwrite=False)
    except (ValueError, EngineError) as exc:
        return error(getattr(exc, "http_status", 400), str(exc))


# --------------------------------------------------------------------------------------------------- testing


def resolve_folder(studio: Any, folder: str) -> Path:
    """A folder a request names: ``captures``, ``pack``, ``graph`` or ``transcript`` then a path below it, or a
    path below the captures folder (PathRefused when it leaves its root)."""
    roots = studio.roots()
    parts = [p for p in folder.replace("\\", "/").split("/") if p not in ("", ".")]
    if folder.startswith(("/", "\\")):
        raise PathRefused(f"{folder!r}: absolute paths are refused", 400)
    if parts and parts[0] in roots:
        root, rest = roots[parts[0]], "/".join(parts[1:])
    else:
        root, rest = studio.captures_dir, "/".join(parts)
    path = confine(root, rest)
    if not path.is_dir():
        raise PathRefused(f"{folder!r} is not a folder", 400)
    return path


def frame_files(folder: Path, limit: int = MAX_TEST_FRAMES, visit: int = MAX_VISITED,
                skip: tuple[Path, ...] = ()) -> tuple[list[Path], int]:
    """The frames (PNG, JPEG) in `folder` and every subfolder but `skip`, sorted by their path below it: the first
    `limit`, and how many more were found. The walk stops after `visit` entries, follows no symlinked folder and
    skips a file whose link leads out of `folder`."""
    import os

    root = folder.resolve()
    skipped = {p.resolve() for p in skip} - {root}
    found: list[Path] = []
    seen = 0
    for where, dirs, names in os.walk(root, followlinks=False):
        dirs[:] = sorted(d for d in dirs if (Path(where) / d) not in skipped)
        for name in sorted(names):
            seen += 1
            path = Path(where) / name
            if path.suffix.lower() in FRAME_SUFFIXES and path.is_file() and path.resolve().is_relative_to(root):
                found.append(path)
        seen += len(dirs)
        if seen >= visit:
            break
    found.sort(key=lambda p: p.relative_to(root).as_posix())
    return found[:limit], max(0, len(found) - limit)


def _test(studio: Any, signature: Any, folder: Path) -> dict[str, Any]:
    from verifiers.common import frame_scope

    pack = studio_pack(studio.pack_dir, studio.session.assets)
    check = compile_signature(signature, studio.graph, pack)
    files, skipped = frame_files(folder, skip=(studio.pack_dir,))  # its templates are no frames
    rows = []
    observer = studio.session.observer
    root = folder.resolve()
    for path in files:
        name = path.relative_to(root).as_posix()
        try:
            frame = read_frame(path)
            frame = observer.prepare(frame) if observer is not None else frame
            with frame_scope(frame):
                evidence = check.verify(frame)
        except (ValueError, EngineError) as exc:
            rows.append({"file": name, "hit": False, "score": 0.0, "error": str(exc)})
            continue
        rows.append({"file": name, "hit": evidence.hit, "score": round(float(evidence.score), 4),
                     "box": list(evidence.box) if evidence.box else None, "channel": evidence.channel,
                     "text": evidence.text})
    hits = sum(1 for r in rows if r["hit"])
    return {"folder": str(folder), "frames": rows, "hits": hits, "total": len(rows),
            "hit_rate": round(hits / len(rows), 4) if rows else 0.0, "skipped": skipped}


async def test_signature(request: Request) -> Response:
    from engine.config.schema import Signature

    studio = studio_of(request)
    body = await body_json(request)
    if body is None or not isinstance(body.get("signature"), dict):
        return error(400, 'send {"signature": {...}, "folder": "captures"}')
    try:
        signature = TypeAdapter(Signature).validate_python(body["signature"])
    except ValidationError as exc:
        problems = [f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors()]
        return error(400, "bad signature: " + "; ".join(problems), problems=problems)
    folder = resolve_folder(studio, str(body.get("folder") or "captures"))
    try:
        return as_json(await run_in_threadpool(_test, studio, signature, folder))
    except (ValueError, KeyError, EngineError) as exc:
        return error(400, f"cannot test the signature: {exc}")


# --------------------------------------------------------------------------------------------------- validate


def _validate(graph_dir: Path) -> dict[str, Any]:
    from engine.config.loader import check_graph

    report = check_graph(graph_dir)
    return {"ok": report.ok, "summary": report.summary(), "problems": [p.to_dict() for p in report.problems]}


async def validate(request: Request) -> Response:
    return as_json(await run_in_threadpool(_validate, studio_of(request).graph_dir))
