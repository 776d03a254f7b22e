"""The transcript: an append-only JSONL ledger of what the engine did and saw, one line per event.

Every action, observation, verdict and result becomes one JSON object on its own line, with ``seq`` (contiguous
from 1 in a file), ``ts`` (Unix time) and ``kind``. Each line is written whole, flushed and fsync'ed before
``record`` returns, so a process killed with SIGKILL leaves every earlier line intact and at most a torn last
line, which the readers here skip. Secrets never reach the file (engine.core.redact). A record is at most
MAX_RECORD_BYTES: past that its largest fields are cut, and ``cut`` says which and how big they were.

Beside the ledger live two kinds of files built from it: error bundles (the last frames as PNG plus the matching
slice of the transcript, in one folder, for a failure to be read later) and traces (a successful goto or run as
an ordered list of steps with their preconditions and success criteria, as JSON).
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from engine.core.redact import redact

log = logging.getLogger(__name__)

MAX_RECORD_BYTES = 64 * 1024
"""The most one ledger line may take: a runaway field (a 5 MB model answer) is cut, never written whole."""
KEPT_HEAD_CHARS = 512
"""How much of a cut field stays, as text, so the line still shows what it was."""


def _dumps(entry: Mapping[str, Any]) -> str:
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)


def cap_record(body: dict[str, Any], limit: int = MAX_RECORD_BYTES) -> dict[str, Any]:
    """`body` (JSON-ready) cut to at most about `limit` bytes of JSON: its largest fields, one at a time, become
    the first KEPT_HEAD_CHARS characters of their JSON, and ``cut`` maps each cut field to its size in bytes."""
    if len(_dumps(body).encode("utf-8")) <= limit:
        return body
    body = dict(body)
    sizes = sorted(((len(_dumps({k: v}).encode("utf-8")), k) for k, v in body.items()), reverse=True)
    cut: dict[str, int] = {}
    for size, key in sizes:
        body[key] = _dumps(body[key])[:KEPT_HEAD_CHARS]
        cut[key] = size
        body["cut"] = cut
        if len(_dumps(body).encode("utf-8")) <= limit:
            break
    return body


def read_lines(path: str | Path) -> list[dict[str, Any]]:
    """Every complete entry of a transcript file; a torn last line (a killed writer) is skipped.

    Raises:
        ValueError: a line other than the last one does not parse (the file was corrupted, not just cut short).
    """
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    lines = text.split("\n")
    entries: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            last = number == len(lines) or (number == len(lines) - 1 and not lines[-1])
            if last and not text.endswith("\n"):
                log.warning("%s: skipping a torn last line (the writer was interrupted)", path)
                continue
            raise ValueError(f"{path}:{number}: not a JSON line") from None
    return entries


class Transcript:
    """An append-only JSONL ledger (thread-safe; every line is fsync'ed before `record` returns).

    Appending to an existing file continues its ``seq`` numbering after the last complete line. When the file
    ends with a torn line, a newline is written first so the torn bytes stay alone on their line.

    Args:
        path: the .jsonl file; its folder is created.
        clock: wall clock for ``ts`` (tests pass a fixed one).
        fsync: turn off only for benchmarks of other code; durability depends on it.
    """

    def __init__(self, path: str | Path, *, clock: Callable[[], float] = time.time, fsync: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._clock = clock
        self._fsync = fsync
        self._lock = threading.Lock()
        existing = read_lines(self.path) if self.path.exists() else []
        self._seq = max((int(e.get("seq", 0)) for e in existing), default=0)
        needs_newline = self.path.exists() and self.path.stat().st_size > 0 and not self._ends_with_newline()
        # Unbuffered binary: one os-level write per line, so a kill tears at most the line being written.
        self._file = open(self.path, "ab", buffering=0)
        if needs_newline:
            self._file.write(b"\n")

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"

    @property
    def seq(self) -> int:
        """The seq of the last line written (0 when none)."""
        return self._seq

    def record(self, kind: str, **fields: Any) -> dict[str, Any]:
        """Append one event and return it as written (seq, ts, kind, then the redacted fields)."""
        body = cap_record(redact(fields))
        with self._lock:
            if self._file.closed:
                raise ValueError(f"transcript {self.path} is closed")
            seq = self._seq + 1
            entry = {"seq": seq, "ts": round(self._clock(), 6), "kind": kind, **body}
            data = (_dumps(entry) + "\n").encode("utf-8")
            view = memoryview(data)
            while view:
                written = self._file.write(view)
                view = view[written:]
            if self._fsync:
                os.fsync(self._file.fileno())
            self._seq = seq
        return entry

    def entries(self) -> list[dict[str, Any]]:
        """Every complete line of the file, in order."""
        with self._lock:
            return read_lines(self.path)

    def tail(self, n: int) -> list[dict[str, Any]]:
        """The last `n` entries."""
        return self.entries()[-n:] if n > 0 else []

    def since(self, seq: int) -> list[dict[str, Any]]:
        """The entries after `seq` (``since(0)`` is everything)."""
        return [e for e in self.entries() if int(e.get("seq", 0)) > seq]

    def error_bundle(
        self,
        folder: str | Path,
        frames: Sequence[tuple[str, np.ndarray]],
        entries: Iterable[Mapping[str, Any]] | None = None,
        *,
        result: Mapping[str, Any] | None = None,
        last: int = 50,
    ) -> Path:
        """An error bundle in a new subfolder of `folder` (one per failure, named after the ledger's seq).

        Args:
            folder: where this session's bundles go.
            frames: ``(name, BGR ndarray)`` pairs, oldest first.
            entries: the slice that led to the failure; defaults to this transcript's last `last` entries.
            result: the failing ToolResult as a dict, written beside them as result.json.
        """
        if entries is None:
            entries = self.tail(last)
        status = str((result or {}).get("status") or "error")
        name = f"{self.seq:06d}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', status)}"
        target = Path(folder) / name
        index = 1
        while target.exists():
            index += 1
            target = Path(folder) / f"{name}-{index}"
        return error_bundle(target, frames, entries, result=result)

    def save_trace(self, tool: str, target: str, steps: Sequence[Mapping[str, Any] | Any]) -> Path:
        """Record a successful goto or run as a trace in ``traces/`` beside the ledger."""
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{tool}-{target}").strip("._") or "trace"
        path = self.path.parent / "traces" / f"{self.seq:06d}-{safe}.json"
        return save_trace(path, steps, tool=tool, target=target, transcript=self.path.name, seq=self.seq)

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.close()

    def __enter__(self) -> Transcript:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def error_bundle(
    folder: str | Path,
    frames: Sequence[tuple[str, np.ndarray]],
    entries: Iterable[Mapping[str, Any]],
    *,
    result: Mapping[str, Any] | None = None,
) -> Path:
    """Write the last frames (PNG) and the matching transcript slice (JSONL) into one folder.

    Args:
        folder: created when missing; files already in it are replaced.
        frames: ``(name, BGR ndarray)`` pairs, oldest first; files are numbered in that order.
        entries: the transcript slice that led to the failure.
        result: the failing ToolResult as a dict, written as result.json.

    Returns:
        The folder.
    """
    import cv2

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for index, (name, frame) in enumerate(frames):
        safe = re.sub(r"[^A-Za-z0-9_.\-]+", "_", name).strip("._") or "frame"
        target = folder / f"{index:02d}_{safe}.png"
        ok, encoded = cv2.imencode(".png", np.ascontiguousarray(frame))
        if not ok:
            log.warning("error bundle: frame %r could not be encoded", name)
            continue
        target.write_bytes(encoded.tobytes())
    lines = [_dumps(redact(dict(e))) for e in entries]
    _write_atomic(folder / "transcript.jsonl", "".join(line + "\n" for line in lines))
    if result is not None:
        _write_atomic(folder / "result.json", json.dumps(redact(result), indent=2, default=str) + "\n")
    return folder


def save_trace(path: str | Path, steps: Sequence[Mapping[str, Any] | Any], **meta: Any) -> Path:
    """Record a successful goto or run as a JSON trace: ordered steps with preconditions and success criteria.

    Args:
        path: the .json file (its folder is created; written atomically).
        steps: in order; each a mapping (or a record with ``to_dict()``), typically ``{"action": ...,
            "precondition": ..., "success": ...}``.
        meta: what the trace is of (``tool="alas_goto", target="page_shop"``...).

    Raises:
        ValueError: a step is not a mapping once converted.
    """
    converted = []
    for index, step in enumerate(steps):
        body = redact(step)
        if not isinstance(body, dict):
            raise ValueError(f"trace step {index} is not a mapping: {step!r}")
        # A navigator hop says where it started (source) and where it must land (to): its criteria.
        if "precondition" not in body and body.get("source"):
            body["precondition"] = {"page": body["source"]}
        if "success" not in body and body.get("to"):
            body["success"] = {"page": body.get("expect") or body["to"]}
        converted.append({"step": index + 1, **body})
    document = {"version": 1, "created": round(time.time(), 3), **redact(meta), "steps": converted}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(path, json.dumps(document, ensure_ascii=False, indent=2, default=str) + "\n")
    return path


def load_trace(path: str | Path) -> dict[str, Any]:
    """A trace written by `save_trace`."""
    return json.loads(Path(path).read_text(encoding="utf-8"))


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)

