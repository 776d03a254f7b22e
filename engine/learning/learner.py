"""The graph learns: a screen the model resolved becomes a proposed popup, so it never needs the model again.

A lesson is a tap on a screen the graph does not explain: the point the vision model names when it sees no
declared page or popup but something covering the screen (``VisionAnswer.tap``; the navigator asks when a screen
is unknown, or when a known page swallows its taps), or the point an agent taps through ``adb_tap`` on an unknown
screen. The next look judges it: a known page without popups, with what was tapped gone from around the tapped
point (and, where a clean frame of that page is known, the whole dialog gone), means it worked, and it is written
as a proposal, a YAML file in the proposals folder beside the transcript (never into the graph by itself) with the
frame, a template crop, the dismiss action, the page it covered (the one the next look shows) and how often it was
seen.

Clean frames: a frame of a known page without popups is only trusted to show nothing unknown once the look after
it shows another page (a tap on it went through, so nothing covered it); a dialog the graph does not know can sit
over a page that is still recognised. Those clean frames are what a crop must not match (``known/`` beside the
proposals, for accepting: engine.learning.proposals).

The crop (engine.learning.crops): the dialog's box is where the frame differs from the page beneath; its title
band is the signature when no clean frame matches it (it stays when the button moves), else the candidate boxes
around the tapped point compete and the one clean frames match least wins (its score kept as ``collision``). The
button is a small crop around the tapped point, searched for inside the box when the learned popup is dismissed
(``search`` in its tap). The page beneath a dialog is often dimmed: that dimming is taken out before the box is
cut. A new sighting of the same dialog (its signature found again within GROUP_PAD of where it was cut, however far
its button or panel moved; never by where the model tapped) counts up the proposal instead of making another, a new
spot of its button is added to its ``taps`` (``moves: true``) and how far the panel moved to ``shift``. A page
something covers that the model names no point for gets the back key (engine.navigation.recovery.uncover): a lesson
too, proposed with the back key as its dismissal when the next look shows the page clean.
``python -m engine proposals`` and the studio list, show, accept or reject them (engine.learning.proposals). At most
MAX_WAITING proposals wait in the folder; past that the least seen go (a screen that differs at every showing is
proposed every time and would otherwise fill the disk).

Trust: nothing is accepted by itself unless the policy file says ``learning: {mode: auto, min_sightings: N}``
(engine.config.policies.Learning); then a proposal verified N times is accepted into the user's graph folder and asset
pack, with the same checks as a user's accept, and the live engine takes it up (from then on it costs no model
call); one refused waits for `min_sightings` more sightings before it is tried again. A learned popup (``learned:`` in
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

from engine.learning.crops import (
    Box,
    button_area,
    dialog_box,
    find_again,
    same_around,
    same_screen,
    signature_area,
    still_there,
)
from engine.learning.proposals import accept, demote, learned_pack_dir, prune, read_proposal

log = logging.getLogger(__name__)

KEPT_FRAMES = 24
"""Frames of known pages (and, apart, of known popups) kept for measuring crops: memory stays bounded (~66 MB at
1280x720 for both) however long the session."""
SAME_SPOT = 8
"""A tap this close (pixels, either axis) to a recorded one is the same spot of the button."""


@dataclass
class Lesson:
    frame: np.ndarray
    point: tuple[int, int]
    label: str
    key: str | None = None
    """A key that closed it (the back key) instead of a tap at `point` (then the middle of what covered the page)."""
    found_by: str = "model"
    """Who found what closed it: the vision model, the dismissal search (engine.navigation.search), an agent."""


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
        """The last clean frame of each known page (see the module docstring): what a crop must not match."""
        self.candidate: tuple[str, np.ndarray] | None = None
        """The last frame of a known page without popups, clean once the next look shows another page."""
        self._saved: dict[str, int] = {}
        """Which clean frame of each page is in ``known/`` already (by id)."""
        self.popup_frames: dict[str, np.ndarray] = {}
        """The last frame showing each known popup: what a crop must not match either."""
        self.pending: Lesson | None = None
        self.last_lesson: Lesson | None = None
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

    def tapped(self, nav: Any, ctx: Any, point: tuple[int, int], label: str, *, act: bool = False,
               found_by: str = "model") -> bool:
        """A tap on a screen the graph does not explain (the model's, or an agent's): a lesson for the next look
        to judge; with `act`, the tap is performed here too. False for a point off the screen or no frame."""
        from engine.config.schema import TapAction

        frame, obs = nav.last_frame, nav.last_observation
        width, height = nav.graph.resolution
        if frame is None or not (0 <= point[0] < width and 0 <= point[1] < height):
            return False
        if act:
            nav.act(ctx, TapAction(type="tap", point=(int(point[0]), int(point[1]))), obs)
        self.pending = self.last_lesson = Lesson(frame, (int(point[0]), int(point[1])), label, found_by=found_by)
        ctx.record("lesson_tap", point=[int(v) for v in point], label=label, performed=act, found_by=found_by)
        return True

    def keyed(self, nav: Any, ctx: Any, key: str, label: str, *, found_by: str = "back key") -> bool:
        """Press `key` on a page something covers (the model named no point): a lesson for the next look to judge,
        whose point is the middle of what covers the page. False (nothing pressed) without a frame."""
        from engine.config.schema import KeyAction

        frame, obs = nav.last_frame, nav.last_observation
        if frame is None or obs is None:
            return False
        box = getattr(obs.cover, "box", None) or (0, 0, frame.shape[1], frame.shape[0])
        nav.act(ctx, KeyAction(type="key", key=key), obs)
        point = ((box[0] + box[2]) // 2, (box[1] + box[3]) // 2)
        self.pending = self.last_lesson = Lesson(frame, point, label, key, found_by)
        ctx.record("lesson_key", key=key, label=label, found_by=found_by)
        return True

    def proposal_of(self, frame: np.ndarray | None) -> dict[str, Any] | None:
        """The waiting proposal whose screen `frame` (or else the last lesson's frame) shows, if one does."""
        frames = [f for f in (frame, self.last_lesson.frame if self.last_lesson else None) if f is not None]
        for path in sorted(self.folder.glob("*.yaml")) if frames else ():
            try:
                proposal = read_proposal(path)
            except (ValueError, OSError, yaml.YAMLError):
                continue
            crop = cv2.imread(str(path.with_suffix(".crop.png")), cv2.IMREAD_COLOR)
            if any(same_screen(crop, f, proposal["area"]) for f in frames):
                return proposal
        return None

    def dismissing(self, popup: Any, obs: Any, frame: np.ndarray | None) -> None:
        """The navigator dismisses `popup`: a learned one is watched (the next look says whether it was there)."""
        if getattr(popup, "learned", None) and frame is not None:
            self.watch = Watch(popup.name, obs.page, frame)

    def looked(self, ctx: Any, obs: Any, frame: np.ndarray,
               went: Callable[[str, str | None], bool] = lambda source, here: True) -> bool:
        """Every look: a known page's frame without popups, left by a link that went where it leads (`went(source,
        here)`: the navigator's engine.navigation.through; a crash or a restart leads elsewhere from under a dialog
        too), is kept as a frame a crop must not match; the first look after
        a lesson's tap judges it (a known page without popups, and what was tapped gone from around the point: it
        worked and is proposed; anything else: dropped); the first look after a learned popup's dismissal judges
        that. True when the graph changed (a popup accepted or demoted): the frame must be observed again."""
        covered = getattr(obs, "cover", None) is not None
        if obs.page is not None and not obs.popups and not covered:
            if self.candidate is not None and self.candidate[0] != obs.page and went(self.candidate[0], obs.page):
                _keep(self.known, *self.candidate)  # its link went through: nothing unknown covered it
            self.candidate = (obs.page, frame)
        else:
            self.candidate = None
        for popup in obs.popups[:1]:  # a known popup's frame: a crop must not match it either
            _keep(self.popup_frames, popup, frame)
        changed = self.watch is not None and self._judge_learned(ctx, obs)
        lesson, self.pending = self.pending, None
        if lesson is None or obs.page is None or obs.popups or covered or \
                not _gone(lesson, frame, self.known.get(obs.page)):
            return changed
        try:
            path, proposal = self.record(lesson, obs.page, frame)
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

        sightings, auto = int(proposal.get("sightings", 1)), int(self.auto or 0)
        if sightings < auto or sightings < int(proposal.get("refused_at", 0)) + auto:
            return False  # (one refused is tried again after as many sightings more: accepting is not free)
        if self._was_demoted(path, proposal):
            log.warning("learning: auto does not accept %s: the same screen was demoted before; it waits for "
                        "review (python -m engine proposals)", proposal["name"])
            return False
        if self.graph_dir is None or self.pack_dir is None:
            log.warning("learning: auto cannot accept %s: the session has no graph folder and asset pack of yours "
                        "to write (pass --graph and --assets)", proposal["name"])
            return False
        self._save_known()
        try:
            done = accept(self.folder, proposal["name"], self.graph_dir, self.pack_dir, pages_pack=self.pages_pack,
                          by="auto")
        except ConfigError as exc:  # refused (it fires on a known page) or the graph would break: it waits
            log.warning("learning: auto did not accept %s: %s", proposal["name"], exc)
            ctx.record("proposal_refused", name=proposal["name"], reason=str(exc)[:500])
            if path.is_file():
                path.write_text(yaml.safe_dump({**proposal, "refused_at": sightings}, sort_keys=False))
            return False
        ctx.record("proposal_accepted", **done)
        return self._adopt(ctx)

    def _was_demoted(self, path: Path, proposal: dict[str, Any]) -> bool:
        """Whether a learned popup of the same screen (its crop found where it was cut) was demoted before."""
        crop = cv2.imread(str(path.with_suffix(".crop.png")), cv2.IMREAD_COLOR)
        for misfire in sorted((self.folder / "demoted").glob("*.misfire.png")) if crop is not None else ():
            if same_screen(crop, cv2.imread(str(misfire), cv2.IMREAD_COLOR), proposal["area"]):
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

    def record(self, lesson: Lesson, page: str, after: np.ndarray | None = None) -> tuple[Path, dict[str, Any]]:
        """Write the lesson as a proposal, or count up the proposal of the same screen: its path and contents.
        `after`: the look that judged the lesson (the page as the tap left it)."""

        self.folder.mkdir(parents=True, exist_ok=True)
        self._save_known()
        box = dialog_box(lesson.frame, self.known.get(page, after))
        for path in sorted(self.folder.glob("*.yaml")):
            proposal = read_proposal(path)
            found = find_again(cv2.imread(str(path.with_suffix(".crop.png")), cv2.IMREAD_COLOR), lesson.frame,
                               proposal["area"])
            if found is not None and bool(proposal.get("key")) == (lesson.key is not None):
                return path, self._sighting(path, proposal, lesson, found, box)
        # A clean frame showing this very screen was the popup over a page still recognised: not known.
        known = {name: f for name, f in self.known.items() if not same_around(lesson.point, lesson.frame, f)}
        others = [f for f in self.popup_frames.values() if not same_around(lesson.point, lesson.frame, f)]
        area, collision = signature_area(lesson.frame, lesson.point, [*known.values(), *others], box)
        button = button_area(lesson.point, box) if lesson.key is None else None
        name = _unique(self.folder, slug(lesson.label))
        path = self.folder / f"{name}.yaml"
        cv2.imwrite(str(path.with_suffix(".frame.png")), lesson.frame)
        cv2.imwrite(str(path.with_suffix(".crop.png")), _cut(lesson.frame, area))
        proposal = {"name": name, "label": lesson.label, "tap": list(lesson.point), "area": list(area),
                    "signature": {"type": "template", "area": list(area), "crop": path.with_suffix(".crop.png").name},
                    "dismiss": [{"type": "tap", "point": list(lesson.point)}],
                    "shown_on": page, "found_by": lesson.found_by, "sightings": 1, "collision": round(collision, 3),
                    "known_pages": sorted(known), "first_seen": _now(), "last_seen": _now()}
        if button is not None:  # the button is found inside the dialog when it is dismissed: it may move
            proposal.update(box=list(box), button=list(button), taps=[list(lesson.point)], moves=False,
                            dismiss=[{"type": "tap", "button": list(button), "search": list(box)}])
        if lesson.key is not None:  # closed by a key: nothing to find, wherever it sits
            proposal.update(key=lesson.key, dismiss=[{"type": "key", "key": lesson.key}])
        if box is not None:
            proposal.update(box=list(box), shift=0)
        path.write_text(yaml.safe_dump(proposal, sort_keys=False))
        prune(self.folder, spare=name)  # (bounded: a screen that differs every time is proposed every time)
        log.info("proposed %s (%r): tap %s led to %s; crop %s, collision %.2f", name, lesson.label,
                 list(lesson.point), page, list(area), collision)
        return path, proposal

    def _sighting(self, path: Path, proposal: dict[str, Any], lesson: Lesson, found: tuple[int, int],
                  box: Box | None) -> dict[str, Any]:
        """The same screen seen again (its signature `found` that far from where it was cut): count it up, keep
        how far the dialog moved (``shift``), the box it covered and a new spot of its button (it moves)."""
        proposal["sightings"] = int(proposal.get("sightings", 1)) + 1
        proposal["shift"] = max(int(proposal.get("shift", 0)), abs(found[0]), abs(found[1]))
        if box is not None and _ints4(proposal.get("box")):
            old = proposal["box"]
            proposal["box"] = [min(old[0], box[0]), min(old[1], box[1]), max(old[2], box[2]), max(old[3], box[3])]
        proposal["last_seen"] = _now()
        taps, (x, y) = proposal.get("taps"), lesson.point
        if isinstance(taps, list) and not any(isinstance(t, list) and len(t) == 2 and
                                              max(abs(t[0] - x), abs(t[1] - y)) <= SAME_SPOT for t in taps):
            proposal["taps"] = [*taps, [x, y]][-32:]  # (bounded: a few spots are enough to tell that it moves)
            proposal["moves"] = True
        path.write_text(yaml.safe_dump(proposal, sort_keys=False))
        log.info("proposal %s seen again (%d sightings)", proposal["name"], proposal["sightings"])
        return proposal

    def _save_known(self) -> None:
        """Write the clean frames that changed since the last time into ``known/`` (accepting checks them)."""
        known_dir = self.folder / "known"
        for name, frame in self.known.items():
            if self._saved.get(name) != id(frame):
                known_dir.mkdir(parents=True, exist_ok=True)
                cv2.imwrite(str(known_dir / f"{name}.png"), frame, [cv2.IMWRITE_PNG_COMPRESSION, 1])  # (fast)
                self._saved[name] = id(frame)


def _ints4(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 4 and all(isinstance(v, int) for v in value)


def _cut(frame: np.ndarray, area: Box) -> np.ndarray:
    return frame[area[1]:area[3], area[0]:area[2]]


def _keep(frames: dict[str, np.ndarray], name: str, frame: np.ndarray) -> None:
    """Keep `frame` as the newest of `name`, and at most KEPT_FRAMES frames (the least recently seen go)."""
    frames.pop(name, None)
    frames[name] = frame
    while len(frames) > KEPT_FRAMES:
        frames.pop(next(iter(frames)))


def _gone(lesson: Lesson, frame: np.ndarray, clean: np.ndarray | None) -> bool:
    """Whether what was tapped is gone from around the tapped point (the tap did something there), and, with a
    `clean` frame of the page, the whole dialog with it (it did not stay, nor come back at once)."""
    if lesson.frame.shape != frame.shape or same_around(lesson.point, lesson.frame, frame):
        return False
    box = dialog_box(lesson.frame, clean)
    return box is None or not still_there(box, frame, clean)


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
        session.navigator.actuator.graph = graph  # (a learned tap may name a learned button)
        if session.tools is not None:
            session.tools.graph = graph
        log.info("the session took up the changed graph: %d popups", len(graph.popups))

    if policy.mode == "auto" and folder is None:
        log.warning("learning: auto needs a graph folder of yours (--graph DIR, a copy of the shipped one): "
                    "proposals are written, none is accepted by itself")
    return Learner(
        Path(session.bundle_dir).parent / "proposals", auto=policy.min_sightings if policy.mode == "auto" else None,
        graph_dir=folder, pack_dir=pack_dir, pages_pack=base, adopt=adopt if folder is not None else None)
