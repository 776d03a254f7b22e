"""How many of a generated game's link buttons the explorer's first actions on a page reach: the figures behind
engine.observe.spots (docs/benchmarks/generated.md, "Buttons the region finder misses").

    python -m benchmarks.button_reach 1 2 3 ...    # generated seeds; prints the reach by look and the misses

For every page of every game: the page as the simulator draws it (nothing over it, its moving parts at rest),
scaled to the explorer's reference size (engine.faces.commands.explore.REFERENCE_LONG_SIDE), and the taps
engine.explore.regions.page_actions offers on it, scaled back to the device. A link button (a tap on a named
button leading to another page) is reached when one of those taps lands in its click area, as the simulator judges
a tap. A button missed here is found only by the grids of taps the explorer sweeps once no visible work is left
(engine.explore.explorer), which on a big game it seldom has time for: every page behind it is then missed.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

import cv2

from engine.config.loader import load_graph
from engine.config.schema import TapAction
from engine.explore.regions import page_actions
from engine.faces.commands.explore import REFERENCE_LONG_SIDE
from engine.sim.generate import generate
from engine.sim.style import style_beside
from engine.sim.styled import DEFAULT_LOOK, StyledRenderer


def look_of(style, name: str) -> str:
    """A button's drawing as one word: its look, bordered or not, faint or not."""
    look = style.buttons.get(name, DEFAULT_LOOK)
    return "/".join([look.look] + (["border"] if look.border else []) + (["faint"] if look.faint else []))


def reach(seed: int, root: Path) -> tuple[list[tuple[str, str, str, bool]], int]:
    """((page, button, look, reached) for every link button of the game, taps offered in all) for one seed."""
    folder = generate(seed, root / f"game{seed}")
    graph = load_graph(folder).resolve("en")
    style = style_beside(folder)
    renderer = StyledRenderer(graph, style)
    width, height = graph.resolution
    scale = min(1.0, REFERENCE_LONG_SIDE / max(width, height))
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    buttons = {b.name: b for b in graph.buttons}
    rows, offered = [], 0
    for page in graph.pages:
        if page.name == graph.unknown_page:
            continue
        frame = cv2.resize(renderer.page(page.name), size, interpolation=cv2.INTER_AREA)
        points = [(a["point"][0] / scale, a["point"][1] / scale) for a in page_actions(frame) if a["type"] == "tap"]
        offered += len(points)
        for link in page.links:
            if not isinstance(link.action, TapAction) or link.action.button is None:
                continue
            x1, y1, x2, y2 = buttons[link.action.button].click_area
            if (x2 - x1) * (y2 - y1) > 0.25 * width * height:
                continue  # tap anywhere (a title screen): any tap reaches it
            hit = any(x1 <= x < x2 and y1 <= y < y2 for x, y in points)
            rows.append((page.name, link.action.button, look_of(style, link.action.button), hit))
    return rows, offered


def main(seeds: list[int]) -> None:
    by_look, total = Counter(), Counter()
    offered = 0
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            rows, taps = reach(seed, Path(tmp))
            offered += taps
            missed = [(p, b, look) for p, b, look, hit in rows if not hit]
            print(f"seed {seed}: {len(rows) - len(missed)}/{len(rows)} link buttons reached, {taps} taps offered; "
                  f"missed: {', '.join(f'{p}:{b} ({look})' for p, b, look in missed) or '-'}")
            for _, _, look, hit in rows:
                total[look] += 1
                by_look[look] += hit
    print(f"all: {sum(by_look.values())}/{sum(total.values())} reached, {offered} taps offered")
    for look in sorted(total):
        print(f"  {look}: {by_look[look]}/{total[look]}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or list(range(1, 13)))
