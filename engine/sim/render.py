"""Deterministic rendering of a simulated game's screens from its graph.

Every pixel is a function of names only (page name, button name, asset name), never of the order of calls, so the
same page renders to the same bytes every time and a button shared by many pages (a back arrow, a home button)
looks identical on each of them: recognising a simulated frame is as honest as recognising a real one.

With a real asset pack (ALAS layout) the real template pixels are pasted, at their own size, at their areas;
without one, ``SyntheticAssets`` invents a textured, labelled template per asset name. Overlapping signatures are
laid out so that each still holds (engine.sim.compose); OCR text is drawn to be read (engine.sim.text).
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Iterable

import cv2
import numpy as np

from engine.config.assets import AssetPack, Template
from engine.config.schema import (
    AnyOfSignature,
    ColorSignature,
    Graph,
    OcrSignature,
    Page,
    Popup,
    Signature,
    TapAction,
    TemplateSignature,
)
from engine.sim.compose import Conflict, Fill, balance, container, paint_fills
from engine.sim.patterns import identity_pattern, put_text_fit, seed_of, texture
from engine.sim.text import contrasting_ink, draw_label

log = logging.getLogger(__name__)

Area = tuple[int, int, int, int]
POINT_BOX = 12
"""Half-size of the box drawn (and accepted by the game) around a point tap."""

BACKGROUNDS_KEPT = 64
"""Page backgrounds kept per process (at 1280x720, 2.7 MB each)."""
SYNTHETIC_KEPT = 1024
"""Synthetic templates kept per process (button-sized: tens of KB each)."""
PANELS_KEPT = 32
"""Popup window textures kept per process."""
LOADING_NAME = "__loading__"
UNKNOWN_NAME = "__unknown__"


def clip_area(area: Area, resolution: tuple[int, int]) -> Area:
    w, h = resolution
    return (max(0, min(area[0], w)), max(0, min(area[1], h)), max(0, min(area[2], w)), max(0, min(area[3], h)))


def strip_regex(pattern: str) -> str:
    """A readable sample of what `pattern` matches: regex syntax removed, the first alternative kept."""
    text = pattern.split("|")[0]
    text = re.sub(r"\\[dDsSwWbB]", "", text)
    text = re.sub(r"\[[^\]]*\]|\{[^}]*\}|\(\?[^)]*\)", "", text)
    text = re.sub(r"\\(.)", r"\1", text)
    text = re.sub(r"[\^$.*+?()|]", "", text)
    return " ".join(text.split()) or pattern


def paste(frame: np.ndarray, crop: np.ndarray, area: Area) -> Area | None:
    """Paste `crop` at its own size with its top-left corner at `area`'s (clipped at the frame's edge).

    Never resized: a template declared at an area of another size is drawn as it is, as a real game shows it
    (stretching it made the simulator agree with a wrong area). Returns the box covered, or None.
    """
    x1, y1 = area[0], area[1]
    h, w = crop.shape[:2]
    fh, fw = frame.shape[:2]
    cx1, cy1, cx2, cy2 = max(0, x1), max(0, y1), min(fw, x1 + w), min(fh, y1 + h)
    if cx2 <= cx1 or cy2 <= cy1:
        return None
    frame[cy1:cy2, cx1:cx2] = crop[cy1 - y1 : cy2 - y1, cx1 - x1 : cx2 - x1]
    return (cx1, cy1, cx2, cy2)


def first_alternative(sig: Signature) -> Signature:
    """What the simulator draws for a signature: an any_of shows its first alternative."""
    while isinstance(sig, AnyOfSignature):
        sig = sig.of[0]
    return sig


# --------------------------------------------------------------------------------------------------- assets


def _template_uses(graph: Graph) -> Iterable[tuple[str, Area, tuple | None, str | None]]:
    """(asset name, area, mean rgb or None, label) for every template the graph refers to."""

    def from_sig(sig: Signature):
        if isinstance(sig, TemplateSignature):
            if sig.button is not None:
                b = graph.button(sig.button)
                if b.asset:
                    yield b.asset, tuple(sig.area or b.area), b.color, b.text
            elif sig.asset and sig.area:
                yield sig.asset, tuple(sig.area), None, None
        elif isinstance(sig, AnyOfSignature):
            for alt in sig.of:
                yield from from_sig(alt)

    for button in graph.buttons:
        if button.asset and button.area:
            yield button.asset, tuple(button.area), button.color, button.text
    for sig in [*graph.loading_signatures, *(s for p in graph.pages for s in p.signatures),
                *(s for p in graph.popups for s in p.signatures)]:
        yield from from_sig(sig)


def _check_areas(graph: Graph, buttons: dict) -> dict[Area, set[str]]:
    """Each area at which some page's template signature matches -> the pages that match there."""
    out: dict[Area, set[str]] = {}
    for page in graph.pages:
        for sig in map(first_alternative, page.signatures):
            if not isinstance(sig, TemplateSignature):
                continue
            area = sig.area or (buttons[sig.button].area if sig.button in buttons else None)
            if area is not None:
                out.setdefault(tuple(area), set()).add(page.name)
    return out


