"""How far apart two frames' moving cells are in mean colour, on a page against itself and against other pages: the
figures behind engine.explore.sketch.MOVED_COLOUR (docs/benchmarks/generated-long-form-first-cases.md).

    python -m benchmarks.moving_colour 41 42 43 ...    # generated seeds; prints the spread and the close pairs

For every page of a generated game that moves (swaying art, sparks, timers), drawn by its style at 16 moments 0.37 s
apart: the cells seen moving over the first six (dilated by one cell, as engine.explore.atlas keeps them), then

- same page: each later moment against the first, where the moving cells alone decide (without them the frame
  differs from the first in more than STABLE_SLACK cells);
- another page: any other page's first frame against this one's, where the moving cells alone decide (it
  matches in SAME_PAGE of the cells, and in all but STABLE_SLACK when the moving cells are excused, but not without
  them): a pair the explorer merges when the mean colour stays under the bound.
"""

from __future__ import annotations

import itertools
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np

from engine.config.loader import load_graph
from engine.explore import sketch as sk
from engine.explore.atlas import STABLE_SLACK
from engine.sim.generate import generate
from engine.sim.style import style_beside
from engine.sim.styled import StyledRenderer

LOOKS, APART_S, LEARN = 16, 0.37, 6
BOUNDS = (16.0, 6.0)


def apart(frame: sk.Sketch, member: sk.Sketch, moving: np.ndarray) -> float:
    """The largest per-channel change of the moving cells' mean colour (what page_difference weighs)."""
    return float(np.abs(frame.colour[moving].mean(axis=0) - member.colour[moving].mean(axis=0)).max())


def excused(frame: sk.Sketch, member: sk.Sketch, moving: np.ndarray) -> int:
    """Cells that differ for good when the moving cells are excused whatever their colour."""
    kept, sk.MOVED_COLOUR = sk.MOVED_COLOUR, float("inf")
    try:
        return sk.page_difference(frame, member, moving)[1]
    finally:
        sk.MOVED_COLOUR = kept


def moving_cells(sketches: list[sk.Sketch]) -> np.ndarray:
    """The cells seen moving between consecutive looks, dilated by one cell, as engine.explore.atlas keeps them."""
    moving = np.zeros(sketches[0].colour.shape[:2], bool)
    for a, b in zip(sketches, sketches[1:]):
        moving |= ~sk.cell_match(a, b)
    return cv2.dilate(moving.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)


def measure(seed: int, root: Path) -> tuple[list[tuple], list[tuple]]:
    """(same-page rows, other-page rows) of one generated game: (seed, page(s), mean colour apart)."""
    folder = generate(seed, root / f"game{seed}")
    graph = load_graph(folder).resolve("en")
    renderer = StyledRenderer(graph, style_beside(folder))
    looks: dict[str, tuple[list[sk.Sketch], np.ndarray]] = {}
    firsts = {page.name: sk.sketch(renderer.animate(page.name, renderer.page(page.name), 0.0))
              for page in graph.pages if page.name != graph.unknown_page}
    for page in graph.pages:
        if page.name == graph.unknown_page or not renderer.moves(page.name):
            continue
        still = renderer.page(page.name)
        sketches = [sk.sketch(renderer.animate(page.name, still, APART_S * i)) for i in range(LOOKS)]
        moving = moving_cells(sketches[:LEARN])
        if moving.any():
            looks[page.name] = (sketches, moving)
    same, other = [], []
    for name, (sketches, moving) in looks.items():
        for later in sketches[LEARN:]:
            if sk.page_difference(later, sketches[0], None)[1] > STABLE_SLACK:
                same.append((seed, name, apart(later, sketches[0], moving)))
    for a, b in itertools.permutations(firsts, 2):
        if a not in looks:
            continue
        (member, *_), moving = looks[a]
        frame = firsts[b]
        share, plain = sk.page_difference(frame, member, None)
        if share >= sk.SAME_PAGE and excused(frame, member, moving) <= STABLE_SLACK < plain:
            other.append((seed, f"{b} on {a}", apart(frame, member, moving)))
    return same, other


def main(seeds: list[int]) -> None:
    same, other = [], []
    with tempfile.TemporaryDirectory() as root:
        for seed in seeds:
            s, o = measure(seed, Path(root))
            same += s
            other += o
    print(f"seeds {seeds[0]}..{seeds[-1]} ({len(seeds)}): {len(same)} same-page pairs, {len(other)} other-page pairs "
          "decided by the moving cells alone")
    if same:
        print(f"same page: mean colour apart at most {max(r[2] for r in same):.1f}")
    if other:
        print(f"other pages: at least {min(r[2] for r in other):.1f}; " + ", ".join(
            f"{sum(1 for r in other if r[2] <= bound)} at or under {bound:g}" for bound in BOUNDS))
        for row in sorted(other, key=lambda r: r[2])[:5]:
            print(f"  seed {row[0]} {row[1]}: {row[2]:.1f}")


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or list(range(41, 81)))
