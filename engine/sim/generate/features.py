"""What a generated game holds, read back from its files: the structure and drawing features of issue 45, point 1.

``features(folder)`` answers a set of short names ("page:list", "tabs:swipe", "popup:back_only", "cross:bl",
"backdrop:noise", "script:hangul", "title:absent", "transition:slide", ...) from the graph and the style as written,
not from the generator's insides, so a test can check that a range of seeds covers every feature and a benchmark
can say which features a failing seed has.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from engine.sim.style import STYLE_FILE


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _load(folder: Path, name: str) -> dict:
    return yaml.load((folder / name).read_text(encoding="utf-8"), Loader=_LOADER) or {}  # noqa: S506 (a safe loader)


def features(folder: str | Path) -> set[str]:
    """The features of the generated game in `folder` (see the module docstring)."""
    folder = Path(folder)
    game, pages, popups = (_load(folder, f) for f in ("game.yaml", "pages.yaml", "popups.yaml"))
    style = _load(folder, STYLE_FILE)
    width, height = game["resolution"]
    buttons = {b["name"]: b for b in game["buttons"]}
    looks = style.get("buttons", {})
    pages = [p for p in pages["pages"] if p["name"] != game["unknown_page"]]
    by_name = {p["name"]: p for p in pages}
    out = {f"resolution:{width}x{height}", "portrait" if height > width else "landscape",
           "pages:small" if len(pages) <= 10 else "pages:large" if len(pages) >= 40 else "pages:medium"}
    loadings = set()
    for page in pages:
        out.add("page:" + page.get("description", "").removeprefix("generated: "))
        links = page.get("links", [])
        if page.get("loading"):
            loadings.add(page["loading"])
        actions = [lk["action"] for lk in links]
        if links and all(a["type"] == "key" for a in actions):
            out.add("exit:back_key_only")
        only = actions[0] if len(links) == 1 else {}
        if only.get("type") == "tap" and looks.get(only["button"], {}).get("look") == "icon":
            x1, y1, x2, y2 = buttons[only["button"]]["area"]
            if (x2 - x1) * (y2 - y1) <= (0.06 * min(width, height)) ** 2:
                out.add("exit:small_icon_only")
        if links and len({lk["to"] for lk in links}) == 1 and page["name"] != game["start_page"]:
            out.add("dead_end")
        for link in links:
            target = by_name.get(link["to"], {})
            if page["name"] != game["start_page"] and not any(b["to"] == page["name"] for b in target.get("links", [])):
                out.add("link:one_way")
            if link["action"]["type"] == "swipe":
                out.add("tabs:swipe")
            if link["action"]["type"] == "tap" and link["action"]["button"].startswith("TABS_"):
                out.add("tabs:tap")
        for sig in page.get("signatures", []):
            if sig["type"] == "ocr":
                out.add("title:ocr")
                area = sig["area"]
            elif sig.get("button", "").startswith("TITLE_"):
                area = buttons[sig["button"]]["area"]
            else:
                if sig.get("button", "").startswith("CARD_"):
                    out.add("title:absent")
                continue
            centre = (area[0] + area[2]) / 2
            out.add("title:" + ("left" if centre < 0.45 * width else "right" if centre > 0.55 * width else "centre"))
        if page.get("controls"):
            out.add("control:shows_popup")
    if len(loadings) >= 2:
        out.add("loading:varied")
    if game.get("start_page") == "page_title":
        out.add("page:title_screen")
    for popup in popups.get("popups", []):
        kind = popup.get("description", "").removeprefix("generated: ")
        out.add("popup:" + kind)
        if kind == "cross":
            x1, y1, x2, y2 = buttons[popup["dismiss"][0]["button"]]["area"]
            px1, py1, px2, py2 = style["panels"][popup["name"]]["box"]
            corner = ("t" if y1 - py1 < 0.1 * (py2 - py1) else "b" if py2 - y2 < 0.1 * (py2 - py1) else "") + \
                     ("l" if x1 - px1 < 0.1 * (px2 - px1) else "r" if px2 - x2 < 0.1 * (px2 - px1) else "")
            out.add("cross:" + (corner if len(corner) == 2 else "panel"))
    chains = style.get("chains", {})
    for start in set(chains) - set(chains.values()):
        length, at = 1, start
        while at in chains:
            length, at = length + 1, chains[at]
        out.add(f"chain:{length}")
    for arrival in style.get("arrivals", []):
        out.add("arrival:first_only" if arrival.get("first_only", True) else "arrival:every_time")
    out.add("backdrop:" + style["backdrop"]["kind"])
    if style.get("areas"):
        out.add("backdrop:per_area")
        out.update("backdrop:" + bd["kind"] for bd in style["areas"].values())
    out.add("script:" + style.get("script", "latin"))
    for look in looks.values():
        out.add("look:" + look.get("look", "block"))
        out.update(name for name in ("border", "faint") if look.get(name))
    if any(not look.get("border") and look.get("look") == "block" for look in looks.values()):
        out.add("borderless")
    scenes = [*style.get("scenes", {}).values(), style.get("everywhere", {})]
    for scene in scenes:
        if any(art.get("sway") for art in scene.get("art", [])):
            out.add("moves:sway")
        out.update("moves:" + t.get("kind", "timer") for t in scene.get("tickers", []))
        if scene.get("particles"):
            out.add("moves:particles")
    if style.get("transition", "none") != "none":
        out.add("transition:" + style["transition"])
    return out
