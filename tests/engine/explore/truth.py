"""Scoring a draft against the graph the simulator played (tests only; the explorer never sees the truth).

Each draft page is labelled by the true graph's observer on its member frames (the majority answer); page recall
and precision follow a one-to-one matching of labels; a draft link counts when both ends carry the true pages'
labels and the true page has a link of that kind there (a tap inside the true button's click area, the same key,
a swipe the simulator would take). The benchmark (benchmarks/, another helper's) measures the same at scale.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import cv2

from engine.config.assetpacks import load_pack
from engine.config.loader import load_graph
from engine.config.schema import KeyAction, SwipeAction, TapAction
from engine.explore.draft import load_draft
from engine.observe.observer import Observer
from engine.sim import SyntheticAssets
from engine.sim.game import _same_direction


def score(draft_dir: Path, truth_dir: Path, assets: Path | None = None) -> dict:
    truth = load_graph(truth_dir).resolve(None)
    pack = load_pack(assets, truth.server, fallback=truth.fallback_server) if assets else SyntheticAssets(truth)
    observer = Observer(truth, pack)
    draft = load_draft(draft_dir)
    labels: dict[str, str | None] = {}
    for page in draft.pages:
        seen = Counter()
        for rel in page.members:
            frame = cv2.imread(str(draft_dir / rel))
            seen[observer.observe(frame).page] += 1
        labels[page.name] = seen.most_common(1)[0][0]
    true_pages = {p.name for p in truth.pages if p.signatures}
    matched = {}
    for name, label in labels.items():
        if label in true_pages and label not in matched.values():
            matched[name] = label
    buttons = {b.name: b for b in truth.buttons}

    def true_link(src: str, dst: str, action) -> bool:
        for link in truth.page(src).links:
            if link.to != dst:
                continue
            a = link.action
            if isinstance(a, TapAction) and action.type == "tap":
                x1, y1, x2, y2 = buttons[a.button].click_area if a.button else (
                    a.point[0] - 20, a.point[1] - 20, a.point[0] + 20, a.point[1] + 20)
                if x1 <= action.point[0] < x2 and y1 <= action.point[1] < y2:
                    return True
            if isinstance(a, KeyAction) and action.type == "key" and a.key == action.key:
                return True
            if isinstance(a, SwipeAction) and action.type == "swipe" and _same_direction(
                    a, (*action.start, *action.end)):
                return True
        return False

    good_links = [link for link in draft.links if link.from_ in matched and link.to in matched
                  and true_link(matched[link.from_], matched[link.to], link.action)]
    true_links = {(p.name, link.to, repr(link.action)) for p in truth.pages for link in p.links}
    found_true = set()
    for link in good_links:
        for p in truth.pages:
            if p.name == matched[link.from_]:
                for tl in p.links:
                    if tl.to == matched[link.to] and true_link(p.name, tl.to, link.action):
                        found_true.add((p.name, tl.to, repr(tl.action)))
    return {
        "labels": labels,
        "page_recall": len(set(matched.values())) / len(true_pages),
        "page_precision": len(matched) / max(1, len(draft.pages)),
        "link_recall": len(found_true) / max(1, len(true_links)),
        "link_precision": len(good_links) / max(1, len(draft.links)),
        "popups": [p.name for p in draft.popups],
    }
