"""Drawing a graph in its style (engine.sim.style): backdrops, buttons, titles, popup panels, moving parts.

``StyledRenderer`` answers what ``Renderer`` answers (a page, a page under popups, the loading and unknown screens)
for a graph with a style. A page is drawn from what the graph puts on it (its links' and controls' buttons, its
signatures' buttons and texts) in the looks the style gives each button, over the backdrop of the page's area; the
page's art and moving parts are added per frame by ``animate``. Nothing is drawn to help a reader that a game would
not draw: no page name, no backdrop per page by rule.

The templates the graph's signatures name are cut from these drawings (``CroppedAssets``), as a real game's asset
pack is cut from its screenshots: so a style's simulator and its observer agree pixel for pixel, and moving parts,
which the style keeps off every signature's area, change nothing a template sees.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Iterable

import cv2
import numpy as np

from engine.config.assets import Template
from engine.config.schema import AnyOfSignature, Graph, OcrSignature, Page, Popup, TapAction, TemplateSignature
from engine.sim.glyphs import draw_text as draw_script
from engine.sim.render import Renderer, clip_area, first_alternative, strip_regex
from engine.sim.style import Art, Backdrop, ButtonLook, Scene, Style
from engine.sim.text import contrasting_ink, draw_label

Area = tuple[int, int, int, int]
DEFAULT_LOOK = ButtonLook(look="block", border=True)
ICONS = ("back", "home", "close", "gear", "star", "mail", "bag", "grid", "bell", "play")
"""The icon shapes (``ButtonLook.icon`` indexes them, modulo their number)."""


def bgr(rgb) -> tuple[int, int, int]:
    return int(rgb[2]), int(rgb[1]), int(rgb[0])


@lru_cache(maxsize=32)
def backdrop(bd: Backdrop, width: int, height: int) -> np.ndarray:
    """The full-screen backdrop `bd` (read-only, cached: pages share it). Smooth parts are drawn at a quarter of the
    size and scaled up, the grain is one tile repeated: a 1080x2340 backdrop costs tens of milliseconds, once."""
    rng = np.random.default_rng(bd.seed)
    a, b = np.array(bgr(bd.colour), np.float32), np.array(bgr(bd.colour2), np.float32)
    w, h = max(2, width // 4), max(2, height // 4)
    ys = np.linspace(0, 1, h, dtype=np.float32)[:, None, None]
    xs = np.linspace(0, 1, w, dtype=np.float32)[None, :, None]
    if bd.kind == "gradient":
        t = np.clip(0.7 * ys + 0.3 * xs, 0, 1)
        img = a * (1 - t) + b * t
    elif bd.kind == "textured":
        period = float(rng.integers(24, 90)) / 4
        angle = float(rng.uniform(0, math.pi))
        phase = (xs * w * math.cos(angle) + ys * h * math.sin(angle)) * (2 * math.pi / period)
        img = a + (b - a) * (0.5 + 0.5 * np.sin(phase)) * 0.35
    elif bd.kind == "noise":  # photo-like: smooth blobs of colour at a few scales, and grain
        img = np.broadcast_to(a, (h, w, 3)).astype(np.float32)
        for cells in (4, 9, 23):
            low = rng.uniform(-1, 1, size=(cells, max(2, cells * width // max(height, 1)))).astype(np.float32)
            img = img + cv2.resize(low, (w, h), interpolation=cv2.INTER_CUBIC)[:, :, None] * (b - a) * 0.4
    else:  # flat, dark, light: one colour with a faint grain
        img = np.broadcast_to(a, (h, w, 3)).astype(np.float32)
    out = cv2.resize(np.clip(img, 0, 255).astype(np.uint8), (width, height), interpolation=cv2.INTER_LINEAR)
    if bd.kind != "flat":
        tile = rng.integers(-4, 5, size=(64, 64, 1)).astype(np.int16)
        grain = np.tile(tile, (-(-height // 64), -(-width // 64), 1))[:height, :width]
        out = np.clip(out.astype(np.int16) + grain, 0, 255).astype(np.uint8)
    out.setflags(write=False)
    return out


def draw_icon(frame: np.ndarray, area: Area, index: int, ink) -> None:
    """One of ICONS drawn into `area` (in place)."""
    x1, y1, x2, y2 = area
    w, h = x2 - x1, y2 - y1
    cx, cy, r = x1 + w // 2, y1 + h // 2, max(3, min(w, h) * 2 // 5)
    t = max(2, r // 4)
    kind = ICONS[index % len(ICONS)]
    pts = None
    if kind == "back":
        pts = [[cx + r // 2, cy - r], [cx - r // 2, cy], [cx + r // 2, cy + r]]
    elif kind == "home":
        pts = [[cx - r, cy], [cx, cy - r], [cx + r, cy], [cx + r * 2 // 3, cy], [cx + r * 2 // 3, cy + r],
               [cx - r * 2 // 3, cy + r], [cx - r * 2 // 3, cy]]
    elif kind == "close":
        cv2.line(frame, (cx - r, cy - r), (cx + r, cy + r), ink, t, cv2.LINE_AA)
        cv2.line(frame, (cx - r, cy + r), (cx + r, cy - r), ink, t, cv2.LINE_AA)
    elif kind == "gear":
        cv2.circle(frame, (cx, cy), r * 2 // 3, ink, t, cv2.LINE_AA)
        for k in range(8):
            a = k * math.pi / 4
            cv2.line(frame, (int(cx + r * 0.6 * math.cos(a)), int(cy + r * 0.6 * math.sin(a))),
                     (int(cx + r * math.cos(a)), int(cy + r * math.sin(a))), ink, t, cv2.LINE_AA)
    elif kind == "star":
        pts = [[int(cx + (r if k % 2 == 0 else r // 2) * math.sin(k * math.pi / 5)),
                int(cy - (r if k % 2 == 0 else r // 2) * math.cos(k * math.pi / 5))] for k in range(10)]
        cv2.fillPoly(frame, [np.array(pts)], ink, cv2.LINE_AA)
        pts = None
    elif kind == "mail":
        cv2.rectangle(frame, (cx - r, cy - r * 2 // 3), (cx + r, cy + r * 2 // 3), ink, t)
        pts = [[cx - r, cy - r * 2 // 3], [cx, cy + r // 6], [cx + r, cy - r * 2 // 3]]
    elif kind == "bag":
        cv2.rectangle(frame, (cx - r, cy - r // 3), (cx + r, cy + r), ink, -1)
        cv2.ellipse(frame, (cx, cy - r // 3), (r // 2, r // 2), 0, 180, 360, ink, t)
    elif kind == "grid":
        for gx in (-1, 1):
            for gy in (-1, 1):
                cv2.rectangle(frame, (cx + gx * r // 2 - r // 3, cy + gy * r // 2 - r // 3),
                              (cx + gx * r // 2 + r // 3, cy + gy * r // 2 + r // 3), ink, -1)
    elif kind == "bell":
        cv2.ellipse(frame, (cx, cy), (r * 2 // 3, r), 0, 180, 360, ink, -1)
        cv2.rectangle(frame, (cx - r, cy), (cx + r, cy + r // 3), ink, -1)
    else:
        cv2.fillPoly(frame, [np.array([[cx - r // 2, cy - r], [cx + r, cy], [cx - r // 2, cy + r]])], ink)
    if pts is not None:
        cv2.polylines(frame, [np.array(pts, np.int32)], False, ink, t, cv2.LINE_AA)


@lru_cache(maxsize=64)
def sprite(art: Art, width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """A character drawn from `art.seed` to fit width x height: (BGR image, 0/1 mask)."""
    rng = np.random.default_rng(art.seed)
    img = np.zeros((height, width, 3), np.uint8)
    mask = np.zeros((height, width), np.uint8)
    body, trim, hair = (tuple(int(c) for c in rng.integers(30, 240, 3)) for _ in range(3))
    cx = width // 2
    shapes = [("ellipse", (cx, height * 7 // 10), (width * 2 // 5, height * 3 // 10), body),
              ("ellipse", (cx, height * 3 // 10), (width // 5, height // 6), (190, 205, 235)),
              ("ellipse", (cx, height * 2 // 10), (width // 4, height // 9), hair),
              ("rect", (cx - width // 8, height * 5 // 10), (cx + width // 8, height * 9 // 10), trim)]
    for kind, a, b, colour in shapes:
        for target, value in ((img, colour), (mask, 1)):
            if kind == "ellipse":
                cv2.ellipse(target, a, b, 0, 0, 360, value, -1, cv2.LINE_AA if target is img else cv2.LINE_8)
            else:
                cv2.rectangle(target, a, b, value, -1)
    for _ in range(int(rng.integers(2, 5))):  # a few stripes and dots, so the art has structure
        y = int(rng.integers(height // 2, height - 4))
        cv2.line(img, (cx - width // 3, y), (cx + width // 3, y), tuple(int(c) for c in rng.integers(0, 255, 3)), 2)
    img = cv2.bitwise_and(img, img, mask=mask)
    img.setflags(write=False)
    mask.setflags(write=False)
    return img, mask


class StyledRenderer(Renderer):
    """A Renderer that draws a graph in its style (see the module docstring)."""

    def __init__(self, graph: Graph, style: Style, assets=None) -> None:
        self.style = style
        super().__init__(graph, assets if assets is not None else _NoAssets(graph.server))
        self._backgrounds: dict = {}
        """Backdrops with the top bar (by Backdrop) and what lies under each swaying art (by page and art)."""
        if assets is None:
            self.assets = CroppedAssets(self)

    # ---- pieces

    def background(self, name: str) -> np.ndarray:
        """The page's backdrop (its area's, else the shared one) with the style's top bar: a writable copy."""
        area = self.style.page_area.get(name)
        bd = self.style.areas.get(area, self.style.backdrop) if area is not None else self.style.backdrop
        if bd not in self._backgrounds:
            frame = backdrop(bd, self.width, self.height).copy()
            band = self.style.band_height
            if self.style.band is not None and band:
                frame[:band] = cv2.addWeighted(frame[:band], 0.35, np.full_like(frame[:band], bgr(self.style.band)),
                                               0.65, 0)
            frame.setflags(write=False)
            self._backgrounds[bd] = frame
        return self._backgrounds[bd].copy()

    def draw_button(self, frame: np.ndarray, name: str) -> Area | None:
        button = self._buttons.get(name)
        if button is None:
            return None
        look = self.style.buttons.get(name, DEFAULT_LOOK)
        x1, y1, x2, y2 = area = clip_area(tuple(button.area), (self.width, self.height))
        if x2 <= x1 or y2 <= y1:
            return None
        under = frame[y1:y2, x1:x2].copy()
        fill = bgr(look.fill or button.color or (90, 90, 90))
        ink = bgr(look.ink)
        if look.inverted:
            fill, ink = ink, fill
        if look.look in ("block", "plate"):
            frame[y1:y2, x1:x2] = fill
        if look.look == "icon":
            if look.fill is not None:
                cv2.circle(frame, ((x1 + x2) // 2, (y1 + y2) // 2), min(x2 - x1, y2 - y1) // 2, fill, -1,
                           cv2.LINE_AA)
            draw_icon(frame, area, look.icon, ink)
        elif button.text:
            pad = max(2, (y2 - y1) // 8)
            draw_script(frame, (x1 + pad, y1 + pad, x2 - pad, y2 - pad), button.text, self.style.script, ink)
        if look.border:
            cv2.rectangle(frame, (x1, y1), (x2 - 1, y2 - 1), ink, 2)
        if look.faint:  # half blended into what was under it: still there, hard to see
            frame[y1:y2, x1:x2] = ((frame[y1:y2, x1:x2].astype(np.uint16) + under) // 2).astype(np.uint8)
        return area

    def draw_ocr(self, frame: np.ndarray, sig: OcrSignature) -> None:
        box = clip_area(tuple(sig.area), (self.width, self.height))
        paper = bgr(self.style.plate)
        draw_label(frame, box, sig.sample or strip_regex(sig.pattern), ink=contrasting_ink(paper), paper=paper)

    def _draw_screen(self, frame: np.ndarray, signatures, actions: Iterable = ()) -> np.ndarray:
        """The buttons `actions` tap and the buttons and texts of `signatures`, each once, in that order."""
        names: list[str] = []
        for action in actions:
            if isinstance(action, TapAction) and action.button is not None:
                names.append(action.button)
        ocr = []
        stack = list(signatures)
        while stack:
            sig = stack.pop(0)
            if isinstance(sig, AnyOfSignature):
                stack.insert(0, first_alternative(sig))
            elif isinstance(sig, OcrSignature):
                ocr.append(sig)
            elif getattr(sig, "button", None):
                names.append(sig.button)
        for name in dict.fromkeys(names):
            self.draw_button(frame, name)
        for sig in ocr:
            self.draw_ocr(frame, sig)
        return frame

    # ---- screens

    def page(self, name: str) -> np.ndarray:
        cached = self._page_cache.get(name)
        if cached is not None:
            return cached
        page: Page = self.graph.page(name)
        frame = self.background(name)
        for art in self._scene(name).art:
            self._paste_art(frame, art, 0.0)
        actions = [link.action for link in page.links] + [TapAction(type="tap", button=c.button)
                                                          for c in page.controls]
        self._draw_screen(frame, page.signatures, actions)
        for f in page.fields:
            self.draw_text(frame, tuple(f.area), f.sample)
        frame.setflags(write=False)
        self._page_cache[name] = frame
        return frame

    def _scene(self, name: str) -> Scene:
        own = self.style.scenes.get(name)
        every = self.style.everywhere
        if own is None:
            return every
        return Scene(art=[*every.art, *own.art], tickers=[*every.tickers, *own.tickers],
                     particles=[*every.particles, *own.particles])

    def moves(self, name: str) -> bool:
        scene = self._scene(name)
        return bool(scene.tickers or scene.particles or any(a.sway for a in scene.art))

    def animate(self, name: str, frame: np.ndarray, now: float) -> np.ndarray:
        """The page `name` (its static `frame`) at time `now`: art swayed, tickers ticked, particles moved."""
        scene = self._scene(name)
        if not (scene.tickers or scene.particles or any(a.sway for a in scene.art)):
            return frame
        out = frame.copy()
        for art in scene.art:
            if art.sway:
                x1, y1, x2, y2 = art.area
                out[y1:y2, x1:x2] = self._art_under(name, art)
                self._paste_art(out, art, now)
        for ticker in scene.tickers:
            self._tick(out, ticker, now)
        for particles in scene.particles:
            self._sparks(out, particles, now)
        return out

    def _art_under(self, name: str, art: Art) -> np.ndarray:
        key = f"{name}:{art.area}:{art.seed}"
        if key not in self._backgrounds:
            x1, y1, x2, y2 = art.area
            self._backgrounds[key] = self.background(name)[y1:y2, x1:x2].copy()
        return self._backgrounds[key]

    def _paste_art(self, frame: np.ndarray, art: Art, now: float) -> None:
        x1, y1, x2, y2 = art.area
        w, h = x2 - x1 - 2 * art.sway, y2 - y1 - art.sway
        if w < 8 or h < 8:
            return
        img, mask = sprite(art, w, h)
        dx = art.sway + int(round(art.sway * math.sin(2 * math.pi * now / art.period)))
        dy = int(round(art.sway / 2 * (1 + math.sin(4 * math.pi * now / art.period))))
        region = frame[y1 + dy:y1 + dy + h, x1 + dx:x1 + dx + w]
        if region.shape[:2] == mask.shape:
            cv2.copyTo(img, mask, region)

    def _tick(self, frame: np.ndarray, ticker, now: float) -> None:
        x1, y1, x2, y2 = ticker.area
        frame[y1:y2, x1:x2] = (frame[y1:y2, x1:x2] // 3)
        second = int(now)
        if ticker.kind == "timer":
            left = max(0, ticker.start - second)
            text = f"{left // 3600:02d}:{left % 3600 // 60:02d}:{left % 60:02d}"
        else:
            text = f"{ticker.start + second * 7:,}"
        draw_script(frame, ticker.area, text, "latin", bgr(ticker.ink))

    def _sparks(self, frame: np.ndarray, p, now: float) -> None:
        rng = np.random.default_rng(p.seed)
        x1, y1, x2, y2 = p.area
        u, v = rng.random(p.count), rng.random(p.count)
        speed = rng.uniform(0.03, 0.12, p.count)
        xs = (x1 + ((u + 0.3 * speed * now) % 1.0) * (x2 - x1 - p.size)).astype(int)
        ys = (y1 + ((v - speed * now) % 1.0) * (y2 - y1 - p.size)).astype(int)
        colour = bgr(p.colour)
        for x, y in zip(xs, ys):
            frame[y:y + p.size, x:x + p.size] = colour

    def with_popups(self, frame: np.ndarray, popups: Iterable[Popup]) -> np.ndarray:
        out = frame.copy()
        for popup in popups:
            if popup.blocking:
                out = cv2.convertScaleAbs(out, alpha=self.style.dim)
            panel = self.style.panels.get(popup.name)
            if panel is not None:
                x1, y1, x2, y2 = clip_area(tuple(panel.box), (self.width, self.height))
                out[y1:y2, x1:x2] = bgr(panel.fill)
                if panel.border is not None:
                    cv2.rectangle(out, (x1, y1), (x2 - 1, y2 - 1), bgr(panel.border), 3)
            self._draw_screen(out, popup.signatures, [a for a in popup.dismiss if isinstance(a, TapAction)])
        return out

    def loading(self, now: float = 0.0) -> np.ndarray:
        frame = backdrop(self.style.loading or self.style.backdrop, self.width, self.height).copy()
        self._draw_screen(frame, self.graph.loading_signatures)
        if self.style.loading_bar is not None:
            x1, y1, x2, y2 = self.style.loading_bar
            cv2.rectangle(frame, (x1, y1), (x2 - 1, y2 - 1), (220, 220, 220), 2)
            done = x1 + 3 + int((x2 - x1 - 6) * ((now * 0.37) % 1.0))
            frame[y1 + 3:y2 - 3, x1 + 3:done] = (90, 210, 255)
        return frame


class _NoAssets:
    """The empty pack a StyledRenderer starts with, until its own drawings are cut into templates."""

    def __init__(self, server: str | None) -> None:
        self.server = server

    def get(self, name: str) -> Template | None:
        return None

    def names(self) -> list[str]:
        return []


class CroppedAssets:
    """The templates a styled graph's signatures name, cut from the screens that show them (see the module
    docstring): each page's static drawing, each popup over a black page, the loading screen."""

    def __init__(self, renderer: StyledRenderer) -> None:
        graph = renderer.graph
        self.server = graph.server
        self._templates: dict[str, Template] = {}
        buttons = {b.name: b for b in graph.buttons}
        black = renderer.black()
        screens = [(p.signatures, lambda p=p: renderer.page(p.name)) for p in graph.pages]
        screens += [(p.signatures, lambda p=p: renderer.with_popups(black, [p])) for p in graph.popups]
        screens += [(graph.loading_signatures, renderer.loading)]
        for signatures, draw in screens:
            frame = None
            for sig, area in _templates_of(signatures, buttons):
                if sig in self._templates:
                    continue
                frame = draw() if frame is None else frame
                x1, y1, x2, y2 = clip_area(area, (renderer.width, renderer.height))
                crop = np.ascontiguousarray(frame[y1:y2, x1:x2])
                crop.setflags(write=False)
                self._templates[sig] = Template(name=sig, frames=(crop,), area=(x1, y1, x2, y2))

    def get(self, name: str) -> Template | None:
        return self._templates.get(name)

    def names(self) -> list[str]:
        return list(self._templates)


def _templates_of(signatures, buttons) -> Iterable[tuple[str, Area]]:
    """(asset name, area) of each template signature in `signatures` (every alternative of an any_of)."""
    stack = list(signatures)
    while stack:
        sig = stack.pop()
        if isinstance(sig, AnyOfSignature):
            stack.extend(sig.of)
        elif isinstance(sig, TemplateSignature):
            button = buttons.get(sig.button) if sig.button else None
            asset = sig.asset or (button.asset if button else None)
            area = sig.area or (button.area if button else None)
            if asset and area:
                yield asset, tuple(area)
