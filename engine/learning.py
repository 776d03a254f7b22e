"""The graph learns: a screen the vision model resolved becomes a proposed popup, so it never needs the model again.

When the recovery ladder reaches the vision model on an unknown screen and the model names no declared page or
popup but a point that closes what covers the screen (``VisionAnswer.tap``), the navigator taps it and this module
remembers the lesson. If the next look shows a page the graph knows, the lesson worked: it is written as a
proposal, a YAML file in the proposals folder beside the transcript (never into the graph by itself) with the
frame, a template crop around the tapped point, the dismiss action, the page it covered (the one the next look
shows) and how often it was seen.

The crop is chosen by measuring: of the candidate boxes around the tapped point, the one whose best match on the
frames of known pages seen in this run is lowest (it separates this screen from them), with that score kept as
``collision``. A new sighting of the same screen (the crop found again where it was cut) counts up the proposal
instead of making another. ``python -m engine proposals`` lists, shows, accepts (validated, written into the user's
graph folder and asset pack) or rejects them.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import yaml

log = logging.getLogger(__name__)

HALF_SIZES = ((20, 14), (32, 20), (48, 32), (72, 44))
"""Candidate crops around the tapped point: half width and half height in pixels."""
SEARCH_PAD = 16
"""How far around its place a crop is looked for on another frame."""
SAME_SCREEN = 0.9
"""A proposal's crop matching a new frame this well where it was cut: the same screen, seen again."""


@dataclass
class Lesson:
    frame: np.ndarray
    point: tuple[int, int]
    label: str


def best_score(crop: np.ndarray, frame: np.ndarray, area: tuple[int, int, int, int], pad: int = SEARCH_PAD) -> float:
    """The best normalised match of `crop` on `frame` around `area` (0 when it cannot be placed there)."""
    x1, y1, x2, y2 = area
    h, w = frame.shape[:2]
    region = frame[max(0, y1 - pad):min(h, y2 + pad), max(0, x1 - pad):min(w, x2 + pad)]
    if region.shape[0] < crop.shape[0] or region.shape[1] < crop.shape[1]:
        return 0.0
    scores = cv2.matchTemplate(region, crop, cv2.TM_CCOEFF_NORMED)
    return float(np.nan_to_num(scores).max())


def choose_crop(frame: np.ndarray, point: tuple[int, int], known: list[np.ndarray]
                ) -> tuple[tuple[int, int, int, int], float]:
    """The candidate box around `point` that known frames match least: (area, its collision score)."""
    h, w = frame.shape[:2]
    best: tuple[tuple[int, int, int, int], float] | None = None
    for hw, hh in HALF_SIZES:
        x, y = point
        area = (max(0, x - hw), max(0, y - hh), min(w, x + hw), min(h, y + hh))
        crop = frame[area[1]:area[3], area[0]:area[2]]
        if crop.size == 0 or float(crop.std()) < 1.0:
            continue  # a flat crop matches anything (or nothing) by chance: no signature
        collision = max((best_score(crop, other, area) for other in known), default=0.0)
        if best is None or collision < best[1] - 0.02:
            best = (area, collision)
    if best is None:
        raise ValueError(f"no usable crop around {list(point)}: the frame is flat there")
    return best


def slug(label: str) -> str:
    words = re.sub(r"[^A-Za-z0-9]+", "_", label).strip("_").upper()[:40]
    return f"LEARNED_{words or 'POPUP'}"


class Learner:
    """Remembers frames of known pages and turns verified lessons into proposal files in `folder`."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.known: dict[str, np.ndarray] = {}
        """The last frame of each known page seen without a popup: what a crop must not match."""
        self.pending: Lesson | None = None

    def try_unnamed(self, nav: Any, ctx: Any) -> bool:
        """The model named nothing declared but a point that closes what covers the screen: tap it (the next
        look is checked by ``verify``). False when the answer has no usable point."""
        from engine.schema import TapAction

        answer, frame = getattr(nav.observer, "last_vision", None), nav.last_frame
        width, height = nav.graph.resolution
        if answer is None or answer.tap is None or frame is None or \
                not (0 <= answer.tap[0] < width and 0 <= answer.tap[1] < height):
            return False
        nav.act(ctx, TapAction(type="tap", point=answer.tap), nav.last_observation)
        self.pending = Lesson(frame, tuple(answer.tap), answer.blocking_element or "popup")
        ctx.record("vision_tap", point=list(answer.tap), label=self.pending.label)
        return True

    def looked(self, ctx: Any, obs: Any, frame: np.ndarray) -> Path | None:
        """Every look of the navigator: a known page without popups is kept as a frame a crop must not match, and
        the first look after a lesson's tap judges it (a known page without popups: it worked, so it is proposed;
        anything else: it is dropped). Returns the proposal's path when one was written or counted up."""
        if obs.page is not None and not obs.popups:
            self.known[obs.page] = frame
        lesson, self.pending = self.pending, None
        if lesson is None or obs.page is None or obs.popups:
            return None
        try:
            path = self.record(lesson, obs.page)
        except (OSError, ValueError) as exc:  # learning is a bonus: it never fails the run
            log.warning("could not record the proposal for %r: %s", lesson.label, exc)
            return None
        ctx.record("proposal", path=str(path), shown_on=obs.page)
        return path

    def record(self, lesson: Lesson, page: str) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        for path in sorted(self.folder.glob("*.yaml")):
            proposal = read_proposal(path)
            crop = cv2.imread(str(path.with_suffix(".crop.png")), cv2.IMREAD_COLOR)
            if crop is not None and best_score(crop, lesson.frame, tuple(proposal["area"]), 8) >= SAME_SCREEN:
                proposal["sightings"] = int(proposal.get("sightings", 1)) + 1
                proposal["last_seen"] = _now()
                path.write_text(yaml.safe_dump(proposal, sort_keys=False))
                log.info("proposal %s seen again (%d sightings)", proposal["name"], proposal["sightings"])
                return path
        known_dir = self.folder / "known"
        known_dir.mkdir(exist_ok=True)
        for name, frame in self.known.items():
            cv2.imwrite(str(known_dir / f"{name}.png"), frame)
        area, collision = choose_crop(lesson.frame, lesson.point, list(self.known.values()))
        name = _unique(self.folder, slug(lesson.label))
        path = self.folder / f"{name}.yaml"
        cv2.imwrite(str(path.with_suffix(".frame.png")), lesson.frame)
        cv2.imwrite(str(path.with_suffix(".crop.png")), lesson.frame[area[1]:area[3], area[0]:area[2]])
        proposal = {"name": name, "label": lesson.label, "tap": list(lesson.point), "area": list(area),
                    "shown_on": page, "sightings": 1, "collision": round(collision, 3),
                    "known_pages": sorted(self.known), "first_seen": _now(), "last_seen": _now()}
        path.write_text(yaml.safe_dump(proposal, sort_keys=False))
        log.info("proposed %s (%r): tap %s led to %s; crop %s, collision %.2f", name, lesson.label,
                 list(lesson.point), page, list(area), collision)
        return path


def read_proposal(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or not {"name", "area", "tap"} <= set(data):
        raise ValueError(f"{path}: not a proposal")
    return data


def _unique(folder: Path, name: str) -> str:
    candidate, n = name, 2
    while (folder / f"{candidate}.yaml").exists():
        candidate, n = f"{name}_{n}", n + 1
    return candidate


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")
