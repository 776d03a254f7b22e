"""The graph studio's web app: a local page that shows what the engine sees and helps write graphs from real frames.

``create_app(session, graph_dir=..., assets_dir=..., transcript_dir=..., captures_dir=...)`` returns a Starlette
app; ``python -m engine studio`` serves it on 127.0.0.1 with uvicorn. Every request must carry a loopback Host
(127.0.0.1, localhost or [::1], any port) or it gets 403; a POST whose Origin is another site gets 403 too.
Errors are JSON ``{"error": "...", ...}`` with a 4xx status, or 503 when the device or a tool could not answer
(never a 500: a failure no handler expected is a 503 with ``internal: true``, engine.faces.studio.replies.Shield).
Frames are the graph's resolution (``info``). A page names its tab with a ``tab`` id (kept in sessionStorage).

The API (JSON unless said; ``box`` and ``area`` are ``[x1, y1, x2, y2]`` in frame pixels, x2/y2 exclusive):

    GET  /                      index.html;  GET /static/{file}: studio.js, studio.css ...
    GET  /api/info              {game, server, resolution: [w, h], pages: [..], popups: [..], tasks: [{name,
                                 description}], believed_page, sim: bool, dot: bool, graph_dir, pack_dir,
                                 transcript: bool, captures_dir}
    GET  /api/frame.png         a fresh screenshot (PNG, Cache-Control: no-store)
    GET  /api/observe           {page, popups, loading, black_frame, confidence, ambiguous,
                                 evidence: [{channel, signature, hit, score, box, offset, text, latency_ms}],
                                 latency_ms, believed_page, belief: {...}, looks_per_second, width, height,
                                 frame_url, busy}; frame_url serves the exact frame that was observed (PNG)
    GET  /api/graph.svg[?to=P]  the page graph as SVG (graphviz dot), believed page filled, the route to P outlined;
                                 each node is <g class="node"><title>page_name</title>...; 503 {error} without dot
    GET  /api/route?to=P[&from=Q]  {src, dst, cost, hops: [{from, to, cost, action}], believed_page};
                                 unknown page: 404 {error, suggestions}; no route: 409 {error}
    POST /api/goto {page, tab}  202 {run, page, tab}; 409 {error, run, mine} while one runs; 404 {error, suggestions}
    GET  /api/run?tab=T         {current: {run, page, tab, started, mine, events: [{event, ...}]} | null,
                                 last: T's last finished run {run, page, tab, events, result} | null}
    GET  /api/events[?max_s=S]  text/event-stream; every run event carries {run, tab}: `event: hop` {hop, from, to,
                                 action} (a hop tried); `event: look` {verdict, expected, observed, popups,
                                 believed} (a hop is verified when verdict is "verified" for its page); `event: step`
                                 {kind: dismiss (popup, count) | recover (rung)}; `event: result` {page, ok, status,
                                 text, observed, hops, elapsed_ms, belief}; `event: transcript` {lines, seq};
                                 `event: dropped` {count}; comments ": keep-alive" every 10 s
    GET  /api/transcript?since=SEQ&limit=N   {lines: [...], seq, enabled}: lines with seq > SEQ (the last N, N<=500)
    GET  /api/bundles           {bundles: [{name, frames, mtime}]} newest first
    GET  /api/bundles/{name}    {name, frames: [url...], transcript: [...], result: {...}|null}
    GET  /api/bundles/{name}/{file}  one frame of the bundle (PNG)
    POST /api/capture           {name, url, width, height}: the current frame saved as PNG in captures_dir
    POST /api/upload            raw image/png or image/jpeg body, or multipart (field "file"); 8 MiB limit (413)
                                 -> {name, url, width, height}
    GET  /api/frames            {frames: [name...]} saved frames, newest first;  GET /api/frames/{name}: the PNG
    POST /api/template {frame, box, name[, overwrite]}  -> {path, asset, yaml, button: {name, area, asset},
                                 signature: {type: template, asset, area, name}, replaced: [{path, backup}],
                                 old_area}; yaml is the button plus a `signatures:` entry to paste; 409 {error,
                                 exists} when the template exists and overwrite is not true (with it, the old
                                 file is kept beside the new one as NAME.png.<time>.bak); 400 {error} for a bad
                                 name, a box outside the frame or smaller than 3x3, or a frame not at the
                                 graph's resolution
    POST /api/test-signature {signature, folder}  -> {folder, frames: [{file, hit, score, box, channel, text}],
                                 hits, total, hit_rate, skipped}; every frame in the folder and its subfolders
                                 (file is the path below it; at most 200, the rest counted in skipped); folder is
                                 "captures[/sub]", "pack/..", "graph/..", "transcript/.." (or a folder under
                                 captures); a button named in the signature that the graph lacks is looked up
                                 among the templates cut here
    POST /api/recognize {source: live | frame (name) | bundle (bundle, file) | step (seq)}  -> {frame: {source,
                                 label, url}, observation, why, width, height, candidates: [{name, kind, hit,
                                 score, strong, priority, chosen, note, signatures: [{signature, channel, hit,
                                 score, threshold, area, search, box, text}]}]} (engine.observe.explain); a live
                                 frame is saved in captures_dir first
    GET  /api/steps             {steps: [{seq, label, url}]}: the frames of the last looks of the runs, by the
                                 transcript line of the look;  GET /api/steps/{seq}.png: one of them
    GET  /api/validate          {ok, summary, problems: [{file, line, col, message, severity}]}
    GET  /api/proposals         {proposals: [{name, label, found_by, tap, area, shown_on, sightings, collision,
                                 known_pages, first_seen, last_seen, frame_url, crop_url, yaml}], warnings, folder}: the
                                 popups learned from the vision model or the dismissal search (found_by: model |
                                 search | agent | back key; engine.learning.learner), waiting in the transcript
                                 folder's proposals/; without a transcript folder: folder null and a `note`
    GET  /api/proposals/{name}/frame.png, /api/proposals/{name}/crop.png   the proposal's frame and template crop
    POST /api/proposals/{name}/accept  -> {accepted, graph_file, template, by, adopted}: the popup written into the
                                 graph folder (learned_<name>.yaml) and its template into <graph>/learned_assets,
                                 taken up by the live session when `adopted`; 409 {error} on the shipped graph;
                                 409 {error, fired: [frame paths, relative to the transcript folder]} when its
                                 signature fires on frames of known pages (nothing is written); 400 {error} when
                                 the graph would not load
    POST /api/proposals/{name}/reject  -> {rejected}: moved to proposals/rejected/
                                 (an unknown proposal is a 404, a name that is not one a 400)
    GET  /api/draft             the draft opened with --draft (engine.faces.studio.drafts): {folder, rev, game,
                                 server, resolution, made, pages: [{name, title, visits, loading, members: [{path,
                                 url}], count, signatures, links_out, links_in}], links: [{index, from, to, action,
                                 seen, tried}], popups, loading, review: [{kind, pages, note}], original}; without
                                 one {folder: null, note}
    GET  /api/draft/files/{path}  a PNG below the draft's evidence/, frames/ or assets/
    POST /api/draft/rename {rev, old, new}, /api/draft/merge {rev, keep, other}, /api/draft/split {rev, page,
                                 frames: [path...], name}, /api/draft/drop-link {rev, index, from, to}
                                 -> the draft as GET shows it, with `did`; refused with {error, reason}: 404
                                 (unknown page, link or frame), 400 (invalid), 409 (taken name; stale: rev is not
                                 the draft's revision any more)
    POST /api/draft/accept {rev, out, overwrite}  -> {folder, written, unchanged, replaced: [{path, backup}],
                                 validate: {ok, summary, problems}}: graph YAML and its pack written into `out`
                                 below the draft folder ("" the folder itself); 409 {error, reason: exists,
                                 exists: [files]} when a different file is there and overwrite is not true (with
                                 it, the old file is kept beside the new one as NAME.<time>.bak)
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Route

from engine.core.errors import PathRefused
from engine.faces.studio import authoring, drafts, live, proposals, recognition, schedule
from engine.faces.studio.recognition import StepFrames
from engine.faces.studio.replies import Shield, error
from engine.faces.studio.runs import EventBus, GotoRunner
from engine.faces.studio.security import BodyLimit, LoopbackGuard, confine_name

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parent / "static"
LOOKS_WINDOW_S = 5.0
STATIC_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                ".css": "text/css; charset=utf-8", ".png": "image/png", ".svg": "image/svg+xml",
                ".ico": "image/x-icon", ".json": "application/json"}


OBSERVED_KEPT = 4
"""Observed frames kept for /api/observed/N.png. One was too few: under load a browser's image request for frame 6
came after another look had made frame 7 (a 404 in the studio's console; CI of b336a84, the log-panel test)."""


@dataclass
class Studio:
    """What every handler needs: the session, the folders it may read and write, and the live state."""

    session: Any
    graph_dir: Path
    pack_dir: Path
    transcript_dir: Path | None
    captures_dir: Path
    assets_dir: Path | None = None
    bus: EventBus = field(default_factory=EventBus)
    runner: GotoRunner | None = None
    closing: threading.Event = field(default_factory=threading.Event)
    looks: deque = field(default_factory=lambda: deque(maxlen=200))
    lock: threading.Lock = field(default_factory=threading.Lock)
    reviewing: threading.Lock = field(default_factory=threading.Lock)
    """Held while a proposal is accepted or rejected: one review at a time."""
    frames: deque = field(default_factory=lambda: deque(maxlen=OBSERVED_KEPT))
    """The last observed frames, (number, PNG): a page still loading one the next look has already replaced gets it
    (live.observed_png)."""
    steps: StepFrames = field(default_factory=StepFrames)
    """The frames of a run's last looks, for the recognition view."""
    svg_cache: dict = field(default_factory=dict)
    draft_dir: Path | None = None
    """The explorer's draft folder under review (--draft), or None."""
    drafting: threading.Lock = field(default_factory=threading.Lock)
    """Held while the draft is edited or accepted: one edit at a time."""

    @property
    def tools(self) -> Any:
        return self.session.tools

    @property
    def graph(self) -> Any:
        return self.session.graph

    def roots(self) -> dict[str, Path]:
        """The folders a request may name, by the name it uses for them."""
        found = {"captures": self.captures_dir, "graph": self.graph_dir, "pack": self.pack_dir}
        if self.transcript_dir is not None:
            found["transcript"] = self.transcript_dir
        return found

    def believed_page(self) -> str | None:
        navigator = self.session.navigator
        return navigator.belief.state if navigator is not None else None

    def looked(self) -> float:
        """Note one look; the looks per second over the last few seconds."""
        now = time.monotonic()
        with self.lock:
            self.looks.append(now)
            recent = [t for t in self.looks if now - t <= LOOKS_WINDOW_S]
        if len(recent) < 2 or recent[-1] <= recent[0]:
            return 0.0
        return round((len(recent) - 1) / (recent[-1] - recent[0]), 2)

    def close(self) -> None:
        """End every event stream and wait briefly for a running goto."""
        self.closing.set()
        if self.runner is not None:
            self.runner.wait(2.0)


async def index(request: Request) -> Response:
    return _static_file("index.html")


async def static(request: Request) -> Response:
    return _static_file(request.path_params["file"])


def _static_file(name: str) -> Response:
    try:
        path = confine_name(STATIC_DIR, name)
    except PathRefused as exc:
        return error(exc.http_status, str(exc))
    if not path.is_file():
        return error(404, f"{name!r} not found")
    kind = STATIC_TYPES.get(path.suffix.lower(), "application/octet-stream")
    return FileResponse(path, media_type=kind, headers={"Cache-Control": "no-cache"})


def routes() -> list[Route]:
    return [
        Route("/", index),
        Route("/static/{file}", static),
        Route("/api/info", live.info),
        Route("/api/frame.png", live.frame_png),
        Route("/api/observe", live.observe),
        Route("/api/observed/{number:int}.png", live.observed_png),
        Route("/api/graph.svg", live.graph_svg),
        Route("/api/route", live.route),
        Route("/api/goto", live.goto, methods=["POST"]),
        Route("/api/run", live.run_state),
        Route("/api/events", live.events),
        Route("/api/transcript", live.transcript),
        Route("/api/bundles", live.bundles),
        Route("/api/bundles/{name}", live.bundle),
        Route("/api/bundles/{name}/{file}", live.bundle_file),
        Route("/api/capture", authoring.capture, methods=["POST"]),
        Route("/api/upload", authoring.upload, methods=["POST"]),
        Route("/api/frames", authoring.frames),
        Route("/api/frames/{name}", authoring.frame_file),
        Route("/api/template", authoring.template, methods=["POST"]),
        Route("/api/test-signature", authoring.test_signature, methods=["POST"]),
        Route("/api/recognize", recognition.recognize, methods=["POST"]),
        Route("/api/steps", recognition.steps),
        Route("/api/steps/{seq:int}.png", recognition.step_png),
        Route("/api/validate", authoring.validate),
        Route("/api/proposals", proposals.listing),
        Route("/api/schedule", schedule.status),
        Route("/api/proposals/{name}/accept", proposals.accept_one, methods=["POST"]),
        Route("/api/proposals/{name}/reject", proposals.reject_one, methods=["POST"]),
        Route("/api/proposals/{name}/frame.png", proposals.frame_png),
        Route("/api/proposals/{name}/crop.png", proposals.crop_png),
        Route("/api/draft", drafts.show),
        Route("/api/draft/files/{path:path}", drafts.file),
        Route("/api/draft/rename", drafts.rename, methods=["POST"]),
        Route("/api/draft/merge", drafts.merge, methods=["POST"]),
        Route("/api/draft/split", drafts.split, methods=["POST"]),
        Route("/api/draft/drop-link", drafts.drop_link, methods=["POST"]),
        Route("/api/draft/accept", drafts.accept, methods=["POST"]),
    ]


def create_app(session: Any, *, graph_dir: str | Path | None = None, assets_dir: str | Path | None = None,
               transcript_dir: str | Path | None = None, captures_dir: str | Path,
               draft_dir: str | Path | None = None) -> Starlette:
    """The studio over an open session (engine.runtime.session.open_session).

    Args:
        session: whose tools, graph, observer and navigator the pages use; its tools' ``on_event`` is taken.
        graph_dir: the graph folder the session loaded (None: the shipped graph); validated and readable.
        assets_dir: the session's asset pack folder (None for the embedded simulator's own pack); templates are
            cut into it when it is in the project's layout, else into ``captures_dir/pack``.
        transcript_dir: the session's transcript folder (its transcript.jsonl and error_bundles/), or None.
        captures_dir: where captured and uploaded frames go (created).
        draft_dir: an explorer's draft folder to review (engine.faces.studio.drafts), or None.
    """
    from engine.core.paths import builtin_graph_dir

    captures = Path(captures_dir).resolve()
    captures.mkdir(parents=True, exist_ok=True)
    graph_root = Path(graph_dir) if graph_dir is not None else builtin_graph_dir()
    if graph_root.is_file():
        graph_root = graph_root.parent
    assets = Path(assets_dir).resolve() if assets_dir is not None else None
    studio = Studio(session=session, graph_dir=graph_root.resolve(),
                    pack_dir=authoring.pack_folder(assets, captures),
                    transcript_dir=Path(transcript_dir).resolve() if transcript_dir is not None else None,
                    captures_dir=captures, assets_dir=assets,
                    draft_dir=Path(draft_dir).resolve() if draft_dir is not None else None)
    if studio.transcript_dir is not None:
        studio.steps = StepFrames(folder=studio.transcript_dir / "steps")  # steps of earlier sessions stay choosable
    studio.runner = GotoRunner(session.tools, studio.bus, session.navigator, recognition.look_keeper(studio))
    app = Starlette(routes=routes(), middleware=[Middleware(Shield), Middleware(LoopbackGuard), Middleware(BodyLimit)],
                    exception_handlers={PathRefused: _path_refused, HTTPException: _http_error})
    app.state.studio = studio
    return app


async def _path_refused(request: Request, exc: Exception) -> Response:
    return error(getattr(exc, "http_status", 404), str(exc))


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own answers (no such route, a wrong method) as JSON errors like the rest of the API."""
    status = getattr(exc, "status_code", 500)
    headers = {**(getattr(exc, "headers", None) or {}), "Cache-Control": "no-store"}  # a 405 keeps its Allow
    message = f"{request.method} {request.url.path}: {getattr(exc, 'detail', '') or status}"
    return JSONResponse({"error": message}, status_code=status, headers=headers)
