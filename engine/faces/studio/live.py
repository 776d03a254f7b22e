"""The studio's live view: the session's frame and observation, the graph drawing, routes, gotos, the transcript
and error bundles (the API is listed in engine.faces.studio.app)."""

from __future__ import annotations

import json
import logging
import math
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from engine.core.errors import NoRoute, UnknownPage
from engine.faces.studio.replies import NO_STORE, as_json, error, studio_of
from engine.faces.studio.runs import EventStreamResponse, event_stream
from engine.faces.studio.security import confine_name
from engine.navigation.routes import canonical_page, plan_route
from engine.runtime.transcript import read_lines

log = logging.getLogger(__name__)

DOT_TIMEOUT_S = 10.0
TRANSCRIPT_LIMIT = 500
SVG_CACHE = 32
BELIEVED_FILL = "#ffd54f"
TAB_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
ROUTE_COLOR = "#1e88e5"


def page_names(graph: Any) -> list[str]:
    return [p for p in graph.page_names if p != graph.unknown_page]


async def info(request: Request) -> Response:
    studio = studio_of(request)
    graph, session = studio.graph, studio.session
    tasks = session.tasks.book.describe() if session.tasks is not None else []
    return as_json({
        "game": graph.game, "server": graph.server, "resolution": list(graph.resolution),
        "pages": page_names(graph), "popups": [p.name for p in graph.popups], "tasks": tasks,
        "believed_page": studio.believed_page(), "sim": session.sim is not None,
        "dot": shutil.which("dot") is not None, "graph_dir": str(studio.graph_dir), "pack_dir": str(studio.pack_dir),
        "transcript": session.transcript is not None, "captures_dir": str(studio.captures_dir),
        "unavailable": session.unavailable,
    })


async def _screenshot(studio: Any) -> tuple[bytes | None, JSONResponse | None]:
    """A fresh frame as PNG through the bounded screenshot tool, or the error response to give."""
    result = await run_in_threadpool(studio.tools.call, "adb_screenshot", {})
    if not result.ok and not result.png:
        return None, error(503, f"no frame: {result.text}", status=result.status)
    return result.png, None


async def frame_png(request: Request) -> Response:
    png, problem = await _screenshot(studio_of(request))
    if problem is not None:
        return problem
    return Response(png, media_type="image/png", headers=NO_STORE)


def _observe_png(studio: Any, png: bytes) -> tuple[dict[str, Any], int]:
    frame = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    if frame is None:
        raise ValueError("the screenshot could not be decoded")
    obs = studio.session.observer.observe(frame)
    navigator = studio.session.navigator
    if navigator is not None and obs.page is not None and studio.tools.bounded.try_hold():
        try:  # like alas_state: a look while no action runs moves the belief to what shows
            navigator.machine.relocalise(obs.page, obs.confidence)
        finally:
            studio.tools.bounded.release()
    with studio.lock:
        number = (studio.frames[-1][0] + 1) if studio.frames else 1
        studio.frames.append((number, png))
    body = obs.to_dict()
    body["height"], body["width"] = frame.shape[:2]
    return body, number


async def observe(request: Request) -> Response:
    studio = studio_of(request)
    if studio.session.observer is None:
        return error(503, f"this session cannot observe: {studio.session.unavailable or 'no observer'}")
    png, problem = await _screenshot(studio)
    if problem is not None:
        return problem
    try:
        body, number = await run_in_threadpool(_observe_png, studio, png)
    except Exception as exc:  # noqa: BLE001 - a bad frame is an answer for the page, not a crash
        log.debug("observe failed", exc_info=True)
        return error(503, f"cannot observe: {type(exc).__name__}: {exc}")
    navigator = studio.session.navigator
    body.update({
        "believed_page": studio.believed_page(),
        "belief": navigator.belief.to_dict(studio.tools.clock()) if navigator is not None else None,
        "looks_per_second": studio.looked(),
        "frame_url": f"/api/observed/{number}.png",
        "busy": studio.tools.bounded.busy(),
    })
    return as_json(body)


