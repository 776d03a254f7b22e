"""The frames that judge a proposal before it is accepted: would the new popup fire on a frame where it is not shown?

Clean evidence answers that question, and only clean evidence counts against a proposal:

- ``known/`` beside the proposals: frames of known pages the learner verified (a tap on them went through, so
  nothing the graph does not know covered them: engine.learning.learner);
- ``clean/`` beside the proposals: frames the user labelled as showing no unknown dialog (any PNG put there);
- the asset pack's references: each known page's templates drawn at their areas on black (pixels of known
  pages that no dialog can be on);
- error-bundle frames (``../error_bundles``) that the graph without the proposal reads as a known page without
  popups, except those that show the proposal's own evidence (its signature crop found where it was cut). A
  dialog is drawn over a page, so a recognised page is no proof that the dialog is absent: such frames are
  sightings of the same screen, and they count for the proposal, not against it.

Checking is bounded however long the runs were: at most MAX_FOLDER_FRAMES frames of each folder (newest first),
MAX_REFERENCES references (spread over the pages), MAX_BUNDLE_FRAMES bundle frames (newest bundles first).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import cv2
import numpy as np

from engine.config.schema import AnyOfSignature, Graph, TemplateSignature
from engine.learning.crops import same_screen

MAX_FOLDER_FRAMES = 24
"""Frames of ``known/`` and of ``clean/`` checked at most (each, newest first)."""
MAX_REFERENCES = 24
"""Reference frames (one per known page) checked at most, spread over the graph's pages."""
MAX_BUNDLE_FRAMES = 24
"""Error-bundle frames read at most (the newest bundles first): accepting stays bounded in time."""


@dataclass
class Verdict:
    """Where the new popup fired on clean evidence (`fired`: paths or ``reference:PAGE``), how many frames of each
    source were checked, and how many bundle frames showed the proposal itself (counted for it)."""

    fired: list[Any] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)
    sightings: int = 0


def judge(folder: Path, proposal: dict[str, Any], crop: np.ndarray | None, fires: Any, before: Graph,
          pack: Any) -> Verdict:
    """Check the proposal against the clean evidence of proposals folder `folder`. `fires(frame)` says whether
    the new popup is observed on a frame; `before` is the graph without it (which reads bundle frames), `pack`
    the pack pages are recognised with."""
    from engine.observe.observer import Observer

    verdict = Verdict()
    for source, frames in (("known", _folder_frames(Path(folder) / "known")),
                           ("clean", _folder_frames(Path(folder) / "clean")),
                           ("references", references(before, pack))):
        for label, frame in frames:
            verdict.checked[source] = verdict.checked.get(source, 0) + 1
            if fires(frame):
                verdict.fired.append(label)
    reader = None
    for path, frame in _bundle_frames(Path(folder).parent / "error_bundles", tuple(before.resolution)):
        if same_screen(crop, frame, proposal["area"]):
            verdict.sightings += 1  # the dialog itself, over a page that stays recognised: it speaks for it
            continue
        reader = reader or Observer(before, pack)
        obs = reader.observe(frame)
        if obs.page is None or obs.popups or obs.loading:
            continue  # not a known page's frame: no evidence either way
        verdict.checked["bundles"] = verdict.checked.get("bundles", 0) + 1
        if fires(frame):
            verdict.fired.append(path)
    return verdict


def _folder_frames(folder: Path) -> Iterator[tuple[Path, np.ndarray]]:
    if not folder.is_dir():
        return
    newest = sorted(folder.glob("*.png"), key=lambda p: p.stat().st_mtime, reverse=True)[:MAX_FOLDER_FRAMES]
    for path in newest:
        frame = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if frame is not None:
            yield path, frame


def _bundle_frames(bundles: Path, resolution: tuple[int, int]) -> Iterator[tuple[Path, np.ndarray]]:
    if not bundles.is_dir():
        return
    read = 0
    for bundle in sorted((b for b in bundles.iterdir() if b.is_dir()), key=lambda p: p.stat().st_mtime, reverse=True):
        for path in sorted(bundle.glob("*.png")):
            if read >= MAX_BUNDLE_FRAMES:
                return
            read += 1
            frame = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if frame is not None and frame.shape[1::-1] == resolution:
                yield path, frame


def references(graph: Graph, pack: Any) -> Iterator[tuple[str, np.ndarray]]:
    """Each known page's templates drawn at their areas on black (at most MAX_REFERENCES pages, spread evenly):
    pixels of known pages that nothing unknown is on."""
    pages = [p for p in graph.pages if p.name != graph.unknown_page and p.signatures]
    step = max(1, -(-len(pages) // MAX_REFERENCES))
    width, height = graph.resolution
    for page in pages[::step]:
        frame = np.zeros((height, width, 3), np.uint8)
        drawn = 0
        for sig in page.signatures:
            while isinstance(sig, AnyOfSignature):
                sig = sig.of[0]
            drawn += isinstance(sig, TemplateSignature) and _paste(frame, sig, graph, pack)
        if drawn:
            yield f"reference:{page.name}", frame


def _paste(frame: np.ndarray, sig: TemplateSignature, graph: Graph, pack: Any) -> bool:
    button = graph.button(sig.button) if sig.button else None
    asset = sig.asset or (button.asset if button is not None else None)
    template = pack.get(asset) if isinstance(asset, str) and pack is not None else None
    area = sig.area or (button.area if button is not None else None) or (template.area if template else None)
    if template is None or area is None:
        return False
    image = template.frames[0]
    x, y = int(area[0]), int(area[1])
    h, w = min(image.shape[0], frame.shape[0] - y), min(image.shape[1], frame.shape[1] - x)
    if h <= 0 or w <= 0 or x < 0 or y < 0:
        return False
    frame[y:y + h, x:x + w] = image[:h, :w]
    return True
