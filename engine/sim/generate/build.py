"""A generated game's plan (engine.sim.generate.world) drawn out: the graph's YAML data and the style's.

The drawing is drawn per seed too: the resolution (see ``RESOLUTIONS``), the backdrop (one of six kinds, shared or
one per area), the top bar, how buttons look (text on blocks, bare text, icons, with or without borders, some faint),
where titles sit (left, centre or right of the top band; none at all in some games), the script (Latin, CJK- or
Hangul-like glyphs), the art and what moves, the transition between pages, and the popups' panels.

Each page's signatures are what tells it from the others on its own screen: its title (OCR in some Latin games, a
template otherwise), the selected tab of a tab group, else the card naming what the page shows; a popup's is its
title on its panel; the loading screen's its caption.
"""

from __future__ import annotations

import random
from typing import Any

from engine.sim.generate.layout import Layout
from engine.sim.generate.world import Plan, PageSpec

RESOLUTIONS = ((1280, 720), (720, 1280), (1920, 1080), (1080, 2340), (1600, 900))
"""A seed's resolution is RESOLUTIONS[seed % 5]: any five seeds in a row cover all of them, both orientations."""
BACKDROPS = ("flat", "gradient", "textured", "noise", "dark", "light")
SWIPE_Y = 0.55


def _rgb(rng: random.Random, low: int = 30, high: int = 225) -> list[int]:
    return [rng.randint(low, high) for _ in range(3)]


def _luma(rgb) -> float:
    return 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]


def _ink(rgb) -> list[int]:
    return [20, 20, 28] if _luma(rgb) >= 140 else [245, 245, 240]