async def observed_png(request: Request) -> Response:
    studio = studio_of(request)
    with studio.lock:
        png = next((p for n, p in studio.frames if n == request.path_params["number"]), None)
    if png is None:
        return error(404, f"that frame is gone: only the last {studio.frames.maxlen} observed frames are kept")
    return Response(png, media_type="image/png", headers={"Cache-Control": "private, max-age=60"})


def graph_dot(graph: Any, believed: str | None, route_pages: list[str]) -> str:
    """The ``graph --format dot`` text with the studio's styling: the believed page filled, a route outlined."""
    from engine.faces.commands.graph import _dot

    lines = _dot(graph).splitlines()
    head = ['  node [shape=box, style="rounded", fontname="Helvetica", fontsize=11];',
            '  edge [fontname="Helvetica", fontsize=8, color="#888888"];']
    tail = [f"  {json.dumps(page)} [color={json.dumps(ROUTE_COLOR)}, penwidth=2.5];" for page in route_pages]
    if believed:
        tail.append(f'  {json.dumps(believed)} [style="rounded,filled", fillcolor={json.dumps(BELIEVED_FILL)}];')
    return "\n".join(lines[:2] + head + lines[2:-1] + tail + lines[-1:])


def render_svg(dot_text: str, dot: str) -> bytes:
    """`dot_text` drawn by graphviz (no shell; bounded by DOT_TIMEOUT_S)."""
    done = subprocess.run([dot, "-Tsvg"], input=dot_text.encode(), capture_output=True, timeout=DOT_TIMEOUT_S,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace").strip() or f"dot exited {done.returncode}")
    return done.stdout


async def graph_svg(request: Request) -> Response:
    studio = studio_of(request)
    dot = shutil.which("dot")
    if dot is None:
        return error(503, "graphviz is not installed (no `dot` on PATH): install it with "
                           "scripts/install-system-deps.sh or `apt-get install graphviz`")
    believed = studio.believed_page()
    route_pages: list[str] = []
    target = request.query_params.get("to")
    if target and believed:
        try:
            route_pages = plan_route(studio.graph, believed, canonical_page(studio.graph, target)).pages
        except (UnknownPage, NoRoute):
            route_pages = []
    key = (believed, tuple(route_pages))
    svg = studio.svg_cache.get(key)
    if svg is None:
        try:
            svg = await run_in_threadpool(render_svg, graph_dot(studio.graph, believed, route_pages), dot)
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
            return error(503, f"graphviz failed: {exc}")
        if len(studio.svg_cache) >= SVG_CACHE:
            studio.svg_cache.pop(next(iter(studio.svg_cache)))
        studio.svg_cache[key] = svg
    return Response(svg, media_type="image/svg+xml", headers=NO_STORE)


def _page_or_404(graph: Any, name: str) -> tuple[str, JSONResponse | None]:
    from engine.core.results import did_you_mean

    page = canonical_page(graph, name)
    names = page_names(graph)
    if page in names:
        return page, None
    hint, options = did_you_mean(name, names)
    return page, error(404, f"unknown page {name!r}{hint}", suggestions=options)


async def route(request: Request) -> Response:
    studio = studio_of(request)
    graph = studio.graph
    dst, problem = _page_or_404(graph, request.query_params.get("to", ""))
    if problem is not None:
        return problem
    believed = studio.believed_page()
    source = request.query_params.get("from") or believed or graph.unknown_page
    src, problem = _page_or_404(graph, source) if source != graph.unknown_page else (source, None)
    if problem is not None:
        return problem
    try:
        planned = plan_route(graph, src, dst)
    except (UnknownPage, NoRoute) as exc:
        return error(409, f"no route from {src} to {dst}: {exc}")
    return as_json({**planned.to_dict(), "believed_page": believed})


async def goto(request: Request) -> Response:
    studio = studio_of(request)
    body = await _body_json(request)
    if not isinstance(body, dict) or not isinstance(body.get("page"), str):
        return error(400, 'send {"page": "page_name"}')
    page, problem = _page_or_404(studio.graph, body["page"])
    if problem is not None:
        return problem
    tab = body.get("tab")
    if tab is not None and (not isinstance(tab, str) or not TAB_ID.match(tab)):
        return error(400, "tab must be the page's tab id (letters, digits, '-' and '_', at most 64)")
    run = studio.runner.start(page, tab)
    if run is None:
        current = studio.runner.current or {}
        mine = tab is not None and current.get("tab") == tab
        return error(409, f"a goto to {current.get('page')} is running" + ("" if mine else " (another tab's)"),
                     run=current.get("run"), mine=mine)
    return as_json({"run": run["run"], "page": page, "tab": tab}, status=202)


async def run_state(request: Request) -> Response:
    """The running goto (its events so far; ``mine`` when the asking tab started it) and the tab's last one."""
    tab = request.query_params.get("tab")
    if tab is not None and not TAB_ID.match(tab):
        return error(400, "tab must be the page's tab id (letters, digits, '-' and '_', at most 64)")
    return as_json(studio_of(request).runner.snapshot(tab))


async def _body_json(request: Request) -> Any:
    try:
        return json.loads(await request.body() or b"null")
    except (ValueError, UnicodeDecodeError):
        return None


async def events(request: Request) -> Response:
    studio = studio_of(request)
    try:
        max_seconds = float(request.query_params["max_s"]) if "max_s" in request.query_params else None
    except ValueError:
        return error(400, "max_s must be a number of seconds")
    if max_seconds is not None and not math.isfinite(max_seconds):  # nan would never end the stream
        return error(400, "max_s must be a finite number of seconds")
    stream = event_stream(studio.bus, studio.session.transcript, request.is_disconnected, studio.closing,
                          max_seconds=max_seconds)
    return EventStreamResponse(stream, headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


async def transcript(request: Request) -> Response:
    studio = studio_of(request)
    ledger = studio.session.transcript
    try:
        since = int(request.query_params.get("since", 0))
        limit = max(1, min(TRANSCRIPT_LIMIT, int(request.query_params.get("limit", TRANSCRIPT_LIMIT))))
    except ValueError:
        return error(400, "since and limit must be integers")
    if ledger is None:
        return as_json({"lines": [], "seq": 0, "enabled": False})
    lines = await run_in_threadpool(ledger.since, since)
    return as_json({"lines": lines[-limit:], "seq": ledger.seq, "enabled": True})


def _bundle_root(studio: Any) -> Path | None:
    return studio.transcript_dir / "error_bundles" if studio.transcript_dir is not None else None


def _list_bundles(root: Path | None) -> list[dict[str, Any]]:
    if root is None or not root.is_dir():
        return []
    found = []
    for folder in root.iterdir():
        if folder.is_dir() and not folder.is_symlink():
            found.append({"name": folder.name, "frames": len(list(folder.glob("*.png"))),
                          "mtime": folder.stat().st_mtime})
    return sorted(found, key=lambda b: (-b["mtime"], b["name"]))


async def bundles(request: Request) -> Response:
    return as_json({"bundles": await run_in_threadpool(_list_bundles, _bundle_root(studio_of(request)))})


def _read_bundle(root: Path, name: str) -> dict[str, Any]:
    folder = confine_name(root, name)
    result_file = folder / "result.json"
    return {
        "name": folder.name,
        "frames": [f"/api/bundles/{folder.name}/{p.name}" for p in sorted(folder.glob("*.png"))],
        "transcript": read_lines(folder / "transcript.jsonl")[-TRANSCRIPT_LIMIT:],
        "result": json.loads(result_file.read_text(encoding="utf-8")) if result_file.is_file() else None,
    }


async def bundle(request: Request) -> Response:
    root = _bundle_root(studio_of(request))
    if root is None or not root.is_dir():
        return error(404, "this session keeps no error bundles (no transcript folder)")
    return as_json(await run_in_threadpool(_read_bundle, root, request.path_params["name"]))


async def bundle_file(request: Request) -> Response:
    root = _bundle_root(studio_of(request))
    if root is None or not root.is_dir():
        return error(404, "this session keeps no error bundles (no transcript folder)")
    folder = confine_name(root, request.path_params["name"])
    path = confine_name(folder, request.path_params["file"])
    if path.suffix.lower() != ".png" or not path.is_file():
        return error(404, "only the bundle's PNG frames are served")
    return Response(await run_in_threadpool(path.read_bytes), media_type="image/png", headers=NO_STORE)