@functools.lru_cache(maxsize=SYNTHETIC_KEPT)
def _synthetic_crop(name: str, area: Area, rgb: tuple | None, label: str | None) -> np.ndarray:
    """A synthetic template, read-only: a function of these alone, so the packs of a process share the last
    SYNTHETIC_KEPT drawn (tests build a pack per simulator, many of one graph)."""
    w, h = area[2] - area[0], area[3] - area[1]
    crop = identity_pattern("asset:" + name, w, h)
    put_text_fit(crop, label or name.rsplit("/", 1)[-1], (0, 0, w, h))
    if rgb is not None:
        # Shift the mean to the button's colour; repeat because clipping at 0/255 eats part of a shift.
        target = np.array(rgb[::-1], np.float32)
        for _ in range(6):
            shift = target - crop.reshape(-1, 3).mean(axis=0)
            if np.abs(shift).max() < 2:
                break
            crop = np.clip(crop.astype(np.float32) + shift, 0, 255).astype(np.uint8)
    crop.setflags(write=False)
    return crop


class SyntheticAssets:
    """The simulator's own asset pack: one deterministic synthetic template per asset name in the graph.

    A template depends on its NAME only (and the size of the first area it is declared at), so the same button
    looks the same on every page. When the button declares a colour, the template's mean colour is shifted to it,
    so colour and template signatures of one button agree, as they do on real frames.
    """

    def __init__(self, graph: Graph) -> None:
        graph = graph.require_resolved()
        self.server = graph.server
        self._uses: dict[str, tuple[Area, tuple | None, str | None]] = {}
        for name, area, rgb, label in _template_uses(graph):
            self._uses.setdefault(name, (area, rgb, label))  # the first use fixes the size
        self._templates: dict[str, Template] = {}
        """Each drawn when first asked for: all 193 of the shipped graph took 0.3 s, for a health that shows one page."""

    def get(self, name: str) -> Template | None:
        if name not in self._templates and name in self._uses:
            area, rgb, label = self._uses[name]
            crop = _synthetic_crop(name, area, None if rgb is None else tuple(rgb), label)
            self._templates[name] = Template(name=name, frames=(crop,), area=area)
        return self._templates.get(name)

    def names(self) -> Iterable[str]:
        return list(self._uses)


@functools.lru_cache(maxsize=BACKGROUNDS_KEPT)
def _background(name: str, width: int, height: int) -> np.ndarray:
    """A page's backdrop, read-only: a function of its name and size alone, so every renderer of the process shares
    the last BACKGROUNDS_KEPT drawn (a full-screen texture takes tens of ms, and tests start many simulators of one
    graph)."""
    frame = texture("page:" + name, width, height)
    # A dark title band so the page name is readable by a human looking at a capture.
    frame[8:44, 8 : min(width - 8, 8 + 16 * len(name) + 16)] //= 3
    cv2.putText(frame, name, (16, 36), cv2.FONT_HERSHEY_SIMPLEX, 0.8, (255, 255, 255), 2, cv2.LINE_AA)
    frame.setflags(write=False)
    return frame


@functools.lru_cache(maxsize=PANELS_KEPT)
def _panel(name: str, width: int, height: int) -> np.ndarray:
    """A popup's window texture, read-only: drawn under the popup on every capture while it shows."""
    frame = texture("popup:" + name, width, height)
    frame.setflags(write=False)
    return frame


# --------------------------------------------------------------------------------------------------- renderer


