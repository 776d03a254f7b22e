"""The explorer's recording: one JSON line per action with the frame it led to (MaaFramework's record controller
writes the same shape), kept so an explore can be resumed and reviewed.

``recording.jsonl`` holds ``{seq, time, action, frame, page, note[, transients]}`` per line; ``frames/<seq>.png``
the frame seen after the action settled, ``frames/<seq>_t<n>.png`` the loading screens seen on the way. A torn last
line (the process killed mid-write) is ignored on reading, so re-running with the same folder continues from the
last whole line.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import cv2
import numpy as np

log = logging.getLogger(__name__)

FILE = "recording.jsonl"
FRAMES = "frames"
WRITE_AHEAD = 16
"""Frames waiting to be written at most (then `add` waits): bounded memory when the disk is slow."""


class Recording:
    """Append-only: each frame is written before its line (a line never names a missing frame), by one writer
    thread in order, so PNG encoding overlaps the explorer's waiting; reading a frame waits for pending writes."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / FILE
        (self.folder / FRAMES).mkdir(parents=True, exist_ok=True)
        self.entries: list[dict[str, Any]] = list(self._read())
        self._out = self.path.open("a", encoding="utf-8")
        if self._out.tell() > 0 and not self._ends_with_newline():
            self._out.write("\n")  # a torn last line stays alone on its line, skipped on every later read
        self._jobs: queue.Queue = queue.Queue(maxsize=WRITE_AHEAD)
        self._failed: BaseException | None = None
        self._writer = threading.Thread(target=self._write_jobs, name="explore-recording", daemon=True)
        self._writer.start()

    def _write_jobs(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                if job is None:
                    return
                if self._failed is None:
                    frames, line = job
                    for frame, rel in frames:
                        # Level 1: a frame follows every action; level 3's file is no smaller and costs twice as long.
                        if not cv2.imwrite(str(self.folder / rel), frame, [cv2.IMWRITE_PNG_COMPRESSION, 1]):
                            raise OSError(f"cannot write {self.folder / rel}")
                    self._out.write(line)
                    self._out.flush()
            except BaseException as exc:  # noqa: BLE001 - handed to the explorer's thread on its next call
                self._failed = exc
            finally:
                self._jobs.task_done()

    def flush(self) -> None:
        """Wait until every frame and line added so far is on disk (OSError when one could not be written)."""
        self._jobs.join()
        if self._failed is not None:
            raise OSError(f"the recording in {self.folder} could not be written: {self._failed}")

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as data:
            data.seek(-1, 2)
            return data.read(1) == b"\n"

    def _read(self) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        with self.path.open(encoding="utf-8", errors="replace") as lines:
            for number, line in enumerate(lines, 1):
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:
                    log.warning("%s:%d is not a whole JSON line; skipped", self.path, number)
                    continue
                if isinstance(entry, dict) and isinstance(entry.get("action"), dict):
                    yield entry

    @property
    def next_seq(self) -> int:
        return (self.entries[-1]["seq"] + 1) if self.entries else 1

    def add(self, action: dict[str, Any], frame: np.ndarray | None, page: str | None = None,
            note: str = "", transients: list[np.ndarray] = (), same_as: str | None = None,
            moving: list[int] | None = None) -> dict[str, Any]:
        """Record `action` and the `frame` it settled on (after `transients`: screens that went by themselves);
        `same_as` names an earlier frame file to point at instead of writing `frame` again (nothing changed);
        `moving` the sketch cells (row-major indices) that changed by themselves while it held (a replay needs them
        to tell pages apart as the live run did)."""
        if self._failed is not None:
            self.flush()
        seq = self.next_seq
        frames = []
        rel = same_as or (f"{FRAMES}/{seq:06d}.png" if frame is not None else None)
        if frame is not None and same_as is None:
            frames.append((frame, rel))
        entry = {"seq": seq, "time": round(time.time(), 3), "action": action, "frame": rel, "page": page,
                 "note": note}
        if transients:
            entry["transients"] = [f"{FRAMES}/{seq:06d}_t{i}.png" for i in range(len(transients))]
            frames += list(zip(transients, entry["transients"]))
        if moving:
            entry["moving"] = list(moving)
        self._jobs.put((frames, json.dumps(entry, ensure_ascii=False) + "\n"))
        self.entries.append(entry)
        return entry

    def frame(self, entry: dict[str, Any]) -> np.ndarray | None:
        """The frame of `entry` (None when it has none or the file is gone)."""
        if not entry.get("frame"):
            return None
        return self.read(entry["frame"])

    def read(self, rel: str) -> np.ndarray | None:
        """The frame at `rel` (a path under the folder, as entries name them); None when missing or outside."""
        self.flush()
        return self.read_from(self.folder, rel)

    @staticmethod
    def read_from(folder: Path, rel: str) -> np.ndarray | None:
        if not isinstance(rel, str) or ".." in Path(rel).parts or Path(rel).is_absolute():
            return None
        return cv2.imread(str(Path(folder) / rel), cv2.IMREAD_COLOR)

    def close(self) -> None:
        """Write what is pending and close (the OSError of a failed write is raised here at the latest)."""
        try:
            self.flush()
        finally:
            self._jobs.put(None)
            self._writer.join(timeout=30)
            self._out.close()


def pack_cells(moving: np.ndarray | None) -> list[int] | None:
    """Cells seen moving, as the recording keeps them: row-major indices."""
    return None if moving is None or not moving.any() else [int(i) for i in np.flatnonzero(moving)]


def unpack_cells(cells: Any, sk: Any) -> np.ndarray | None:
    """The recording's moving cells back on `sk`'s grid (None when absent or not cell indices of it)."""
    rows, cols = sk.colour.shape[:2]
    if not isinstance(cells, list) or not all(isinstance(i, int) and 0 <= i < rows * cols for i in cells):
        return None
    out = np.zeros(rows * cols, bool)
    out[cells] = True
    return out.reshape(rows, cols)
