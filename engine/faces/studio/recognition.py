"""The studio's recognition view: one frame, chosen from the live device, a run's step, an error bundle or a saved
(captured or uploaded) frame, explained by the session's observer (engine.observe.explain): every page and popup
with each signature's score, threshold and area, and why the winner won or why nothing did.

The frames of a run's steps are the frames of its looks (``StepFrames``: the last few in memory, and with a transcript
the last ON_DISK in its steps/ folder, by the transcript line that recorded the look, so a step of an earlier session
can still be chosen); the API is listed in engine.faces.studio.app.
"""

from __future__ import annotations

import itertools
import logging
import queue
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from engine.core.errors import EngineError
from engine.faces.studio import authoring
from engine.faces.studio.replies import NO_STORE, as_json, error, studio_of
from engine.faces.studio.security import confine_name

log = logging.getLogger(__name__)

STEP_FRAMES = 12
"""Frames of a run's looks kept in memory for the recognition view (about 2.7 MB each at 1280x720)."""
ON_DISK = 300
"""Frames of looks kept in the transcript's steps/ folder (about 0.3-1 MB each as PNG)."""
WRITE_QUEUE = 16
SOURCES = ("live", "frame", "bundle", "step")


class StepFrames:
    """The frames of the last STEP_FRAMES looks in memory, by the transcript seq of the line that recorded each look.

    With a `folder` (the transcript's ``steps/``), each look with a transcript line is also written there as
    ``<seq>.png`` (and its label as ``<seq>.txt``) by a background thread, the newest ON_DISK kept, so a transcript
    step stays recognisable after the studio restarts; a full write queue drops the frame rather than slow a run."""

    def __init__(self, size: int = STEP_FRAMES, folder: Path | None = None) -> None:
        self.size, self.folder = size, folder
        self._frames: OrderedDict[int, tuple[np.ndarray, str]] = OrderedDict()
        self._lock = threading.Lock()
        self._own = itertools.count(1)
        self._queue: queue.Queue = queue.Queue(WRITE_QUEUE)
        self._writer: threading.Thread | None = None

    def keep(self, seq: int | None, frame: Any, label: str) -> None:
        if not isinstance(frame, np.ndarray):
            return
        with self._lock:
            key = int(seq) if seq else -next(self._own)  # no transcript: a key of our own
            self._frames[key] = (frame, label)
            self._frames.move_to_end(key)
            while len(self._frames) > self.size:
                self._frames.popitem(last=False)
            if self.folder is not None and key > 0:
                try:
                    self._queue.put_nowait((key, frame, label))
                except queue.Full:
                    log.debug("step %d not written: the writer is behind", key)
                if self._writer is None or not self._writer.is_alive():
                    self._writer = threading.Thread(target=self._write, name="studio-steps", daemon=True)
                    self._writer.start()

    def _write(self) -> None:
        while True:
            try:
                key, frame, label = self._queue.get(timeout=5.0)
            except queue.Empty:
                return
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                cv2.imwrite(str(self.folder / f"{key}.png"), frame, [cv2.IMWRITE_PNG_COMPRESSION, 1])
                (self.folder / f"{key}.txt").write_text(label[:300], encoding="utf-8")
                for old in self._on_disk()[ON_DISK:]:
                    (self.folder / f"{old}.png").unlink(missing_ok=True)
                    (self.folder / f"{old}.txt").unlink(missing_ok=True)
            except OSError as exc:
                log.warning("cannot keep step %d's frame in %s: %s", key, self.folder, exc)
            finally:
                self._queue.task_done()

    def _on_disk(self) -> list[int]:
        """The seqs written to the folder, newest first."""
        if self.folder is None or not self.folder.is_dir():
            return []
        return sorted((int(p.stem) for p in self.folder.glob("*.png") if p.stem.isdigit()), reverse=True)

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until the frames queued so far are on disk (tests, closing)."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)

    def get(self, seq: int) -> tuple[np.ndarray, str] | None:
        with self._lock:
            kept = self._frames.get(seq)
        if kept is not None or self.folder is None or seq <= 0:
            return kept
        path = self.folder / f"{seq}.png"
        frame = cv2.imread(str(path), cv2.IMREAD_COLOR) if path.is_file() else None
        if frame is None:
            return None
        label = path.with_suffix(".txt")
        return frame, label.read_text(encoding="utf-8", errors="replace") if label.is_file() else ""

    def listing(self) -> list[dict[str, Any]]:
        with self._lock:
            keys = [(key, label) for key, (_, label) in self._frames.items()]
        rows = {key: label for key, label in keys}
        for seq in self._on_disk()[:ON_DISK]:
            if seq not in rows:
                label = self.folder / f"{seq}.txt"
                rows[seq] = label.read_text(encoding="utf-8", errors="replace") if label.is_file() else ""
        order = sorted(rows, key=lambda k: (k > 0, abs(k)), reverse=True)
        return [{"seq": key, "label": rows[key], "url": f"/api/steps/{key}.png"} for key in order]


