"""The graph learns: a screen the model resolved becomes a proposed popup, so it never needs the model again.

A lesson is a tap on a screen the graph does not explain: the point the vision model names when it sees no
declared page or popup but something covering the screen (``VisionAnswer.tap``; the navigator asks when a screen
is unknown, or when a known page swallows its taps), or the point an agent taps through ``adb_tap`` on an unknown
screen. The next look judges it: a known page without popups, with what was tapped gone from around the tapped
point, means it worked, and it is written as a proposal, a YAML file in the proposals folder beside the transcript
(never into the graph by itself) with the frame, a template crop, the dismiss action, the page it covered (the one
the next look shows) and how often it was seen.

The crop is chosen by measuring: of the candidate boxes around the tapped point, the one whose best match on the
frames of known pages seen in this run is lowest (it separates this screen from them), with that score kept as
``collision``. A new sighting of the same screen (the crop found again where it was cut) counts up the proposal
instead of making another. ``python -m engine proposals`` and the studio list, show, accept or reject them
(engine.learning.proposals).

Trust: nothing is accepted by itself unless the policy file says ``learning: {mode: auto, min_sightings: N}``
(engine.config.policies.Learning); then a proposal verified N times is accepted into the user's graph folder and asset
pack, with the same checks as a user's accept, and the live engine takes it up. A learned popup (``learned:`` in
its YAML) is watched: when its dismissal fails twice in a row, or its tap goes through to another page (it fired
where a known page was), it is demoted (its file leaves the graph for ``demoted/`` with the reason) and reported
in the run's steps and ``data.learning``.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import cv2
import numpy as np
import yaml

from engine.learning.proposals import accept, demote, learned_pack_dir, read_proposal

log = logging.getLogger(__name__)

HALF_SIZES = ((20, 14), (32, 20), (48, 32), (72, 44))
"""Candidate crops around the tapped point: half width and half height in pixels."""
SEARCH_PAD = 16
"""How far around its place a crop is looked for on another frame."""
SAME_SCREEN = 0.9
"""A proposal's crop matching a new frame this well where it was cut: the same screen, seen again."""
KEPT_FRAMES = 24
"""Frames of known pages (and, apart, of known popups) kept for measuring crops: memory stays bounded (~66 MB at
1280x720 for both) however long the session."""
TITLE_SIZE = (320, 56)
"""Largest title band (width, height) cut from the top of what covers the page."""


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


