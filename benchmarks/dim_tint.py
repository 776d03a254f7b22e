"""How far a dimmed page strays from its own colours times the dimming, against another page that only looks
dimmed: the figures behind engine.explore.sketch.DIM_TINT (docs/benchmarks/generated.md, "A darker page is not a
dimmed one").

    python -m benchmarks.dim_tint 1 2 3 ...    # generated seeds; prints both distributions

For every generated game: each page's first frame under each of the game's blocking popups (the simulator dims the
page and draws the panel), and each page's first frame against every other page's. Where
engine.explore.sketch.cover calls the second a dimmed cover of the first, the tint residual (the median, over the
cells the dimming leaves alike, of how far each strays from its reference scaled by its best factor) is printed,
and whether the box reaches the top row of cells (engine.explore.sketch.DIMMED_TOP), both rules off.
A real dimming scales every channel alike, so its residual is near 0; a page on a darker backdrop of another hue
(generated game 8: the hub's dark green, its areas' dark gray) strays by the hue difference.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

from engine.config.loader import load_graph
from engine.explore import sketch as sk
from engine.sim.generate import generate
from engine.sim.style import style_beside
from engine.sim.styled import StyledRenderer


def residuals(seed: int, root: Path) -> tuple[list[tuple[float, bool]], list[tuple[str, str, float, bool]]]:
    """((residual, box reaches the top row) of true dimmings, (page, page under, residual, reaches the top row) of
    pages cover() calls another dimmed), with DIM_TINT and DIMMED_TOP off."""
    folder = generate(seed, root / f"game{seed}")
    graph = load_graph(folder).resolve("en")
    renderer = StyledRenderer(graph, style_beside(folder))
    names = [page.name for page in graph.pages if page.name != graph.unknown_page]
    firsts = {name: renderer.page(name) for name in names}
    sketches = {name: sk.sketch(frame) for name, frame in firsts.items()}
    true, false = [], []
    rules = sk.DIM_TINT, sk.DIMMED_TOP
    sk.DIM_TINT, sk.DIMMED_TOP = float("inf"), True  # every cover the gray alone calls dimmed: both rules off
    blocking = [popup for popup in graph.popups if popup.blocking]
    for name in names:
        for popup in blocking:
            covered = sk.sketch(renderer.with_popups(firsts[name], [popup]))
            found = sk.cover(covered, sketches[name])
            if found is not None and found.gain <= sk.DIM_BELOW:
                true.append((sk.tint_residual(covered, sketches[name], found.gain), found.box[1] == 0))
        for other in names:
            if other == name:
                continue
            found = sk.cover(sketches[other], sketches[name])
            if found is not None and found.gain <= sk.DIM_BELOW:
                false.append((other, name, sk.tint_residual(sketches[other], sketches[name], found.gain),
                              found.box[1] == 0))
    sk.DIM_TINT, sk.DIMMED_TOP = rules
    return true, false


def main(seeds: list[int]) -> None:
    all_true, all_false = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            true, false = residuals(seed, Path(tmp))
            all_true += true
            all_false += [(seed, *row) for row in false]
            print(f"seed {seed}: {len(true)} dimmed covers, residual max {max((r for r, _ in true), default=0.0):.2f}"
                  f"; {len(false)} pages taken for another dimmed")
    tint = [r for r, _ in all_true]
    print(f"dimmed covers: {len(all_true)}, residual median {np.median(tint) if tint else 0:.2f}, max "
          f"{max(tint, default=0.0):.2f}, over DIM_TINT ({sk.DIM_TINT}): {sum(r > sk.DIM_TINT for r in tint)}; "
          f"reaching the top row: {sum(top for _, top in all_true)}")
    left = [row for row in all_false if row[3] <= sk.DIM_TINT]
    print(f"pages taken for another dimmed: {len(all_false)}; under DIM_TINT: {len(left)}; of those reaching the "
          f"top row: {sum(row[4] for row in left)}; left by both rules: {[row[:3] for row in left if not row[4]]}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or list(range(1, 41)))
