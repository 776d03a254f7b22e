"""Pages the cells call one, and whether their words tell them apart: the figures behind engine.explore.words
(docs/benchmarks/generated.md, "Pages alike but for their words").

    python -m benchmarks.alike_pages 41 42 43 ...    # generated seeds; prints the counts and the pairs left

For every generated game: each page's first frame against every other page's (pairs the explorer would merge: the
cells match in SAME_PAGE and all but STABLE_SLACK differ at most, engine.explore.sketch.page_difference, outside the
first page's moving cells), and each moving page against itself at 6 later moments of its sway or its clock (moving
cells learnt over the first 6 looks, as engine.explore.atlas keeps them). A pair is told apart when
engine.explore.words.Words.apart says so with the explore command's reader (RapidOCR): it should be every pair of
two pages and no look at one page.
"""

from __future__ import annotations

import itertools
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks.moving_colour import moving_cells
from engine.config.loader import load_graph
from engine.explore import sketch as sk
from engine.explore.atlas import STABLE_SLACK
from engine.explore.words import Words
from engine.faces.commands.explore import _reader
from engine.sim.generate import generate
from engine.sim.style import style_beside
from engine.sim.styled import StyledRenderer

LOOKS, APART_S, LEARN = 12, 0.37, 6


def measure(seed: int, root: Path, words: Words, frames: dict) -> tuple[list[tuple], list[tuple]]:
    """(pairs of two pages the cells merge, looks at one page the words split) of one generated game, each row
    (seed, what, told apart)."""
    folder = generate(seed, root / f"game{seed}")
    graph = load_graph(folder).resolve("en")
    renderer = StyledRenderer(graph, style_beside(folder))
    names = [page.name for page in graph.pages if page.name != graph.unknown_page]
    frames.clear()
    firsts = {}
    for name in names:
        frames[f"{name}@0"] = renderer.animate(name, renderer.page(name), 0.0)
        firsts[name] = sk.sketch(frames[f"{name}@0"])
    moving: dict[str, np.ndarray] = {}
    same = []
    for name in names:
        if not renderer.moves(name):
            continue
        still = renderer.page(name)
        looks = [renderer.animate(name, still, APART_S * i) for i in range(LOOKS)]
        sketches = [sk.sketch(look) for look in looks]
        cells = moving_cells(sketches[:LEARN])
        moving[name] = cells
        for i in range(LEARN, LOOKS):
            frames[f"{name}@{i}"] = looks[i]
            if sk.page_difference(sketches[i], firsts[name], cells)[1] <= STABLE_SLACK:
                same.append((seed, f"{name} at {APART_S * i:.1f} s",
                             words.apart(sketches[i], firsts[name], cells, f"{name}@{i}", f"{name}@0")))
    other = []
    for a, b in itertools.permutations(names, 2):
        share, stable = sk.page_difference(firsts[b], firsts[a], moving.get(a))
        if share >= sk.SAME_PAGE and stable <= STABLE_SLACK:
            other.append((seed, f"{b} on {a}", words.apart(firsts[b], firsts[a], moving.get(a), f"{b}@0", f"{a}@0")))
    return other, same


def main(seeds: list[int]) -> None:
    frames: dict = {}
    words = Words(_reader(), frames.get)
    other, same = [], []
    with tempfile.TemporaryDirectory() as root:
        for seed in seeds:
            o, s = measure(seed, Path(root), words, frames)
            other += o
            same += s
            print(f"seed {seed}: {len(o)} pairs merged by the cells, {sum(r[2] for r in o)} told apart by words; "
                  f"{len(s)} looks at one page, {sum(r[2] for r in s)} split", file=sys.stderr, flush=True)
    print(f"seeds {seeds[0]}..{seeds[-1]} ({len(seeds)}): {len(other)} ordered pairs of two pages the cells call one, "
          f"{sum(r[2] for r in other)} told apart by their words; {len(same)} later looks at one moving page, "
          f"{sum(r[2] for r in same)} split by words")
    for row in [r for r in other if not r[2]][:8]:
        print(f"  left merged: seed {row[0]} {row[1]}")
    for row in [r for r in same if r[2]][:8]:
        print(f"  split: seed {row[0]} {row[1]}")


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or list(range(41, 81)))
