"""Generated games (engine.sim.generate): the same seed writes the same bytes, every game is a valid graph whose pages
the engine tells apart as they move, and a range of seeds covers every feature of issue 45, point 1."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from engine.config.loader import check_graph, load_graph
from engine.observe.observer import Observer
from engine.sim.generate import FILES, LONG_SEEDS, RESOLUTIONS, corpus, generate
from engine.sim.generate.features import features
from engine.sim.style import load_style
from engine.sim.styledgame import StyledGame

ROOT = Path(__file__).resolve().parents[3]
VALID_SEEDS = range(100, 130)
FEATURE_SEEDS = range(1, 41)
FEATURES = {
    # structure
    "page:title_screen", "page:hub", "page:area", "page:list", "page:detail", "page:tab", "page:plain",
    "page:backkey", "page:icon", "tabs:tap", "tabs:swipe", "link:one_way", "exit:back_key_only",
    "exit:small_icon_only", "dead_end", "loading:varied", "pages:small", "pages:large", "control:shows_popup",
    "popup:cross", "popup:ok", "popup:tap_anywhere", "popup:back_only", "cross:tl", "cross:tr", "cross:bl",
    "cross:br", "cross:panel", "chain:2", "chain:3", "arrival:first_only",
    # drawing
    "portrait", "landscape", *(f"resolution:{w}x{h}" for w, h in RESOLUTIONS),
    *(f"backdrop:{k}" for k in ("flat", "gradient", "textured", "noise", "dark", "light")), "backdrop:per_area",
    "look:block", "look:text", "look:icon", "border", "borderless", "faint", "title:left", "title:centre",
    "title:right", "title:absent", "title:ocr", "script:latin", "script:cjk", "script:hangul", "moves:sway",
    "moves:timer", "moves:counter", "moves:particles", "transition:fade", "transition:slide",
}


@pytest.fixture(scope="module")
def drawn(tmp_path_factory) -> dict[int, Path]:
    """The games of FEATURE_SEEDS (which hold LONG_SEEDS), written once for the tests that read them."""
    root = tmp_path_factory.mktemp("games")
    return dict(zip(FEATURE_SEEDS, corpus(FEATURE_SEEDS, root)))


def _bytes(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in FILES}


def test_the_same_seed_writes_the_same_bytes(tmp_path):
    assert _bytes(generate(7, tmp_path / "a")) == _bytes(generate(7, tmp_path / "b"))
    assert _bytes(generate(8, tmp_path / "c")) != _bytes(tmp_path / "a")


def test_many_seeds_are_valid_graphs_with_valid_styles(tmp_path):
    for seed in VALID_SEEDS:
        folder = generate(seed, tmp_path / f"g{seed}")
        report = check_graph(folder)
        assert report.graph is not None and not report.errors, (seed, [str(p) for p in report.errors][:5])
        assert not report.warnings, (seed, [str(p) for p in report.warnings][:5])
        load_style(folder)
        pages = len(report.graph.pages) - 1  # the unknown page is no screen
        assert 5 <= pages <= 60, (seed, pages)
        assert tuple(report.graph.resolution) == RESOLUTIONS[seed % len(RESOLUTIONS)]


def test_a_range_of_seeds_covers_every_feature(drawn):
    seen: dict[str, list[int]] = {}
    for seed, folder in drawn.items():
        for feature in features(folder):
            seen.setdefault(feature, []).append(seed)
    missing = FEATURES - set(seen)
    assert not missing, f"seeds {FEATURE_SEEDS.start}-{FEATURE_SEEDS.stop - 1} never drew {sorted(missing)}"


def test_the_long_seeds_cover_both_orientations_and_every_resolution(drawn):
    folders = [drawn[seed] for seed in LONG_SEEDS]
    assert [f.name for f in folders] == [f"game{s}" for s in LONG_SEEDS]
    found = set().union(*(features(f) for f in folders))
    assert {"portrait", "landscape", *(f"resolution:{w}x{h}" for w, h in RESOLUTIONS)} <= found


@pytest.mark.parametrize("seed", [31, 35])  # 720x1280 CJK and 1280x720 Latin with OCR titles, art that sways
def test_every_page_is_told_apart_as_it_moves(tmp_path, seed):
    """The true graph names every page (and every popup over its page) at several moments of its moving parts,
    and a page remembered clean is never reported covered later."""
    folder = generate(seed, tmp_path / "g")
    graph = load_graph(folder).resolve()
    now = [0.0]
    game = StyledGame(graph, load_style(folder), clock=lambda: now[0])
    observer = Observer(graph, game.renderer.assets)
    wrong, timings = [], []
    for page in graph.pages[1:]:
        game.goto(page.name)
        for i, moment in enumerate((0.0, 0.7, 1.9, 3.1)):
            now[0] = moment
            started = time.perf_counter()
            frame = game.frame()
            timings.append(time.perf_counter() - started)
            if i == 0:
                observer.remember(page.name, frame)
            seen = observer.observe(frame, expected=page.name)
            if seen.page != page.name or seen.cover is not None:
                wrong.append((page.name, moment, seen.page, seen.ambiguous))
    for popup in graph.popups:
        game.goto(popup.pages[0] if popup.pages else "page_main")
        game.show_popup(popup.name)
        seen = observer.observe(game.frame())
        if popup.name not in seen.popups:
            wrong.append((popup.name, seen.page, seen.popups))
    print(f"seed {seed} {graph.resolution}: a frame in {np.median(timings) * 1000:.1f} ms (median), "
          f"{max(timings) * 1000:.1f} ms at most")
    assert not wrong, wrong


def test_popups_show_in_play(drawn):
    """A dialog shows on first arriving at its page (not the second time), and closing a chain's first popup
    shows the next."""
    folder = next(f for f in drawn.values() if {"arrival:first_only", "chain:2"} <= features(f))
    style = load_style(folder)
    graph = load_graph(folder).resolve()
    game = StyledGame(graph, style)
    arrival = next(a for a in style.arrivals if a.first_only)
    game._arrive(arrival.page)
    assert arrival.popup in game.truth()["popups"]
    game.goto(arrival.page)
    game._arrive(arrival.page)
    assert arrival.popup not in game.truth()["popups"]
    first, second = next(iter(style.chains.items()))
    game.goto("page_main")
    game.show_popup(first)
    game._close(graph.popup(first))
    assert game.truth()["popups"] == [second]


def test_graphs_without_a_style_are_drawn_as_before(tmp_path):
    from engine.sim import SimGame, start_embedded

    graph = load_graph(ROOT / "tests" / "data" / "graphs" / "good").resolve()
    plain = SimGame(graph).frame()
    with start_embedded(graph) as sim:
        assert type(sim.game) is SimGame and np.array_equal(sim.game.frame(), plain)


def test_the_cli_writes_a_game_the_simulator_plays(tmp_path):
    out = tmp_path / "game"
    run = [sys.executable, "-m", "engine"]
    done = subprocess.run([*run, "sim", "generate", "--seed", "3", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert _bytes(out) == _bytes(generate(3, tmp_path / "same"))
    png = tmp_path / "main.png"
    done = subprocess.run([*run, "sim", "render", "--graph", str(out), "page_main", str(png)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and png.stat().st_size > 0, done.stderr


@pytest.mark.parametrize("origin", [0.0, 1000.0, 250_000.0])  # a fake clock, a virtual one, a long-up machine
def test_a_timer_counts_down_from_its_start_whatever_the_clock_origin(tmp_path, origin):
    """The moving parts run on the game's own age: the explorer (time.monotonic, the machine's uptime) and its gotos
    (a virtual clock from 1000) see the same game. Before, a countdown stood at 00:00:00 on a machine up longer
    than its start, and ticked on the virtual clock (seed 509657: the explorer signed a page by its still timer,
    and 9 of 10 gotos to it then ended stuck)."""
    folder = generate(1, tmp_path / "g")
    style = load_style(folder)
    page = next(p for p, scene in style.scenes.items() if any(t.kind == "timer" for t in scene.tickers))
    ticker = next(t for t in style.scenes[page].tickers if t.kind == "timer")
    now = [origin]
    game = StyledGame(load_graph(folder).resolve(), style, clock=lambda: now[0])
    game.goto(page)
    x1, y1, x2, y2 = ticker.area
    looks = []
    for moment in (0.0, 2.0, 4.0):
        now[0] = origin + moment
        looks.append(game.frame()[y1:y2, x1:x2].copy())
    assert all(np.abs(a.astype(int) - b).max() > 0 for a, b in zip(looks, looks[1:]))


def test_a_loading_screen_draws_on_the_game_age_whatever_the_clock_origin(tmp_path):
    """The loading bar, too, is drawn at the game's age: a run at any clock origin shows the same loading screen at
    the same moment of the game (before, its phase followed the machine's uptime)."""
    folder = generate(1, tmp_path / "g")
    graph, style = load_graph(folder).resolve(), load_style(folder)
    assert style.loading_bar is not None
    looks = []
    for origin in (1000.0, 250_000.3):
        now = [origin]
        game = StyledGame(graph, style, clock=lambda: now[0])
        start = graph.page(graph.start_page)
        link = next(l for l in start.links if (graph.page(l.to).loading or 0) > 0)
        x1, y1, x2, y2 = game._buttons[link.action.button].click_area
        now[0] = origin + 0.5
        game.tap((x1 + x2) // 2, (y1 + y2) // 2)
        now[0] = origin + 1.3
        assert game.truth()["loading"]
        looks.append(game.frame())
    assert np.array_equal(looks[0], looks[1])


def test_short_seeds_agree_within_one_run_and_differ_per_caller(monkeypatch):
    """Two xdist workers collect the same tests only if they draw the same seeds: processes sharing the run's
    identity (RUN_ENV) agree; each benchmark (its salt) has its own; GEN_SEEDS still replays."""
    from engine.sim.generate import RUN_ENV, SEEDS_ENV, short_seeds

    monkeypatch.delenv(SEEDS_ENV, raising=False)
    monkeypatch.setenv(RUN_ENV, "run-1")
    assert short_seeds(2, salt="a") == short_seeds(2, salt="a")
    assert short_seeds(2, salt="a") != short_seeds(2, salt="b")
    first = short_seeds(2, salt="a")
    monkeypatch.setenv(RUN_ENV, "run-2")
    assert short_seeds(2, salt="a") != first
    monkeypatch.setenv(SEEDS_ENV, "4,17")
    assert short_seeds(2, salt="a") == [4, 17]
