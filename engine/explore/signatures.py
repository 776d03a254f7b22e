"""Signatures from stable regions: the cells of a page that look the same on every member frame and, checked with
the observer's own verifiers, tell the page apart from every other page's frames.

Candidates are the sketch's grid cells that match on all members: textured ones become template crops (matched as
the written graph will match them: TM_CCOEFF_NORMED inside the area widened by the default offset, with the colour
confirmation), flat ones colour checks. They are chosen greedily, the one that rules out the most remaining other
frames first, until every other frame is ruled out; a read title becomes an OCR signature when the pixels cannot
tell the page apart alone (text is slower to check and read by a model that may err).
"""

from __future__ import annotations

import re
from typing import Iterable, Sequence

import cv2
import numpy as np

from engine.config.schema import BUILTIN_DEFAULTS
from engine.explore.draft import Area, Signature
from engine.explore.sketch import Sketch, cell_match, fine_differ, sketch
from verifiers.template import FLAT_STD, TemplateCheck, is_flat

TEMPLATES = 2
"""Templates kept per page: two that each rule out every other page, so one occluded region does not lose it."""
MAX_TEMPLATES = 4
"""Templates at most, when the first two leave some other page's frame unexplained (a sprite every page shows, only
tinted: seed 398351's hub and area shared the templates the draft chose first, and the area's gotos verified on
the hub); a template past the second is kept only when it explains a frame still left."""
MAX_CANDIDATES = 24
COLOUR_TOLERANCE = int(BUILTIN_DEFAULTS.color_tolerance or 20)
INSET = 4
"""Pixels trimmed off each side of a cell before cropping (a cell's edge may cut through a neighbour's border)."""


def template_check(frame: np.ndarray, area: Area, name: str = "draft") -> TemplateCheck:
    """The check the written graph compiles for a template cut from `frame` at `area` (same defaults)."""
    x1, y1, x2, y2 = area
    crop = np.ascontiguousarray(frame[y1:y2, x1:x2])
    h, w = frame.shape[:2]
    dx, dy = BUILTIN_DEFAULTS.template_offset or (30, 30)
    gray = np.ascontiguousarray(cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY))
    search = (max(0, x1 - dx), max(0, y1 - dy), min(w, x2 + dx), min(h, y2 + dy))
    return TemplateCheck(name=name, area=area, search=search, templates=(gray,),
                         means=(tuple(float(c) for c in cv2.mean(crop)[:3]),), flat=(is_flat(gray),),
                         threshold=float(BUILTIN_DEFAULTS.template_threshold or 0.85), color=True,
                         color_tolerance=COLOUR_TOLERANCE)


def colour_hit(frame: np.ndarray, area: Area, rgb: tuple[int, int, int]) -> bool:
    x1, y1, x2, y2 = area
    b, g, r, _ = cv2.mean(frame[y1:y2, x1:x2])
    return max(abs(r - rgb[0]), abs(g - rgb[1]), abs(b - rgb[2])) <= COLOUR_TOLERANCE * 0.75


def _inset(area: Area) -> Area:
    x1, y1, x2, y2 = area
    return x1 + INSET, y1 + INSET, x2 - INSET, y2 - INSET


def stable_cells(sketches: Sequence[Sketch]) -> np.ndarray:
    """(rows, cols) booleans: cells that match across every member (against the first)."""
    first = sketches[0]
    stable = np.ones(first.colour.shape[:2], bool)
    for other in sketches[1:]:
        stable &= cell_match(other, first)
    return stable


def _candidates(members: Sequence[np.ndarray], others_sketches: Sequence[Sketch],
                moving: np.ndarray | None = None) -> list[tuple[str, Area, float]]:
    """(kind, area, preference) for stable cells outside `moving` (cells seen changing by themselves on the page),
    the most distinctive (unlike most other frames) and textured first."""
    sketches = [sketch(m) for m in members]
    first = sketches[0]
    stable = stable_cells(sketches)
    if moving is not None and moving.shape == stable.shape and (stable & ~moving).any():
        stable &= ~moving
    unlike = np.zeros(stable.shape, np.float32)
    for other in others_sketches:
        if other.colour.shape == first.colour.shape:
            unlike += ~cell_match(other, first)
    share = unlike / max(1, len(others_sketches))
    out = []
    for row, col in zip(*np.nonzero(stable)):
        area = _inset(first.cell_area(int(col), int(row)))
        flat = float(first.flat[row, col])
        kind = "color" if flat < FLAT_STD * 0.5 else "template" if flat >= FLAT_STD * 1.5 else ""
        if kind:
            out.append((kind, area, float(share[row, col]) + min(flat, 60.0) / 600.0))
    out.sort(key=lambda c: -c[2])
    return out[:MAX_CANDIDATES]


def _template_misses(first: np.ndarray, area: Area, members: Sequence[np.ndarray], others: Sequence[np.ndarray],
                     among: Iterable[int]) -> set[int] | None:
    """The indexes in `among` of `others` that a template cut from `first` at `area` misses; None when the template
    is flat or misses one of the page's own `members` (no signature)."""
    check = template_check(first, area)
    if check.flat[0] or not all(check.verify(m).hit for m in members):
        return None
    return {i for i in among if not check.verify(others[i]).hit}


