"""Covered pages (engine.observe.cover, issue 36): a page is verified only when nothing covers it.

The API on its own (a clean frame, a dialog over a dimmed page, one drawn without dimming, an evenly dimmed page,
another screen), then through the observer: every page of the shipped graph and of tests/data/graphs/good, clean
and under the chaos scenario, is never reported covered; the same pages under tests/engine/new_dialog.py's dialog
(dimmed to 45 %, or not) always are, with and without a clean reference; real screenshots (../shared/screens)
whose label names a page and no popup are never reported covered, judged by ALAS's own templates and against
each other.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from pathlib import Path

import cv2
import numpy as np
import pytest

from engine.config.assetpacks import AlasAssetPack
from engine.config.loader import load_graph
from engine.config.schema import TapAction
from engine.navigation.actuator import Actuator
from engine.observe.cover import CoverReport, _largest, covered, thumb
from engine.observe.observer import Observer
from engine.sim import SimGame, SyntheticAssets
from engine.sim.scenario import Scenario
from tests.engine import new_dialog
from tests.engine.sim.conftest import FakeClock
from tests.speed import within

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = {"azurlane": None, "good": ROOT / "tests" / "data" / "graphs" / "good"}


@pytest.fixture(scope="module", params=list(GRAPHS))
def world(request):
    graph = load_graph(GRAPHS[request.param]).resolve(None) if GRAPHS[request.param] else load_graph(server="en")
    assets = SyntheticAssets(graph)
    return graph, assets, Observer(graph, assets), dict(_frames(graph, assets))


def _pages(graph):
    return [p.name for p in graph.pages if p.signatures and p.name != graph.unknown_page]


def _frames(graph, assets, dialog=None):
    game = SimGame(graph, assets=assets)
    for page in _pages(graph):
        game.goto(page)
        if dialog is not None:
            game.show_overlay(dialog)
        yield page, game.frame()


# ------------------------------------------------------------------------------------------------------ the API

def test_the_api_tells_a_dialog_over_a_page_from_the_page_itself():
    graph = load_graph(server="en")
    game = SimGame(graph, assets=SyntheticAssets(graph))
    game.goto("page_reward")
    clean = game.frame()
    reference = thumb(clean)
    assert covered(clean, reference) == CoverReport(False)
    assert not covered(game.frame(), clean).covered  # a frame works as a reference too

    game.show_overlay(new_dialog.offer(dim=new_dialog.DIM))
    report = covered(game.frame(), reference)
    x, y = new_dialog.AT
    w, h = new_dialog.SIZE
    assert report.covered and report.reason == "a panel over the dimmed page", report
    assert abs(report.dimmed_ratio - new_dialog.DIM) < 0.05
    assert report.box is not None and all(abs(a - b) <= 16 for a, b in zip(report.box, (x, y, x + w, y + h)))

    game.overlays.clear()
    game.show_overlay(new_dialog.offer())  # no dimming: a large region unlike the page
    report = covered(game.frame(), reference)
    assert report.covered and report.dimmed_ratio > 0.95 and report.box is not None, report

    dim = (clean * 0.5).astype(np.uint8)  # a transition dims the page evenly: nothing over it
    report = covered(dim, reference)
    assert not report.covered and report.dimmed_ratio < 0.6, report
    game.overlays.clear()
    game.goto("page_commission")  # another screen altogether is not "covered" (the page's signatures decide)
    assert not covered(game.frame(), reference).covered
    assert covered(clean[:360], reference).reason == "the reference is of another size"


def test_the_check_is_cheap_on_a_clean_frame(capsys):
    graph = load_graph(server="en")
    game = SimGame(graph, assets=SyntheticAssets(graph))
    game.goto("page_main")
    frame = game.frame()
    reference = thumb(frame)
    rounds = 200
    start = time.perf_counter()
    for _ in range(rounds):
        covered(frame, reference)
    ms = (time.perf_counter() - start) * 1000 / rounds
    with capsys.disabled():
        print(f"\ncovered() on a clean 1280x720 frame: {ms:.3f} ms")
    # 3x headroom over the ~0.3-1 ms measured on a busy 2-core machine; the benchmark compares
    within(ms, 5.0, "covered() on a clean frame, per call (ms)")


def test_opening_never_grows_the_largest_region():
    """covered() skips the opening when the largest region is below LARGE: that is only the same answer while
    _largest (closing, hole filling) of opened cells, a subset, is never larger than of the cells themselves."""
    rng = np.random.default_rng(36)
    kernel = np.ones((3, 3), np.uint8)
    for i in range(1500):
        cells = rng.random((45, 80)) < rng.random() * (0.3 if i % 2 else 1.0)
        for _ in range(int(rng.integers(0, 4))):  # blocks, rings and lines of change
            y, x, h, w = (int(v) for v in rng.integers(0, [45, 80, 20, 40]))
            cells[y:y + h, x:x + w] = True
            cells[y + 1:y + h - 1, x + 1:x + w - 1] = bool(i % 3)
        opened = cv2.morphologyEx(cells.astype(np.uint8), cv2.MORPH_OPEN, kernel) > 0
        assert _largest(opened)[1] <= _largest(cells)[1], i


@pytest.mark.parametrize("box", [(56, 35, 66, 43), (70, 10, 79, 20), (10, 1, 20, 9), (1, 10, 9, 20), (56, 35, 66, 45)],
                         ids=["bottom", "right", "top", "left", "reaching_the_bottom"])
def test_a_region_one_cell_short_of_the_frame_edge_keeps_its_own_box(box):
    """A dialog's box ends where the dialog does, not at the frame's edge a cell beyond it (the closing's erosion
    never ate at the edge: a card 24 pixels above the bottom got a box to the bottom, and the dismissal search's
    bottom corners fell below its close spot); a region that reaches the edge still does."""
    cells = np.zeros((45, 80), bool)
    x1, y1, x2, y2 = box
    cells[y1:y2, x1:x2] = True
    assert _largest(cells)[0] == box


# ----------------------------------------------------------------------------------------- through the observer

def test_no_page_is_reported_covered_on_clean_frames(world):
    graph, assets, observer, clean = world
    observer.references.clear()
    for page, frame in clean.items():
        obs = observer.observe(frame, expected=page)
        assert obs.page == page and obs.cover is None, (page, obs.cover)  # by its templates
        observer.remember(page, frame)
        obs = observer.observe(frame, expected=page)
        assert obs.cover is None, (page, obs.cover)  # against its reference
        assert "cover" in obs.latency_ms


@pytest.mark.parametrize("dim", [new_dialog.DIM, 1.0], ids=["dimmed", "not_dimmed"])
def test_a_page_under_the_dialog_is_reported_covered(world, dim):
    graph, assets, observer, clean = world
    observer.references.clear()
    named = 0
    for page, frame in _frames(graph, assets, new_dialog.offer(dim=dim)):
        if dim < 1.0:  # no reference yet: the page's own templates tell that it is dimmed
            obs = observer.observe(frame, expected=page)
            assert obs.page != page or obs.cover is not None, page
        observer.remember(page, clean[page])
        obs = observer.observe(frame, expected=page)
        named += obs.page == page
        assert obs.page != page or (obs.cover is not None and obs.cover.covered), page
    assert named > 0  # some pages stay recognised under it: those are the ones that matter


def _tap_point(graph, action):
    return Actuator(None, graph).tap_point(action, None)


def _into(graph):
    """For each page, a page with a tap link to it and that link's tap point (None: no tap link leads there)."""
    into = {}
    for page in graph.pages:
        for link in page.links:
            if isinstance(link.action, TapAction) and page.name != link.to and page.signatures:
                into.setdefault(link.to, (page.name, _tap_point(graph, link.action)))
    return into


