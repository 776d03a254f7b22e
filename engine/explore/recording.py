"""The explorer's recording: one JSON line per action with the frame it led to (MaaFramework's record controller
writes the same shape), kept so an explore can be resumed and reviewed.

``recording.jsonl`` holds ``{seq, time, action, frame, page, note[, transients]}`` per line; ``frames/<seq>.png`` the
frame seen after the action settled, ``frames/<seq>_t<n>.png`` the loading screens seen on the way. A torn last line (the process killed mid-write) is ignored on reading, so re-running with
the same folder continues from the last whole line.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Iterator

import cv2
import numpy as np

log = logging.getLogger(__name__)

FILE = "recording.jsonl"
FRAMES = "frames"


class Recording:
    """Append-only: ``add`` writes the frame first, then its line (a line never names a missing frame)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / FILE
        (self.folder / FRAMES).mkdir(parents=True, exist_ok=True)
        self.entries: list[dict[str, Any]] = list(self._read())
        self._out = self.path.open("a", encoding="utf-8")

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
            note: str = "", transients: list[np.ndarray] = ()) -> dict[str, Any]:
        """Record `action` and the `frame` it settled on (after `transients`: screens that went by themselves)."""
        seq = self.next_seq
        rel = self._write(frame, f"{seq:06d}") if frame is not None else None
        entry = {"seq": seq, "time": round(time.time(), 3), "action": action, "frame": rel, "page": page,
                 "note": note}
        if transients:
            entry["transients"] = [self._write(t, f"{seq:06d}_t{i}") for i, t in enumerate(transients)]
        self._out.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self._out.flush()
        self.entries.append(entry)
        return entry

    def _write(self, frame: np.ndarray, stem: str) -> str:
        rel = f"{FRAMES}/{stem}.png"
        if not cv2.imwrite(str(self.folder / rel), frame):
            raise OSError(f"cannot write {self.folder / rel}")
        return rel

    def frame(self, entry: dict[str, Any]) -> np.ndarray | None:
        """The frame of `entry` (None when it has none or the file is gone)."""
        if not entry.get("frame"):
            return None
        return self.read(entry["frame"])

    def read(self, rel: str) -> np.ndarray | None:
        """The frame at `rel` (a path under the folder, as entries name them); None when missing or outside."""
        return self.read_from(self.folder, rel)

    @staticmethod
    def read_from(folder: Path, rel: str) -> np.ndarray | None:
        if not isinstance(rel, str) or ".." in Path(rel).parts or Path(rel).is_absolute():
            return None
        return cv2.imread(str(Path(folder) / rel), cv2.IMREAD_COLOR)

    def close(self) -> None:
        self._out.close()