def stable_signatures(members: Sequence[np.ndarray], others: Sequence[np.ndarray], *, prefix: str = "page",
                      title: tuple[Area, str] | None = None, sketches: dict[int, Sketch] | None = None,
                      moving: np.ndarray | None = None) -> list[Signature]:
    """Signatures that hit on every member frame and, together, miss on every frame in `others`.

    Template signatures are named ``draft/<prefix>_<n>`` and are cut from ``members[0]`` (engine.explore.write
    cuts them from the page's first member). `title`: (area, text) read on the members, used as an OCR signature
    when the pixels leave some other frame unexplained (or when there are no pixel signatures at all).
    `sketches`: a cache of frame sketches by ``id(frame)``, for a caller that passes the same frames many times.
    `moving`: the page's cells seen changing by themselves (a timer, art that sways), never signed.
    """
    if not members:
        return []
    cache = sketches if sketches is not None else {}
    others = [o for o in others if o.shape == members[0].shape]
    others_sketches = [cache[id(o)] if id(o) in cache else cache.setdefault(id(o), sketch(o)) for o in others]
    first = members[0]
    chosen: list[Signature] = []
    left = set(range(len(others)))
    templates = 0
    for kind, area, _ in _candidates(members, others_sketches, moving):
        if kind == "template":
            if templates >= MAX_TEMPLATES or (templates >= TEMPLATES and not left):
                continue
            misses = _template_misses(first, area, members, others, range(len(others)))
            if misses is None:
                continue
            if templates >= TEMPLATES and not left & misses:
                continue
            if len(misses) < len(others) and templates == 0 and left - misses:
                # Not alone enough: keep it only if it adds something, and still look for a decisive one.
                if not (left & misses):
                    continue
            sig = Signature(type="template", area=area, asset=f"draft/{prefix}_{len(chosen)}")
            templates += 1
        else:
            if chosen and not left:
                continue
            x1, y1, x2, y2 = area
            b, g, r, _ = cv2.mean(first[y1:y2, x1:x2])
            rgb = (int(round(r)), int(round(g)), int(round(b)))
            if not all(colour_hit(m, area, rgb) for m in members):
                continue
            misses = {i for i in left if not colour_hit(others[i], area, rgb)}
            if not misses and chosen:
                continue
            sig = Signature(type="color", area=area, rgb=rgb)
        chosen.append(sig)
        left -= misses
        if templates >= TEMPLATES and not left:
            break
    if left:
        # Pages alike in every cell but for a title finer than a cell (generated seed 9 under chaos: twelve pages on
        # one backdrop, their glyph titles unread, signed alike by two backdrop colours and the back button, and 5
        # of 50 gotos verified on the wrong one): the cells whose fine drawing differs from the frames still left,
        # the most often first, each a template kept when it hits every member and misses one of them. A cell that
        # really moves fails a goto at worst, never verifies a wrong page.
        first_sketch = cache[id(first)] if id(first) in cache else cache.setdefault(id(first), sketch(first))
        stable = stable_cells([first_sketch] + [sketch(m) for m in members[1:]])  # (members may be short-lived)
        finer = sum(fine_differ(others_sketches[i], first_sketch, stable).astype(int) for i in sorted(left))
        for row, col in sorted(zip(*np.nonzero(finer)), key=lambda rc: -finer[rc]):
            area = _inset(first_sketch.cell_area(int(col), int(row)))
            if not left or templates >= MAX_TEMPLATES:
                break
            if any(sig.area == area for sig in chosen):
                continue
            misses = _template_misses(first, area, members, others, left)
            if misses:
                chosen.append(Signature(type="template", area=area, asset=f"draft/{prefix}_{len(chosen)}"))
                templates += 1
                left -= misses
    if title is not None and (left or templates == 0):
        area, text = title
        chosen.append(Signature(type="ocr", area=area, pattern=ocr_pattern(text)))
    return chosen


def ocr_pattern(text: str) -> str:
    """A pattern for a read title: its words in order, anything between them (OCR joins or splits spaces)."""
    words = [re.escape(w) for w in text.casefold().split() if w]
    return ".*".join(words) if words else re.escape(text)


def unexplained(signatures: Sequence[Signature], members: Sequence[np.ndarray],
                others: Sequence[np.ndarray]) -> list[int]:
    """Indexes of `others` that every pixel signature hits (they would be taken for this page without OCR)."""
    checks = []
    first = members[0]
    for sig in signatures:
        if sig.type == "template":
            check = template_check(first, sig.area)
            checks.append(lambda f, c=check: c.verify(f).hit)
        elif sig.type == "color" and sig.rgb is not None:
            checks.append(lambda f, a=sig.area, c=sig.rgb: colour_hit(f, a, c))
    if not checks:
        return list(range(len(others)))
    return [i for i, o in enumerate(others) if o.shape == first.shape and all(c(o) for c in checks)]
