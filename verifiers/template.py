"""Template verifier: cv2.matchTemplate (TM_CCOEFF_NORMED) of a template inside its area widened by an offset.

Matching runs on grayscale, which on game UI separates as well as colour at a third of the cost; a signature with
``color: true`` adds a colour confirmation (the matched region's mean colour against the template's), which is
what tells a red button from the same button in grey. Multi-frame templates (ALAS .gif assets) hit when any frame
does. Everything that does not depend on the frame is computed once in ``compile_template``; ``verify`` only
slices the gray of its search area (converted once per frame, verifiers.common.Pyramid) and matches.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import cv2
import numpy as np

from engine.config.assets import AssetPack
from engine.config.schema import Graph, Page, TemplateSignature
from engine.core.errors import MissingAsset
from engine.core.results import Evidence
from verifiers.common import clip, pyramid, signature_name
from verifiers.common import field as sig_field

FLAT_STD = 8.0
"""A template whose gray values vary less than this has no texture to correlate: CCOEFF of it is noise, so it is
compared by colour difference and is colour-grade evidence (ALAS checks such buttons by colour, too)."""
FLAT_MARKS = 0.005
"""...unless marks stand out of it: a patch is flat only when fewer than this share of its pixels differ from its
median by more than 3 * FLAT_STD. A wide title bar whose thin glyphs cover 2 % of it varies by less than FLAT_STD
(generated seed 251239: two titles' std 7.9 and 8.0), yet its glyphs are what tells it from another title with the
same colours; compared by mean colour the two matched each other (1.0 and 0.9998)."""
MIN_STRONG_PIXELS = 256
"""Templates with fewer pixels than this (ALAS's 9x16 IDLE marks) are weak evidence, like a colour check."""
COARSE_LEVELS = ((4, 600, 48), (2, 0, 12))
"""(scale, least full-scale positions, least template side): a coarse stage pays only when the search has many more
positions than the full-scale refinement around the coarse best tries ((2 * (REFINE + scale) + 1) ** 2), and only
for a template that keeps its shape shrunk: one under 12 px a side is matched at full scale only, one under 48 px
is never searched at quarter scale (ALAS's 27 px story-skip icon of thin lines is 6 px there and correlates better
with any texture than with itself)."""
COARSE_SLACK = 0.35
"""How far below the threshold a coarse score may be and still be refined at full scale."""
REFINE = 3
"""Full-scale pixels searched around the coarse best on each side."""


@dataclass(eq=False)
class TemplateCheck:
    """A template signature compiled once: gray crops (full and half scale), colour means, search rectangle,
    preallocated buffers.

    Matching is coarse to fine: the half-scale search over the whole widened area costs about a quarter of the
    full-scale one; a coarse best far below the threshold is a miss, otherwise the full-scale template is matched
    in a small window around the coarse best (the reported score and box are always full scale). A textureless
    template (``flat``) is compared by difference instead (CCOEFF of a flat patch is noise) and counts as colour
    evidence, not template evidence (``weak``).
    """

    name: str
    area: tuple[int, int, int, int]
    search: tuple[int, int, int, int]
    templates: tuple[np.ndarray, ...]
    means: tuple[tuple[float, float, float], ...]
    flat: tuple[bool, ...]
    threshold: float
    color: bool = False
    color_tolerance: int = 20
    coarse: bool = True
    """Search a shrunk copy first (its grid aligned on the declared area's corner: a template near its place);
    False for a button that may sit anywhere in a wide area (engine.observe.taps)."""
    channel = "template"
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        x1, y1, x2, y2 = self.search
        h, w = y2 - y1, x2 - x1
        self.usable = h > 0 and w > 0 and all(t.shape[0] <= h and t.shape[1] <= w for t in self.templates)
        # Flat templates, and tiny ones searched over many positions, match backgrounds by chance: weak evidence.
        self.weak = all(self.flat) or min(t.size for t in self.templates) < MIN_STRONG_PIXELS
        self.strong = not self.weak
        # Flat templates are colour evidence (cost 0); textured ones are the real thing.
        self.cost = 0 if all(self.flat) else 1
        # Coarse-to-fine: with room to move, the template is first searched in a shrunk copy of the frame (half
        # scale: 1/16 of the full-scale work; quarter scale, for templates of 48 px and more: 1/256), and refined
        # at full scale only where the coarse score comes close to the threshold. Near-fixed or small buttons are
        # matched at full scale; smaller templates lose too much texture at a quarter.
        small = min(min(t.shape) for t in self.templates)
        positions = (w - max(t.shape[1] for t in self.templates) + 1) * (h - max(t.shape[0] for t in self.templates) + 1)
        self.scale = 1
        if self.usable and not any(self.flat) and self.coarse:
            for scale, least, side in COARSE_LEVELS:
                if small >= side and positions >= least:
                    self.scale = scale
                    break
        self._coarse: tuple = ()
        if self.scale > 1:
            k = self.scale
            self._coarse = tuple(
                cv2.resize(t, (t.shape[1] // k, t.shape[0] // k), interpolation=cv2.INTER_AREA)
                for t in self.templates
            )
            # The coarse grid is aligned on the declared area's corner (see Pyramid.level).
            self._phase = (self.area[0] % k, self.area[1] % k)
            px, py = self._phase
            cx1, cy1 = -(-(x1 - px) // k), -(-(y1 - py) // k)
            cx2, cy2 = (x2 - px) // k, (y2 - py) // k
            self._coarse_window = (cx1, cy1, cx2, cy2)
            self.usable = all(c.shape[0] <= cy2 - cy1 and c.shape[1] <= cx2 - cx1 for c in self._coarse)

    def _flat_score(self, frame: np.ndarray, i: int) -> tuple[float, tuple[int, int]]:
        # A flat patch has no position to find: compare mean colours at the declared area, as a colour check does.
        x1, y1 = self.area[:2]
        th, tw = self.templates[i].shape
        b, g, r, _ = cv2.mean(frame[y1:y1 + th, x1:x1 + tw])
        mb, mg, mr = self.means[i]
        diff = max(abs(b - mb), abs(g - mg), abs(r - mr))
        score = 1.0 - diff / 255.0 if diff <= self.color_tolerance else min(1.0 - diff / 255.0, self.threshold - 0.01)
        return score, (x1 - self.search[0], y1 - self.search[1])

    def _fine(self, pyr, i: int) -> tuple[float, tuple[int, int]]:
        """Best score and its top-left, relative to the search window."""
        template = self.templates[i]
        x1, y1, x2, y2 = self.search
        if self.scale == 1:
            result = cv2.matchTemplate(pyr.area(self.search), template, cv2.TM_CCOEFF_NORMED)
            _, score, _, loc = cv2.minMaxLoc(result)
            return score, loc
        k = self.scale
        cx1, cy1, cx2, cy2 = self._coarse_window
        px, py = self._phase
        result = cv2.matchTemplate(pyr.area_level(self.search, k, self._phase, self._coarse_window),
                                   self._coarse[i], cv2.TM_CCOEFF_NORMED)
        _, coarse, _, (cx, cy) = cv2.minMaxLoc(result)
        # Back to full-scale coordinates relative to the search window.
        gx, gy = (cx1 + cx) * k + px - x1, (cy1 + cy) * k + py - y1
        if coarse < self.threshold - COARSE_SLACK:
            return coarse, (max(0, gx), max(0, gy))
        th, tw = template.shape
        pad = REFINE + k
        wx0, wy0 = max(0, gx - pad), max(0, gy - pad)
        wx1, wy1 = min(x2 - x1, gx + pad + tw + 1), min(y2 - y1, gy + pad + th + 1)
        window = pyr.area(self.search)[wy0:wy1, wx0:wx1]
        result = cv2.matchTemplate(window, template, cv2.TM_CCOEFF_NORMED)
        _, score, _, (fx, fy) = cv2.minMaxLoc(result)
        return score, (wx0 + fx, wy0 + fy)

    def verify(self, frame: np.ndarray) -> Evidence:
        start = time.perf_counter()
        if not self.usable:
            return Evidence("template", self.name, False, 0.0, box=self.area)
        x1, y1, x2, y2 = self.search
        best, best_loc, best_i = -1.0, (0, 0), 0
        with self._lock:
            for i in range(len(self.templates)):
                if self.flat[i]:
                    score, loc = self._flat_score(frame, i)
                else:
                    score, loc = self._fine(pyramid(frame), i)
                if score > best:
                    best, best_loc, best_i = float(score), loc, i
        th, tw = self.templates[best_i].shape
        bx, by = x1 + best_loc[0], y1 + best_loc[1]
        box = (bx, by, bx + tw, by + th)
        hit = best >= self.threshold
        if hit and self.color:
            b, g, r, _ = cv2.mean(frame[by:by + th, bx:bx + tw])
            mb, mg, mr = self.means[best_i]
            hit = max(abs(b - mb), abs(g - mg), abs(r - mr)) <= self.color_tolerance
        return Evidence(
            "color" if all(self.flat) else "template",
            self.name,
            hit,
            best,
            box=box,
            offset=(bx - self.area[0], by - self.area[1]),
            latency_ms=(time.perf_counter() - start) * 1000.0,
        )


def is_flat(gray: np.ndarray) -> bool:
    """Whether a gray template has nothing to correlate (FLAT_STD, FLAT_MARKS)."""
    if float(gray.std()) >= FLAT_STD:
        return False
    marks = np.count_nonzero(np.abs(gray.astype(np.int16) - int(np.median(gray))) > 3 * FLAT_STD)
    return marks < FLAT_MARKS * gray.size


def compile_template(
    signature: TemplateSignature, graph: Graph, assets: AssetPack, page: Page | None = None
) -> TemplateCheck:
    """Compile a template signature against an asset pack.

    Raises:
        MissingAsset: the pack has no template of that name.
    """
    name = signature_name(signature)
    asset = sig_field(signature, graph, "asset")
    if asset is None:
        raise MissingAsset(f"template signature {name} names no asset", signature=name)
    template = assets.get(asset)
    if template is None:
        raise MissingAsset(f"asset pack has no template {asset!r} (signature {name})", signature=name, asset=asset)
    area = sig_field(signature, graph, "area") or template.area
    if area is None:
        raise MissingAsset(f"template {asset!r} has no area (signature {name})", signature=name)
    s = graph.settings(page)
    dx, dy = signature.offset if signature.offset is not None else s.template_offset
    threshold = signature.threshold if signature.threshold is not None else s.template_threshold
    x1, y1, x2, y2 = area
    # The crop may be a little larger than the declared area (a pack's own bbox); widen so it always fits.
    th = max(f.shape[0] for f in template.frames)
    tw = max(f.shape[1] for f in template.frames)
    search = clip((x1 - dx, y1 - dy, max(x2, x1 + tw) + dx, max(y2, y1 + th) + dy), graph.resolution)
    grays = tuple(np.ascontiguousarray(cv2.cvtColor(f, cv2.COLOR_BGR2GRAY)) for f in template.frames)
    means = tuple(tuple(float(c) for c in cv2.mean(f)[:3]) for f in template.frames)
    flat = tuple(is_flat(g) for g in grays)
    return TemplateCheck(
        name=name,
        area=tuple(area),
        search=search,
        templates=grays,
        means=means,
        flat=flat,
        threshold=float(threshold),
        color=signature.color,
        color_tolerance=int(s.color_tolerance),
    )


def verify(frame: np.ndarray, signature: TemplateSignature | TemplateCheck, graph: Graph | None = None,
           assets: AssetPack | None = None, page: Page | None = None) -> Evidence:
    """One-off check; hot paths compile once with ``compile_template`` and call ``TemplateCheck.verify``."""
    check = signature if isinstance(signature, TemplateCheck) else compile_template(signature, graph, assets, page)
    return check.verify(frame)


def find_matches(
    frame: np.ndarray, check: TemplateCheck, area: tuple[int, int, int, int] | None = None, limit: int = 50
) -> list[tuple[tuple[int, int, int, int], float]]:
    """Every place `check`'s template shows inside `area` (default the whole frame): (box, score), best first.

    Full-scale TM_CCOEFF_NORMED over the area, every position at or above the check's threshold, then non-maximum
    suppression (a kept match hides every other whose top-left lies within half the template of it), at most
    `limit` boxes. With ``color`` the kept matches must also pass the colour confirmation. Flat templates have
    no position to find: they yield nothing.
    """
    h, w = frame.shape[:2]
    x1, y1, x2, y2 = clip(tuple(area), (w, h)) if area is not None else (0, 0, w, h)
    gray = cv2.cvtColor(np.ascontiguousarray(frame[y1:y2, x1:x2]), cv2.COLOR_BGR2GRAY)
    found: list[tuple[float, int, int, int]] = []
    for i, template in enumerate(check.templates):
        th, tw = template.shape
        if check.flat[i] or th > gray.shape[0] or tw > gray.shape[1]:
            continue
        result = cv2.matchTemplate(gray, template, cv2.TM_CCOEFF_NORMED)
        ys, xs = np.nonzero(result >= check.threshold)
        found.extend((float(result[y, x]), int(x), int(y), i) for y, x in zip(ys, xs))
    found.sort(key=lambda f: -f[0])
    kept: list[tuple[tuple[int, int, int, int], float]] = []
    for score, x, y, i in found:
        th, tw = check.templates[i].shape
        if any(abs(x + x1 - b[0]) < tw / 2 and abs(y + y1 - b[1]) < th / 2 for b, _ in kept):
            continue
        box = (x + x1, y + y1, x + x1 + tw, y + y1 + th)
        if check.color:
            b, g, r, _ = cv2.mean(frame[box[1]:box[3], box[0]:box[2]])
            mb, mg, mr = check.means[i]
            if max(abs(b - mb), abs(g - mg), abs(r - mr)) > check.color_tolerance:
                continue
        kept.append((box, score))
        if len(kept) >= limit:
            break
    return kept