class Renderer:
    """Renders pages, popups, the loading screen and the unknown screen of one server-resolved graph."""

    def __init__(self, graph: Graph, assets: AssetPack | None = None) -> None:
        self.graph = graph.require_resolved()
        self.assets = assets if assets is not None else SyntheticAssets(graph)
        self.width, self.height = graph.resolution
        self._buttons = {b.name: b for b in graph.buttons}
        self._page_cache: dict[str, np.ndarray] = {}
        self._loading: np.ndarray | None = None
        self._unknown: tuple[int, np.ndarray] | None = None
        self._check_areas = _check_areas(self.graph, self._buttons)
        self.conflicts: dict[str, list[Conflict]] = {}
        """Screens whose colour signatures their own rendering cannot satisfy (engine.sim.compose.Conflict)."""

    # ---- pieces

    def template_crop(self, asset: str, area: Area) -> np.ndarray:
        template = self.assets.get(asset)
        if template is None or not template.frames:
            log.debug("asset %s missing from the pack; drawing a synthetic stand-in", asset)
            w, h = area[2] - area[0], area[3] - area[1]
            crop = texture("asset:" + asset, w, h)
            put_text_fit(crop, asset.rsplit("/", 1)[-1], (0, 0, w, h))
            return crop
        return template.frames[0]

    def template_area(self, asset: str, declared: Area) -> Area:
        """Where the template sits: its own area when the pack knows it and it has the same size (ALAS files),
        else the declared area."""
        template = self.assets.get(asset)
        if template is not None and template.area is not None:
            a, d = template.area, declared
            if (a[2] - a[0], a[3] - a[1]) == (d[2] - d[0], d[3] - d[1]):
                return tuple(a)
        return declared

    def draw_signature(self, frame: np.ndarray, sig: Signature, fills: list[Fill] = ()) -> Area | None:
        """Draw what makes `sig` hold (colour fills are painted by ``compose``); the box it claimed, if any."""
        sig = first_alternative(sig)
        button = self._buttons.get(sig.button) if getattr(sig, "button", None) else None
        if isinstance(sig, ColorSignature):
            # Only a button with a template is drawn here (its template's mean is the button's colour).
            return self._draw_button(frame, button) if button is not None and button.asset else None
        if isinstance(sig, TemplateSignature):
            asset = sig.asset or (button.asset if button else None)
            if asset is None:
                return self._draw_button(frame, button) if button is not None else None
            area = tuple(sig.area or button.area)
            return paste(frame, self.template_crop(asset, area), self.template_area(asset, area))
        if isinstance(sig, OcrSignature):
            return self.draw_text(frame, tuple(sig.area), sig.sample if sig.sample else strip_regex(sig.pattern),
                                  fills)
        return None

    def draw_text(self, frame: np.ndarray, area: Area, text: str, fills: list[Fill] = ()) -> Area:
        """Text as OCR signatures and text fields show it: on a light box, or on the colour of the colour
        signature it sits in (so both hold), legible to RapidOCR (engine.sim.text)."""
        box = clip_area(area, (self.width, self.height))
        under = container(list(fills), box)
        if under is None:
            draw_label(frame, box, text)
        else:
            draw_label(frame, box, text, ink=contrasting_ink(under.bgr), paper=under.bgr)
        return box

    def _draw_button(self, frame: np.ndarray, button) -> Area | None:
        if button.asset:
            area = tuple(button.area)
            return paste(frame, self.template_crop(button.asset, area), self.template_area(button.asset, area))
        x1, y1, x2, y2 = area = clip_area(tuple(button.click_area), (self.width, self.height))
        if x2 <= x1 or y2 <= y1:
            return None
        if button.color is not None:
            frame[y1:y2, x1:x2] = np.array(button.color[::-1], np.uint8)
        else:
            frame[y1:y2, x1:x2] = texture("button:" + button.name, x2 - x1, y2 - y1)
        cv2.rectangle(frame, (x1, y1), (x2 - 1, y2 - 1), (250, 250, 250), 1)
        put_text_fit(frame, button.text or button.name, area)
        return area

    def _draw_point(self, frame: np.ndarray, point: tuple[int, int]) -> Area | None:
        x, y = point
        x1, y1, x2, y2 = area = clip_area((x - POINT_BOX, y - POINT_BOX, x + POINT_BOX, y + POINT_BOX),
                                          (self.width, self.height))
        if x2 <= x1 or y2 <= y1:
            return None
        frame[y1:y2, x1:x2] = texture("point", x2 - x1, y2 - y1)
        cv2.circle(frame, (x, y), 4, (255, 255, 255), -1)
        return area

    def _draw_actions(self, frame: np.ndarray, actions, skip: set[str] = frozenset()) -> list[Area]:
        """Draw what tap actions tap (not the buttons in `skip`, which colour fills stand for)."""
        boxes = []
        for action in (a for a in actions if isinstance(a, TapAction)):
            if action.button is not None and action.button in self._buttons and action.button not in skip:
                boxes.append(self._draw_button(frame, self._buttons[action.button]))
            elif action.point is not None:
                boxes.append(self._draw_point(frame, tuple(action.point)))
        return [b for b in boxes if b is not None]

    # ---- composing one screen

    def _fills(self, signatures, page: Page | None) -> list[Fill]:
        """The colour signatures that are drawn as flat fills (those of buttons without a template)."""
        fills = []
        for sig in map(first_alternative, signatures):
            if not isinstance(sig, ColorSignature):
                continue
            button = self._buttons.get(sig.button) if sig.button else None
            if button is not None and button.asset:
                continue
            rgb = sig.rgb or (button.color if button else None)
            area = sig.area or (button.area if button else None)
            if rgb is None or area is None:
                continue
            tolerance = sig.tolerance if sig.tolerance is not None else self.graph.settings(page).color_tolerance
            fills.append(Fill(sig.name or sig.button or "color", clip_area(tuple(area), (self.width, self.height)),
                              (int(rgb[2]), int(rgb[1]), int(rgb[0])), int(tolerance)))
        return fills

    def compose(self, frame: np.ndarray, screen: str, signatures, actions=(), fields=(),
                page: Page | None = None) -> np.ndarray:
        """Draw a screen's tap targets, text fields and signatures on `frame` so that every signature holds.

        Colour fills go first, everything else on top, then each colour area is balanced (engine.sim.compose).
        When tap targets or fields make that impossible, the signatures win: they are drawn again over them (a
        screen that meets its own signatures matters more than a button drawn under a colour area). What still
        cannot hold is logged once and kept in ``conflicts``.
        """
        fills = self._fills(signatures, page)
        skip = {s.button for s in map(first_alternative, signatures) if isinstance(s, ColorSignature) and s.button}
        base = frame.copy()
        paint_fills(frame, fills)
        decor = self._draw_actions(frame, actions, skip)
        decor += [self.draw_text(frame, tuple(f.area), f.sample, fills) for f in fields]
        claimed = [b for b in (self.draw_signature(frame, s, fills) for s in signatures) if b is not None]
        conflicts = balance(frame, fills, claimed + decor, screen)
        if conflicts and decor:
            frame[:] = base
            self._draw_actions(frame, actions, skip)
            for f in fields:
                self.draw_text(frame, tuple(f.area), f.sample, fills)
            paint_fills(frame, fills)
            claimed = [b for b in (self.draw_signature(frame, s, fills) for s in signatures) if b is not None]
            conflicts = balance(frame, fills, claimed, screen)
        if conflicts and screen not in self.conflicts:
            self.conflicts[screen] = conflicts
            for conflict in conflicts:
                log.warning("%s", conflict)
        return frame

    # ---- screens

    def background(self, name: str) -> np.ndarray:
        """The page's textured backdrop with its name in a title band: a writable copy."""
        return _background(name, self.width, self.height).copy()

    def page(self, name: str) -> np.ndarray:
        """The page `name` with its link buttons and signatures; a read-only cached array."""
        cached = self._page_cache.get(name)
        if cached is not None:
            return cached
        page: Page = self.graph.page(name)
        actions = [link.action for link in page.links] + [TapAction(type="tap", button=c.button) for c in page.controls]
        actions = [a for a in actions if not self.borrows_check(name, a)]
        frame = self.compose(self.background(name), name, page.signatures, actions, page.fields, page)
        frame.setflags(write=False)
        self._page_cache[name] = frame
        return frame

    def borrows_check(self, page: str, action) -> bool:
        """Whether a tap target of `page` is matched at another page's check area (and at none of `page`'s): a place
        to tap that borrows that check's crop (page_channel closes where CAMPAIGN_MENU_CHECK would be), not what the
        game shows there. Painting it would make `page` look like the other page; taps in its click area still work."""
        button = self._buttons.get(getattr(action, "button", None) or "")
        owners = self._check_areas.get(tuple(button.area), ()) if button is not None and button.asset else ()
        return bool(owners) and page not in owners

    def with_popups(self, frame: np.ndarray, popups: Iterable[Popup]) -> np.ndarray:
        """`frame` under each popup in turn (darkened under a blocking one; a non-blocking popup, a toast, leaves
        the page as it is), with the popup's signatures and dismiss buttons on top."""
        out = frame.copy()
        for popup in popups:
            if popup.blocking:
                out = cv2.convertScaleAbs(out, alpha=0.4)
            panel = self._popup_panel(popup)
            if panel is not None:
                out[panel[1]:panel[3], panel[0]:panel[2]] = _panel(popup.name, panel[2] - panel[0],
                                                                    panel[3] - panel[1])
            self.compose(out, popup.name, popup.signatures, popup.dismiss)
        return out

    def _popup_panel(self, popup: Popup) -> Area | None:
        """The popup's window: the box around its signatures and dismiss buttons, with a margin."""
        areas = [getattr(s, "area", None) or getattr(self._buttons.get(getattr(s, "button", None) or ""), "area", None)
                 for s in popup.signatures]
        areas += [self._buttons[a.button].click_area for a in popup.dismiss
                  if isinstance(a, TapAction) and a.button in self._buttons]
        boxes = [tuple(a) for a in areas if a is not None]
        if not boxes:
            return None
        m = 24  # margin
        box = (min(b[0] for b in boxes) - m, min(b[1] for b in boxes) - m, max(b[2] for b in boxes) + m,
               max(b[3] for b in boxes) + m)
        box = clip_area(box, (self.width, self.height))
        return box if box[2] > box[0] and box[3] > box[1] else None

    def loading(self) -> np.ndarray:
        """The loading screen, as a fresh array: drawn once (it depends on the graph alone), copied on each call, as
        a game on a slow load is captured many times over."""
        if self._loading is None:
            self._loading = self._draw_loading()
            self._loading.setflags(write=False)
        return self._loading.copy()

    def _draw_loading(self) -> np.ndarray:
        if self.graph.loading_signatures:
            frame = texture("page:" + LOADING_NAME, self.width, self.height) // 2
            return self.compose(frame, LOADING_NAME, self.graph.loading_signatures)
        frame = np.full((self.height, self.width, 3), (60, 30, 20), np.uint8)
        w, h = self.width, self.height  # a progress bar and a caption
        cv2.rectangle(frame, (w // 4, h * 3 // 4), (w * 3 // 4, h * 3 // 4 + 16), (200, 200, 200), 2)
        cv2.rectangle(frame, (w // 4 + 4, h * 3 // 4 + 4), (w // 2, h * 3 // 4 + 12), (80, 200, 255), -1)
        put_text_fit(frame, "NOW LOADING", (w // 4, h // 3, w * 3 // 4, h // 2))
        return frame

    def unknown(self, variant: int = 0) -> np.ndarray:
        """A random-looking screen that carries none of the graph's signatures, as a fresh array; the last variant
        drawn is kept (a texture of the whole screen takes tens of ms, and a game stays on one unknown screen for
        many captures)."""
        if self._unknown is None or self._unknown[0] != variant:
            frame = self._draw_unknown(variant)
            frame.setflags(write=False)
            self._unknown = (variant, frame)
        return self._unknown[1].copy()

    def _draw_unknown(self, variant: int) -> np.ndarray:
        frame = texture(f"{UNKNOWN_NAME}:{variant}", self.width, self.height)
        rng = np.random.default_rng(seed_of(f"{UNKNOWN_NAME}:{variant}"))
        for _ in range(6):
            x1, y1 = int(rng.integers(0, self.width - 40)), int(rng.integers(0, self.height - 40))
            x2, y2 = x1 + int(rng.integers(20, 300)), y1 + int(rng.integers(20, 200))
            cv2.rectangle(frame, (x1, y1), (x2, y2), tuple(int(c) for c in rng.integers(0, 256, 3)), -1)
        return frame

    def black(self) -> np.ndarray:
        return np.zeros((self.height, self.width, 3), np.uint8)