def _backdrop(rng: random.Random, kind: str, tone: str | None = None) -> dict[str, Any]:
    """A backdrop of `kind`; with `tone` (dark or light), its colours are moved into that tone, so the labels drawn
    for the shared backdrop read on it too (an area's own backdrop under the game's one ink)."""
    if kind == "dark":
        colour = _rgb(rng, 10, 50)
    elif kind == "light":
        colour = _rgb(rng, 200, 245)
    else:
        colour = _rgb(rng, 40, 200)
    colour2 = [max(0, min(255, c + rng.randint(-60, 60))) for c in colour]
    if tone is not None:  # the same draws, moved: a game without areas of their own is drawn as before
        low, high = (10, 90) if tone == "dark" else (170, 245)
        colour, colour2 = ([low + c * (high - low) // 255 for c in rgb] for rgb in (colour, colour2))
        kind = {"dark": "light", "light": "dark"}.get(kind, kind) if kind != tone and kind in ("dark", "light") \
            else kind
    return {"kind": kind, "colour": colour, "colour2": colour2, "seed": rng.randint(0, 2**31 - 1)}


class Builder:
    """Turns a plan into graph and style data for one seed (``build``)."""

    def __init__(self, rng: random.Random, plan: Plan, seed: int) -> None:
        self.rng, self.plan, self.seed = rng, plan, seed
        width, height = RESOLUTIONS[seed % len(RESOLUTIONS)]
        self.layout = Layout(width, height, rng.choice(["left", "centre", "right"]))
        self.script = rng.choices(["latin", "cjk", "hangul"], [2, 1, 1])[0]
        self.ocr_titles = self.script == "latin" and rng.random() < 0.5
        self.menu_look = rng.choice(["block", "text", "icon", "mixed"])
        self.border = rng.random() < 0.5
        self.faint_p = rng.choice([0.0, 0.0, 0.15])
        self.title_look = rng.choice(["plate", "text"])
        self.back_look = rng.choice(["icon", "block"])
        self.fills = [_rgb(rng) for _ in range(rng.randint(2, 4))]
        kind = rng.choice(BACKDROPS)
        self.backdrop = _backdrop(rng, kind)
        self.ink = _ink(self.backdrop["colour"])
        self.per_area = rng.random() < 0.35
        self.buttons: dict[str, dict[str, Any]] = {}
        self.looks: dict[str, dict[str, Any]] = {}

    # ---- buttons

    def button(self, name: str, area, *, text: str | None = None, look: str = "block", fill=None, ink=None,
               click=None, asset: str | None = None, **extra: Any) -> str:
        if name in self.buttons:
            return name
        data: dict[str, Any] = {"name": name, "area": list(area)}
        if click is not None:
            data["click"] = list(click)
        if fill is not None and look in ("block", "plate"):
            data["color"] = list(fill)
        if asset is not None:
            data["asset"] = asset
        if text is not None:
            data["text"] = text
        self.buttons[name] = data
        ink = ink if ink is not None else (_ink(fill) if fill is not None and look in ("block", "plate") else self.ink)
        self.looks[name] = {"look": look, "ink": list(ink), **({"fill": list(fill)} if fill is not None else {}),
                            **extra}
        return name

    def _menu(self, name: str, area, label: str, role: str) -> str:
        look = self.menu_look if self.menu_look != "mixed" else self.rng.choice(["block", "text", "icon"])
        if role in ("row", "control"):
            look = "block"
        extra: dict[str, Any] = {"border": self.border}
        if look == "icon":
            extra["icon"] = self.rng.randint(3, 30)
            area = (area[0], area[1], area[0] + (area[3] - area[1]), area[3])  # an icon is square
        if self.rng.random() < self.faint_p:
            extra["faint"] = True
        fill = self.rng.choice(self.fills) if look in ("block", "icon") else None
        return self.button(name, area, text=label, look=look, fill=fill, **extra)

    # ---- pages

    def page(self, spec: PageSpec) -> dict[str, Any]:
        lay = self.layout
        key = spec.name[5:].upper()
        links: list[dict[str, Any]] = []
        signatures: list[dict[str, Any]] = []
        controls: list[dict[str, Any]] = []
        grid_items = [lk for lk in spec.links if lk.how == "tap" and lk.role in ("menu", "row", "shortcut")]
        slots = lay.grid(len(grid_items) + len(spec.controls), 1 if spec.kind == "list" else 2,
                         tabs=spec.kind == "tab")
        slot = iter(slots)
        for link in spec.links:
            if link.how == "key":
                links.append({"to": link.to, "action": {"type": "key", "key": "back"}})
                continue
            if link.how.startswith("swipe"):
                w, h = lay.width, lay.height
                left, right = [int(0.8 * w), int(SWIPE_Y * h)], [int(0.2 * w), int(SWIPE_Y * h)]
                start, end = (left, right) if link.how == "swipe_left" else (right, left)
                links.append({"to": link.to, "action": {"type": "swipe", "start": start, "end": end}})
                continue
            name = self._tap_button(spec, key, link, slot)
            links.append({"to": link.to, "action": {"type": "tap", "button": name}})
        for label, popup in spec.controls:
            name = self._menu(f"{key}_{label.replace(' ', '_')}", next(slot), label, "control")
            controls.append({"button": name, "shows": popup})
        if spec.kind == "title":
            signatures.append(self._template(self.button("LOGO", lay.logo, text=spec.label, look="text",
                                                         asset="title/LOGO")))
        elif spec.titled:
            signatures.append(self._title(spec))
        if spec.kind == "tab":
            signatures.append(self._template(f"{spec.tab_group.upper()}_{spec.tab_index}_ON"))
            self._tab_buttons(spec)
        elif not spec.titled and spec.kind != "title":
            fill = self.rng.choice(self.fills)
            signatures.append(self._template(self.button(f"CARD_{key}", lay.card, text=spec.label, look="plate",
                                                         fill=fill, asset=f"card/{key}")))
        out: dict[str, Any] = {"name": spec.name, "description": f"generated: {spec.kind}"}
        if spec.loading:
            out["loading"] = spec.loading
        out["signatures"] = signatures
        if controls:
            out["controls"] = controls
        out["links"] = links
        return out

    def _tap_button(self, spec: PageSpec, key: str, link, slot) -> str:
        lay = self.layout
        if link.role == "start":
            return self.button("START", lay.start, text=link.label, look="text", click=(0, 0, lay.width, lay.height))
        if link.role == "back":
            if self.back_look == "icon":
                return self.button("BACK", lay.back, look="icon", icon=0, fill=self.fills[0])
            return self.button("BACK", lay.back, text="BACK", look="block", fill=self.fills[0], border=self.border)
        if link.role == "home":
            return self.button("HOME", lay.home, look="icon", icon=1)
        if link.role == "icon_exit":
            return self.button("CLOSE_ICON", lay.icon_exit, look="icon", icon=2)
        if link.role == "tab":
            self._tab_buttons(spec)
            j = spec.tab_labels.index(link.label)
            return f"{spec.tab_group.upper()}_{j}"
        return self._menu(f"{key}_{link.label.replace(' ', '_')}", next(slot), link.label, link.role)

    def _tab_buttons(self, spec: PageSpec) -> None:
        fill = self.fills[-1]
        group = spec.tab_group.upper()
        for j, label in enumerate(spec.tab_labels):
            area = self.layout.tab(j, len(spec.tab_labels))
            self.button(f"{group}_{j}", area, text=label, look="block", fill=fill, border=self.border)
            self.button(f"{group}_{j}_ON", area, text=label, look="block", fill=fill, inverted=True,
                        asset=f"tab/{group}_{j}")

    def _title(self, spec: PageSpec) -> dict[str, Any]:
        area = self.layout.title
        if self.ocr_titles:
            words = spec.label.split()
            return {"type": "ocr", "area": list(area), "pattern": r"\s*".join(words), "sample": spec.label}
        key = spec.tab_group.upper() if spec.kind == "tab" else spec.name[5:].upper()
        fill = [int(c) for c in self.plate] if self.title_look == "plate" else None
        return self._template(self.button(f"TITLE_{key}", area, text=spec.label, look=self.title_look, fill=fill,
                                          asset=f"title/{key}"))

    @property
    def plate(self) -> list[int]:
        return [min(255, c + 40) for c in self.fills[0]] if _luma(self.fills[0]) > 110 else [235, 232, 220]

    def _template(self, button: str) -> dict[str, Any]:
        return {"type": "template", "button": button}

    # ---- popups

    def popup(self, spec) -> dict[str, Any]:
        lay = self.layout
        key = spec.name.upper()
        title = self.button(f"{key}_TITLE", lay.popup_title, text=spec.label, look="text", ink=[240, 240, 235],
                            asset=f"popup/{key}")
        if spec.kind == "cross":
            spot = (self.rng.random(), self.rng.random())
            dismiss = [{"type": "tap", "button": self.button(f"{key}_CLOSE", lay.cross(spec.corner, spot),
                                                             look="icon", icon=2, ink=[250, 250, 250])}]
        elif spec.kind == "ok":
            dismiss = [{"type": "tap", "button": self.button(f"{key}_OK", lay.ok, text=spec.button_label,
                                                             look="block", fill=self.fills[0])}]
        elif spec.kind == "tap_anywhere":
            dismiss = [{"type": "tap", "button": self.button(f"{key}_TAP", lay.tap_hint, text="TAP TO CONTINUE",
                                                             look="text", ink=[200, 200, 190],
                                                             click=(0, 0, lay.width, lay.height))}]
        else:
            dismiss = [{"type": "key", "key": "back"}]
        out: dict[str, Any] = {"name": spec.name, "description": f"generated: {spec.kind}",
                               "signatures": [self._template(title)], "dismiss": dismiss}
        if spec.page is not None:
            out["pages"] = [spec.page]
        return out

    # ---- the whole game

    def build(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
        """(game.yaml, pages.yaml, popups.yaml, sim_style.yaml) as plain data."""
        pages = [self.page(p) for p in self.plan.pages]
        pages.insert(0, {"name": "page_unknown", "description": "Anything the observer cannot name."})
        popups = [self.popup(p) for p in self.plan.popups]
        loading = self.button("LOADING", self.layout.loading_caption, text="NOW LOADING", look="text",
                              ink=[235, 235, 235], asset="loading/CAPTION")
        package = f"com.generated.game{self.seed}"
        game = {"game": f"generated_{self.seed}", "resolution": [self.layout.width, self.layout.height],
                "servers": ["en"], "fallback_server": "en", "unknown_page": "page_unknown",
                "start_page": "page_title", "app": {"package": package, "activity": f"{package}.MainActivity"},
                "loading_signatures": [self._template(loading)], "buttons": list(self.buttons.values())}
        return game, {"pages": pages}, {"popups": popups}, self.style()

    def style(self) -> dict[str, Any]:
        rng, lay = self.rng, self.layout
        areas = sorted({p.area for p in self.plan.pages})
        style: dict[str, Any] = {"seed": self.seed, "script": self.script, "backdrop": self.backdrop}
        if self.per_area:
            tone = "light" if self.ink[0] < 128 else "dark"  # dark ink reads on light backdrops
            style["areas"] = {a: _backdrop(rng, self.backdrop["kind"] if rng.random() < 0.5 else
                                           rng.choice(BACKDROPS), tone) for a in areas if a != "main"}
            style["page_area"] = {p.name: p.area for p in self.plan.pages if p.area != "main"}
        if rng.random() < 0.5:
            style["band"], style["band_height"] = _rgb(rng, 10, 90), lay.band
        style["plate"] = self.plate
        style["buttons"] = self.looks
        style["scenes"] = self._scenes()
        if rng.random() < 0.5:
            style["everywhere"] = {"tickers": [{"area": list(lay.hud), "kind": "counter",
                                                "start": rng.randint(100, 90000)}]}
        style["panels"] = {p.name: {"box": list(lay.panel), "fill": _rgb(rng, 25, 80),
                                    "border": _rgb(rng, 150, 255) if rng.random() < 0.6 else None}
                           for p in self.plan.popups}
        style["dim"] = round(rng.uniform(0.3, 0.6), 2)
        style["loading"] = _backdrop(rng, "dark")
        style["loading_bar"] = list(lay.loading_bar)
        style["transition"] = rng.choice(["none", "fade", "slide"])
        style["transition_s"] = 0.0 if style["transition"] == "none" else round(rng.uniform(0.2, 0.6), 2)
        style["arrivals"] = [{"page": p, "popup": q, "first_only": first} for p, q, first in self.plan.arrivals]
        style["chains"] = dict(self.plan.chains)
        return style

    def _scenes(self) -> dict[str, Any]:
        rng, lay = self.rng, self.layout
        scenes: dict[str, Any] = {}
        sway = rng.choice([0, lay.px(6), lay.px(12)])
        sparks = rng.random() < 0.5
        for spec in self.plan.pages:
            scene: dict[str, Any] = {}
            if spec.kind in ("title", "hub", "area") or rng.random() < 0.3:
                area = lay.logo_art if spec.kind == "title" else lay.art
                scene["art"] = [{"area": list(area), "seed": rng.randint(0, 2**31 - 1), "sway": sway,
                                 "period": round(rng.uniform(1.5, 4.0), 2)}]
                if sparks:
                    scene["particles"] = [{"area": list(area), "count": rng.randint(6, 30), "size": lay.px(4),
                                           "colour": _rgb(rng, 180, 255), "seed": rng.randint(0, 2**31 - 1)}]
            if spec.kind in ("list", "tab", "area") and rng.random() < 0.4:
                scene["tickers"] = [{"area": list(lay.timer), "kind": "timer", "start": rng.randint(60, 86000)}]
            if scene:
                scenes[spec.name] = scene
        return scenes
