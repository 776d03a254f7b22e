"""Real Azur Lane screenshots (../shared/screens) through the shipped graph and ALAS's own templates."""

from __future__ import annotations

import json

import cv2
import pytest

from engine.config.assetpacks import AlasAssetPack
from engine.config.loader import load_graph
from engine.observe.observer import Observer


@pytest.fixture(scope="module")
def labelled(shared_dir):
    return json.loads((shared_dir / "screens" / "labels.json").read_text())["frames"]


def test_names_the_label_for_90_percent_and_never_a_wrong_page_or_popup(shared_dir, labelled):
    graph = load_graph()
    observers = {}
    right, wrong = [], []
    for item in labelled:
        server = item["server"]
        if server not in observers:
            pack = AlasAssetPack(shared_dir / "alas", server, fallback=graph.fallback_server)
            observers[server] = Observer(graph.for_server(server), pack)
        frame = cv2.imread(str(shared_dir / "screens" / item["file"]))
        observation = observers[server].observe(frame)
        named = [n for n in (observation.page, *observation.popups) if n]
        good = {item["label"], *item["also_ok"]} - {None}
        bad = [n for n in named if n not in good]
        if bad:
            wrong.append((item["file"], bad))
        elif item["label"] is None or any(n in good for n in named):
            right.append(item["file"])
    assert not wrong, f"misclassified: {wrong}"
    assert len(right) >= 0.9 * len(labelled), f"{len(right)}/{len(labelled)} right"