def title_band(frame: np.ndarray, beneath: np.ndarray | None) -> tuple[int, int, int, int] | None:
    """The top band of what covers the page: where `frame` differs from the page `beneath` it, its first rows
    (a popup's title, steadier than its contents), at most TITLE_SIZE. None without the page or a difference."""
    if beneath is None or beneath.shape != frame.shape:
        return None
    changed = cv2.absdiff(frame, beneath).max(axis=2) > 30
    rows, cols = np.flatnonzero(changed.any(axis=1)), np.flatnonzero(changed.any(axis=0))
    if rows.size == 0 or cols.size == 0:
        return None
    x1, x2, y1 = int(cols[0]), int(cols[-1]) + 1, int(rows[0])
    width, height = min(TITLE_SIZE[0], x2 - x1), min(TITLE_SIZE[1], int(rows[-1]) + 1 - y1)
    centre = (x1 + x2) // 2
    return (max(0, centre - width // 2), y1, max(0, centre - width // 2) + width, y1 + height)


def choose_crop(frame: np.ndarray, point: tuple[int, int], known: list[np.ndarray],
                extra: list[tuple[int, int, int, int]] = ()) -> tuple[tuple[int, int, int, int], float]:
    """Of the candidate boxes (around `point`, then `extra`), the one known frames match least: (area, its
    collision score); a later candidate must be clearly better to win."""
    h, w = frame.shape[:2]
    best: tuple[tuple[int, int, int, int], float] | None = None
    x, y = point
    around = [(max(0, x - hw), max(0, y - hh), min(w, x + hw), min(h, y + hh)) for hw, hh in HALF_SIZES]
    for area in [*around, *extra]:
        crop = frame[area[1]:area[3], area[0]:area[2]]
        if crop.size == 0 or min(crop.shape[:2]) < 8 or float(crop.std()) < 1.0:
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


@dataclass
class Watch:
    """A learned popup just dismissed: the next look judges whether it was really there."""

    popup: str
    page: str | None
    frame: np.ndarray


class Learner:
    """Remembers frames of known pages, turns verified lessons into proposal files in `folder`, and (with
    `auto`) accepts a proposal seen that often into the user's graph; demotes a learned popup that misfires.

    Args:
        folder: the proposals folder.
        auto: verified sightings after which a proposal is accepted by itself (None: never, the default).
        graph_dir, pack_dir: the user's graph folder and asset pack that accepting writes (needed by `auto`, and
            to take a demoted popup's file out of the graph).
        pages_pack: the pack the session recognises pages with (a proposal's checks use it).
        adopt: called after the graph folder changed (accepted or demoted) so that the live engine takes it up.
    """

    def __init__(self, folder: str | Path, *, auto: int | None = None, graph_dir: Path | None = None,
                 pack_dir: Path | None = None, pages_pack: Any = None,
                 adopt: Callable[[], None] | None = None) -> None:
        self.folder = Path(folder)
        self.auto, self.graph_dir, self.pack_dir, self.pages_pack = auto, graph_dir, pack_dir, pages_pack
        self.adopt = adopt
        self.known: dict[str, np.ndarray] = {}
        """The last frame of each known page seen without a popup: what a crop must not match."""
        self.popup_frames: dict[str, np.ndarray] = {}
        """The last frame showing each known popup: what a crop must not match either."""
        self.pending: Lesson | None = None
        self.watch: Watch | None = None
        self.failed: dict[str, int] = {}
        """Dismissals of a learned popup that did not work, in a row."""

    def try_unnamed(self, nav: Any, ctx: Any) -> bool:
        """The model named nothing declared but a point that closes what covers the screen: tap it (the next
        look is judged by ``looked``). False when the answer has no usable point."""
        answer = getattr(nav.observer, "last_vision", None)
        if answer is None or answer.tap is None:
            return False
        return self.tapped(nav, ctx, (answer.tap[0], answer.tap[1]), answer.blocking_element or "popup", act=True)

    def tapped(self, nav: Any, ctx: Any, point: tuple[int, int], label: str, *, act: bool = False) -> bool:
        """A tap on a screen the graph does not explain (the model's, or an agent's): a lesson for the next look
        to judge; with `act`, the tap is performed here too. False for a point off the screen or no frame."""
        from engine.config.schema import TapAction

        frame, obs = nav.last_frame, nav.last_observation
        width, height = nav.graph.resolution
        if frame is None or not (0 <= point[0] < width and 0 <= point[1] < height):
            return False
        if act:
            nav.act(ctx, TapAction(type="tap", point=(int(point[0]), int(point[1]))), obs)
        self.pending = Lesson(frame, (int(point[0]), int(point[1])), label)
        ctx.record("lesson_tap", point=[int(v) for v in point], label=label, performed=act)
        return True

    def dismissing(self, popup: Any, obs: Any, frame: np.ndarray | None) -> None:
        """The navigator dismisses `popup`: a learned one is watched (the next look says whether it was there)."""
        if getattr(popup, "learned", None) and frame is not None:
            self.watch = Watch(popup.name, obs.page, frame)

    def looked(self, ctx: Any, obs: Any, frame: np.ndarray) -> bool:
        """Every look: a known page without popups is kept as a frame a crop must not match; the first look after
        a lesson's tap judges it (a known page without popups, and what was tapped gone from around the point: it
        worked and is proposed; anything else: dropped); the first look after a learned popup's dismissal judges
        that. True when the graph changed (a popup accepted or demoted): the frame must be observed again."""
        if obs.page is not None and not obs.popups:
            _keep(self.known, obs.page, frame)
        for popup in obs.popups[:1]:  # a known popup's frame: a crop must not match it either
            _keep(self.popup_frames, popup, frame)
        changed = self.watch is not None and self._judge_learned(ctx, obs)
        lesson, self.pending = self.pending, None
        if lesson is None or obs.page is None or obs.popups or not _gone(lesson, frame):
            return changed
        try:
            path, proposal = self.record(lesson, obs.page)
            ctx.record("proposal", path=str(path), shown_on=obs.page)
            if self.auto is not None:
                changed = self._maybe_accept(ctx, path, proposal) or changed
        except (OSError, ValueError, yaml.YAMLError) as exc:  # learning is a bonus: it never fails the run
            log.warning("could not record the proposal for %r: %s", lesson.label, exc)
        return changed

    def _judge_learned(self, ctx: Any, obs: Any) -> bool:
        """Demote a learned popup whose tap went through to the page beneath (another known page came: it fired
        where a known page was), or whose dismissal did not work twice in a row (it is still there). True when
        the live graph changed."""
        watch, self.watch = self.watch, None
        reason = None
        if watch.page is not None and obs.page is not None and obs.page != watch.page:
            reason = f"it fired on {watch.page}, a known page, and its tap went through to the page (now {obs.page})"
        elif watch.popup in obs.popups:
            self.failed[watch.popup] = self.failed.get(watch.popup, 0) + 1
            if self.failed[watch.popup] >= 2:
                reason = "its dismissal did not work: it was still there after two taps in a row"
        else:
            self.failed.pop(watch.popup, None)
        return reason is not None and self.demote(ctx, watch.popup, reason, watch.frame)

    def demote(self, ctx: Any, name: str, reason: str, frame: np.ndarray | None = None) -> bool:
        """Take learned popup `name` out of the user's graph and report it (the live engine stops seeing it).
        True when the live graph changed."""

        if self.graph_dir is not None:
            try:
                demote(self.folder, self.graph_dir, name, reason, frame)
            except OSError as exc:
                log.warning("could not take %s out of %s: %s", name, self.graph_dir, exc)
        else:
            log.warning("learned popup %s misfired (%s); the session has no graph folder to take it out of",
                        name, reason)
        self.failed.pop(name, None)
        ctx.record("learned_demoted", popup=name, reason=reason)
        return self._adopt(ctx)

    def _maybe_accept(self, ctx: Any, path: Path, proposal: dict[str, Any]) -> bool:
        """Accept the proposal at `path` if the policy's sightings are reached and nothing speaks against it.
        True when the live graph changed."""
        from engine.core.errors import ConfigError

        if int(proposal.get("sightings", 1)) < int(self.auto or 0):
            return False
        if self._was_demoted(path, proposal):
            log.warning("learning: auto does not accept %s: the same screen was demoted before; it waits for "
                        "review (python -m engine proposals)", proposal["name"])
            return False
        if self.graph_dir is None or self.pack_dir is None:
            log.warning("learning: auto cannot accept %s: the session has no graph folder and asset pack of yours "
                        "to write (pass --graph and --assets)", proposal["name"])
            return False
        try:
            done = accept(self.folder, proposal["name"], self.graph_dir, self.pack_dir, pages_pack=self.pages_pack,
                          by="auto")
        except ConfigError as exc:  # refused (it fires on a known page) or the graph would break: it waits
            log.warning("learning: auto did not accept %s: %s", proposal["name"], exc)
            ctx.record("proposal_refused", name=proposal["name"], reason=str(exc)[:500])
            return False
        ctx.record("proposal_accepted", **done)
        return self._adopt(ctx)

    def _was_demoted(self, path: Path, proposal: dict[str, Any]) -> bool:
        """Whether a learned popup of the same screen (its crop found where it was cut) was demoted before."""
        crop = cv2.imread(str(path.with_suffix(".crop.png")), cv2.IMREAD_COLOR)
        for misfire in sorted((self.folder / "demoted").glob("*.misfire.png")) if crop is not None else ():
            if _same_screen(crop, cv2.imread(str(misfire), cv2.IMREAD_COLOR), proposal["area"]):
                return True
        return False

    def _adopt(self, ctx: Any) -> bool:
        """The live engine takes up the changed graph folder; False when it has no way to, or the folder broke."""
        if self.adopt is None:
            return False
        try:
            self.adopt()
            return True
        except Exception as exc:  # noqa: BLE001 - a graph folder that no longer loads must not end the run
            log.warning("the changed graph could not be taken up: %s", exc)
            ctx.record("learning_error", message=str(exc)[:500])
            return False

    def record(self, lesson: Lesson, page: str) -> tuple[Path, dict[str, Any]]:
        """Write the lesson as a proposal, or count up the proposal of the same screen: its path and contents."""

        self.folder.mkdir(parents=True, exist_ok=True)
        for path in sorted(self.folder.glob("*.yaml")):
            proposal = read_proposal(path)
            if _same_screen(cv2.imread(str(path.with_suffix(".crop.png")), cv2.IMREAD_COLOR), lesson.frame,
                            proposal["area"]):
                proposal["sightings"] = int(proposal.get("sightings", 1)) + 1
                proposal["last_seen"] = _now()
                path.write_text(yaml.safe_dump(proposal, sort_keys=False))
                log.info("proposal %s seen again (%d sightings)", proposal["name"], proposal["sightings"])
                return path, proposal
        # A "known page" frame showing this very screen was the popup over a page still recognised: not known.
        known = {name: frame for name, frame in self.known.items() if not _same_around(lesson, frame)}
        known_dir = self.folder / "known"
        known_dir.mkdir(exist_ok=True)
        for name, frame in known.items():
            cv2.imwrite(str(known_dir / f"{name}.png"), frame)
        title = title_band(lesson.frame, self.known.get(page))  # (the page as the tap left it)
        others = [f for f in self.popup_frames.values() if not _same_around(lesson, f)]
        area, collision = choose_crop(lesson.frame, lesson.point, [*known.values(), *others], [title] if title else [])
        name = _unique(self.folder, slug(lesson.label))
        path = self.folder / f"{name}.yaml"
        cv2.imwrite(str(path.with_suffix(".frame.png")), lesson.frame)
        cv2.imwrite(str(path.with_suffix(".crop.png")), lesson.frame[area[1]:area[3], area[0]:area[2]])
        proposal = {"name": name, "label": lesson.label, "tap": list(lesson.point), "area": list(area),
                    "signature": {"type": "template", "area": list(area), "crop": path.with_suffix(".crop.png").name},
                    "dismiss": [{"type": "tap", "point": list(lesson.point)}],
                    "shown_on": page, "sightings": 1, "collision": round(collision, 3),
                    "known_pages": sorted(known), "first_seen": _now(), "last_seen": _now()}
        path.write_text(yaml.safe_dump(proposal, sort_keys=False))
        log.info("proposed %s (%r): tap %s led to %s; crop %s, collision %.2f", name, lesson.label,
                 list(lesson.point), page, list(area), collision)
        return path, proposal


def _same_screen(crop: np.ndarray | None, frame: np.ndarray | None, area: list[int]) -> bool:
    """Whether a proposal's crop is found on `frame` where it was cut: the same screen, seen again."""
    return crop is not None and frame is not None and best_score(crop, frame, tuple(area), 8) >= SAME_SCREEN


def _keep(frames: dict[str, np.ndarray], name: str, frame: np.ndarray) -> None:
    """Keep `frame` as the newest of `name`, and at most KEPT_FRAMES frames (the least recently seen go)."""
    frames.pop(name, None)
    frames[name] = frame
    while len(frames) > KEPT_FRAMES:
        frames.pop(next(iter(frames)))


def _around(lesson: Lesson, frame: np.ndarray) -> np.ndarray:
    hw, hh = HALF_SIZES[-1]
    x, y = lesson.point
    return frame[max(0, y - hh):y + hh, max(0, x - hw):x + hw]


def _same_around(lesson: Lesson, frame: np.ndarray) -> bool:
    """Whether `frame` shows what the lesson's frame shows around the tapped point (the widest candidate box)."""
    a, b = _around(lesson, lesson.frame), _around(lesson, frame)
    return a.shape == b.shape and float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean()) < 2.0


def _gone(lesson: Lesson, frame: np.ndarray) -> bool:
    """Whether what was tapped is gone from around the tapped point (the tap did something there)."""
    return lesson.frame.shape == frame.shape and not _same_around(lesson, frame)


def _unique(folder: Path, name: str) -> str:
    candidate, n = name, 2
    while any(folder.glob(f"{candidate}.yaml")) or any(folder.glob(f"*/{candidate}.yaml")):
        candidate, n = f"{name}_{n}", n + 1
    return candidate


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S")


# ------------------------------------------------------------------------------------------ a session's learner

def with_learned(graph_dir: str | Path | None, pack: Any, server: str) -> Any:
    """`pack` under the learned templates of `graph_dir`, when it has some."""
    from engine.config.assetpacks import INDEX_FILE, DirectoryAssetPack, LayeredPack

    folder = learned_pack_dir(graph_dir)
    if pack is None or folder is None or not (folder / INDEX_FILE).is_file():
        return pack
    return LayeredPack([DirectoryAssetPack(folder, server), pack], server)


def session_learner(session: Any, graph_dir: str | Path | None, base: Any) -> Learner | None:
    """The learner a session's navigator is made with, as its policy says (``learning``: off, propose, auto): proposals
    beside the transcript (none without one); `auto` accepts into the user's graph folder and its learned pack,
    and the live session takes the grown (or demoted) graph up at once. `base`: the session's pack without the
    learned templates."""
    from engine.config.loader import load_graph

    policy = session.policies.learning
    if session.bundle_dir is None or policy.mode == "off":
        return None
    pack_dir = learned_pack_dir(graph_dir)
    folder = pack_dir.parent if pack_dir is not None else None  # the user's graph folder: never the shipped one

    def adopt() -> None:
        graph = load_graph(folder, policies=session.policies.names).resolve(session.graph.server)
        pack = with_learned(folder, base, graph.server)
        session.observer.adopt(graph, pack)
        session.graph, session.assets, session.navigator.graph = graph, pack, graph
        if session.tools is not None:
            session.tools.graph = graph
        log.info("the session took up the changed graph: %d popups", len(graph.popups))

    if policy.mode == "auto" and folder is None:
        log.warning("learning: auto needs a graph folder of yours (--graph DIR, a copy of the shipped one): "
                    "proposals are written, none is accepted by itself")
    return Learner(
        Path(session.bundle_dir).parent / "proposals", auto=policy.min_sightings if policy.mode == "auto" else None,
        graph_dir=folder, pack_dir=pack_dir, pages_pack=base, adopt=adopt if folder is not None else None)