def look_keeper(studio: Any) -> Any:
    """The GotoRunner's `on_look`: keeps the frame the navigator just looked at, by its transcript line."""

    def keep(entry: dict[str, Any]) -> None:
        session = studio.session
        navigator = session.navigator
        seq = session.transcript.seq if session.transcript is not None else None
        label = f"expected {entry.get('expected') or 'any'}, saw {entry.get('page') or 'no page'}"
        studio.steps.keep(seq, getattr(navigator, "last_frame", None), label)

    return keep


async def steps(request: Request) -> Response:
    return as_json({"steps": studio_of(request).steps.listing()})


async def step_png(request: Request) -> Response:
    kept = studio_of(request).steps.get(request.path_params["seq"])
    if kept is None:
        return error(404, "that step's frame is gone: only the last looks' frames are kept")
    _, encoded = await run_in_threadpool(cv2.imencode, ".png", kept[0])
    return Response(encoded.tobytes(), media_type="image/png", headers=NO_STORE)


async def _frame(studio: Any, body: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
    """The frame a request chooses and where it came from ({source, label, url}); ValueError / EngineError /
    PathRefused when it names nothing usable, LookupError when the device gave no frame."""
    source = body.get("source")
    if source == "live":
        result = await run_in_threadpool(studio.tools.call, "adb_screenshot", {})
        frame = cv2.imdecode(np.frombuffer(result.png, np.uint8), cv2.IMREAD_COLOR) if result.png else None
        if frame is None:
            raise LookupError(f"no frame: {result.text}", result.status)
        saved = await run_in_threadpool(authoring.save_frame, studio.captures_dir, frame, "live")
        return frame, {"source": source, "label": f"live: {saved['name']}", "url": saved["url"],
                       "name": saved["name"]}
    if source == "frame":
        name = _text(body, "name")
        path = confine_name(studio.captures_dir, name)
        frame = await run_in_threadpool(authoring.read_frame, path)
        return frame, {"source": source, "label": name, "url": f"/api/frames/{name}", "name": name}
    if source == "bundle":
        if studio.transcript_dir is None:
            raise ValueError("this session keeps no error bundles (no transcript folder)")
        bundle, file = _text(body, "bundle"), _text(body, "file")
        folder = confine_name(studio.transcript_dir / "error_bundles", bundle)
        frame = await run_in_threadpool(authoring.read_frame, confine_name(folder, file))
        return frame, {"source": source, "label": f"{bundle}/{file}", "url": f"/api/bundles/{bundle}/{file}"}
    if source == "step":
        seq = body.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise ValueError('a step is chosen by its transcript line: {"source": "step", "seq": 12}')
        kept = studio.steps.get(seq)
        if kept is None:
            raise ValueError(f"the frame of step {seq} is gone: only the last looks' frames are kept "
                             f"({studio.steps.size} in memory, {ON_DISK} in the transcript's steps/ folder)")
        return kept[0], {"source": source, "label": f"step {seq}: {kept[1]}", "url": f"/api/steps/{seq}.png"}
    raise ValueError(f"source must be one of {', '.join(SOURCES)}, not {source!r}")


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key!r} must be a file name")
    return value


async def recognize(request: Request) -> Response:
    from engine.observe.explain import explain

    studio = studio_of(request)
    if studio.session.observer is None:
        return error(503, f"this session cannot observe: {studio.session.unavailable or 'no observer'}")
    body = await authoring.body_json(request)
    if body is None:
        return error(400, 'send {"source": "live" | "frame" | "bundle" | "step", ...}')
    try:
        frame, origin = await _frame(studio, body)
    except LookupError as exc:
        return error(503, str(exc.args[0]), status=exc.args[1])
    except (ValueError, EngineError) as exc:
        return error(getattr(exc, "http_status", 400), str(exc))
    try:
        explained = await run_in_threadpool(explain, studio.session.observer, frame)
    except EngineError as exc:
        return error(400, f"cannot recognise this frame: {exc}")
    return as_json({"frame": origin, **explained})