@pytest.mark.parametrize("references", [False, True], ids=["by_templates", "against_references"])
def test_no_page_is_reported_covered_under_the_chaos_scenario(world, references):
    """Every page reached by a tap under the chaos scenario (popups, loading, black frames, dropped taps, unknown
    screens), looked at while the hop settles and after: a page named without popups is never covered on a frame
    the simulator says is clean; once without any reference (its templates judge), once against references."""
    graph, assets, observer, clean = world
    observer.references.clear()
    if references:
        for page, frame in clean.items():
            observer.remember(page, frame)
    clock = FakeClock()
    scenario = Scenario.from_file(ROOT / "tests" / "data" / "scenarios" / "chaos.yaml")
    game = SimGame(graph, assets=assets, scenario=scenario, seed=11, clock=clock, sleep=clock.sleep)
    into, seen, looked, settled = _into(graph), Counter(), 0, set()
    for page in _pages(graph):
        for _ in range(4):  # (chaos may drop the tap or show a popup: a few tries to see the page clean)
            source, point = into.get(page, (page, None))
            game.goto(source)
            if point is not None:
                game.tap(*point)
            for step in (0.15, 0.15, 0.15, 0.6, 1.2):  # during the transition and after it
                clock.advance(step)
                frame, truth = game.frame(), game.truth()
                obs = observer.observe(frame, expected=page)
                looked += 1
                is_clean = not (truth["popups"] or truth["loading"] or truth["transition"] or truth["unknown"])
                if obs.page is not None and not obs.popups and obs.cover is not None:
                    seen["transition" if truth["transition"] else "settled"] += 1
                    assert not is_clean, (truth, obs.cover)
                if is_clean and truth["page"] == page and obs.page == page:
                    settled.add(page)
            if page in settled:
                break
    missed = set(_pages(graph)) - settled
    assert len(missed) <= len(_pages(graph)) // 10, sorted(missed)  # (a page chaos hid every time is rare)
    print(f"covered reports on transition frames: {dict(seen)} of {looked} looks; {len(settled)} pages seen clean")


