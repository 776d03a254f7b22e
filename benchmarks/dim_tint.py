"""How far a dimmed page strays from its own colours times the dimming, against another page that only looks
dimmed: the figures behind engine.explore.sketch.DIM_TINT (docs/benchmarks/generated.md, "A darker page is not a
dimmed one").

    python -m benchmarks.dim_tint 1 2 3 ...    # generated seeds; prints both distributions

For every generated game: each page's first frame under each of the game's blocking popups (the simulator dims the
page and draws the panel), and each page's first frame against every other page's. Where
engine.explore.sketch.cover calls the second a dimmed cover of the first, the tint residual (the median, over the
cells the dimming leaves alike, of the largest channel difference from the reference times the gain) is printed.
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


def residuals(seed: int, root: Path) -> tuple[list[float], list[tuple[str, str, float]]]:
    """(residuals of true dimmings, (page, page under, residual) of pages cover() calls another dimmed)."""
    folder = generate(seed, root / f"game{seed}")
    graph = load_graph(folder).resolve("en")
    renderer = StyledRenderer(graph, style_beside(folder))
    names = [page.name for page in graph.pages if page.name != graph.unknown_page]
    firsts = {name: renderer.page(name) for name in names}
    sketches = {name: sk.sketch(frame) for name, frame in firsts.items()}
    true, false = [], []
    rule, sk.DIM_TINT = sk.DIM_TINT, float("inf")  # every cover the gray alone calls dimmed, the rule off
    blocking = [popup for popup in graph.popups if popup.blocking]
    for name in names:
        for popup in blocking:
            covered = sk.sketch(renderer.with_popups(firsts[name], [popup]))
            found = sk.cover(covered, sketches[name])
            if found is not None and found.gain <= sk.DIM_BELOW:
                true.append(sk.tint_residual(covered, sketches[name], found.gain))
        for other in names:
            if other == name:
                continue
            found = sk.cover(sketches[other], sketches[name])
            if found is not None and found.gain <= sk.DIM_BELOW:
                false.append((other, name, sk.tint_residual(sketches[other], sketches[name], found.gain)))
    sk.DIM_TINT = rule
    return true, false


def main(seeds: list[int]) -> None:
    all_true, all_false = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in seeds:
            true, false = residuals(seed, Path(tmp))
            all_true += true
            all_false += [(seed, *row) for row in false]
            print(f"seed {seed}: {len(true)} dimmed covers, residual max "
                  f"{max(true, default=0.0):.2f}; {len(false)} pages taken for another dimmed"
                  + (f", residual min {min(r for *_, r in false):.2f}" if false else ""))
    print(f"dimmed covers: {len(all_true)}, residual median {np.median(all_true) if all_true else 0:.2f}, "
          f"99th percentile {np.percentile(all_true, 99) if all_true else 0:.2f}, max {max(all_true, default=0.0):.2f}, "
          f"over DIM_TINT ({sk.DIM_TINT}): {sum(r > sk.DIM_TINT for r in all_true)}; the largest "
          f"{sorted(round(r, 2) for r in all_true)[-8:]}")
    print(f"pages taken for another dimmed: {len(all_false)}, under DIM_TINT ({sk.DIM_TINT}): "
          f"{sum(r <= sk.DIM_TINT for *_, r in all_false)}; the smallest over it "
          f"{sorted(round(r, 1) for *_, r in all_false if r > sk.DIM_TINT)[:12]}")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or list(range(1, 41)))