# ------------------------------------------------------------------------- pages that move, count and fade

def _lively(frame: np.ndarray, rng: random.Random) -> dict[str, np.ndarray]:
    """What a real page does on its own, drawn over `frame` (1280x720): a character standing on the left sways
    (shifted by up to 20 px) or breathes (scaled by 4 %), counters change, a transition dims it evenly, and all
    of it at once. None of it is something over the page."""
    x1, y1, x2, y2 = 60, 70, 540, 660  # where a main page's secretary stands (../shared/screens page_main)

    def sway(image, dx, dy, zoom=1.0):
        out, part = image.copy(), image[y1:y2, x1:x2]
        if zoom != 1.0:
            part = cv2.resize(part, None, fx=zoom, fy=zoom)[:y2 - y1, :x2 - x1]
        out[y1:y2, x1:x2] = cv2.warpAffine(part, np.float32([[1, 0, dx], [0, 1, dy]]), (x2 - x1, y2 - y1),
                                           borderMode=cv2.BORDER_REPLICATE)
        return out

    def count(image):
        out = image.copy()
        for x, y in ((700, 8), (880, 8), (1100, 8), (1150, 600)):  # oil, coins, gems, a timer
            colour = [int(c) for c in cv2.mean(out[y:y + 34, x:x + 130])[:3]]
            cv2.rectangle(out, (x, y), (x + 130, y + 34), colour, -1)
            cv2.putText(out, str(rng.randint(10000, 999999)), (x + 4, y + 28), cv2.FONT_HERSHEY_SIMPLEX, 0.9,
                        (255, 255, 255), 2)
        return out

    return {"sway": sway(frame, rng.choice((5, 12, 20)), rng.choice((3, 6, 10))),
            "breathe": sway(frame, 0, 0, 1.04), "counters": count(frame),
            "fade": (frame * 0.6).astype(np.uint8),
            "all": (count(sway(frame, 8, 4)) * 0.7).astype(np.uint8)}


def _dialog_over(frame: np.ndarray, dim: float) -> np.ndarray:
    x, y = new_dialog.AT
    w, h = new_dialog.SIZE
    out = frame if dim == 1.0 else (frame * dim).astype(np.uint8)
    out = out.copy()
    out[y:y + h, x:x + w] = new_dialog.panel()
    return out


def _never_covered_while_lively_and_always_under_the_dialog(name: str, frame: np.ndarray, rng) -> int:
    reference = thumb(frame, detail=True)
    for what, lively in _lively(frame, rng).items():
        report = covered(lively, reference)
        assert not report.covered, (name, what, report)
        for dim in (new_dialog.DIM, 1.0):  # (the check still sees a dialog over a page doing all that)
            report = covered(_dialog_over(lively, dim), reference)
            assert report.covered, (name, what, dim, report)
    return 1


def test_pages_that_sway_count_and_fade_on_their_own_are_not_covered(world):
    """A simulator draws pages still; real ones animate, carry changing counters and dim for transitions."""
    graph, assets, observer, clean = world
    rng = random.Random(36)
    assert sum(_never_covered_while_lively_and_always_under_the_dialog(page, frame, rng)
               for page, frame in clean.items()) == len(clean)


def test_real_pages_that_sway_count_and_fade_on_their_own_are_not_covered(screens):
    rng, checked = random.Random(36), 0
    for item, frame in screens:
        if item["label"]:
            frame = cv2.resize(frame, (1280, 720), interpolation=cv2.INTER_AREA)
            checked += _never_covered_while_lively_and_always_under_the_dialog(item["file"], frame, rng)
    assert checked >= 10, checked


@pytest.fixture(scope="module")
def screens(shared_dir):
    labelled = json.loads((shared_dir / "screens" / "labels.json").read_text())["frames"]
    return [(item, cv2.imread(str(shared_dir / "screens" / item["file"]))) for item in labelled
            if item["label"] is None or item["label"].startswith("page_")]  # no popup in the label


def test_real_screenshots_of_a_page_without_popups_are_never_reported_covered(shared_dir, screens):
    graph = load_graph()
    observers = {}
    judged = against = 0
    for item, frame in screens:
        server = item["server"]
        if server not in observers:
            pack = AlasAssetPack(shared_dir / "alas", server, fallback=graph.fallback_server)
            observers[server] = Observer(graph.for_server(server), pack)
        obs = observers[server].observe(frame)
        assert obs.cover is None, (item["file"], obs.cover)  # ALAS's own templates: not dimmed
        judged += obs.page is not None
        for other, other_frame in screens:  # every other clean frame of the same page, as its reference
            if other is not item and item["label"] and other["label"] == item["label"] and \
                    other_frame.shape == frame.shape:
                report = covered(frame, thumb(other_frame))
                assert not report.covered, (item["file"], other["file"], report)
                against += 1
    assert judged >= 5 and against >= 50, (judged, against)
