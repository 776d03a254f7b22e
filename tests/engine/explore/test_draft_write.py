"""The draft record round-trips, its signatures tell pages apart, and the graph written from it loads and observes
the simulator's frames as the pages they came from (tests/data/graphs/good, drawn by engine.sim)."""

from __future__ import annotations

from pathlib import Path

import cv2
import pytest

from engine.config.assetpacks import load_pack
from engine.config.loader import check_graph, load_graph
from engine.core.errors import ConfigError
from engine.explore.draft import Draft, DraftLink, DraftPage, DraftPopup, TapStep, load_draft, save_draft
from engine.explore.signatures import stable_signatures
from engine.explore.write import write_graph
from engine.observe.observer import Observer
from engine.sim import SimGame

GOOD = Path(__file__).parents[2] / "data" / "graphs" / "good"


@pytest.fixture(scope="module")
def frames():
    graph = load_graph(GOOD).resolve(None)
    game = SimGame(graph)
    out = {}
    for page in ("page_login", "page_main", "page_shop", "page_mail", "page_settings"):
        game.goto(page)
        out[page] = game.frame()
    game.goto("page_main")
    game.show_popup("popup_announcement")
    out["popup"] = game.frame()
    return out


def _draft(tmp_path: Path, frames) -> Draft:
    pages = []
    names = [n for n in frames if n != "popup"]
    for name in names:
        path = f"evidence/{name}/0001.png"
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        cv2.imwrite(str(tmp_path / path), frames[name])
        sigs = stable_signatures([frames[name]], [frames[o] for o in frames if o != name], prefix=name)
        pages.append(DraftPage(name=name, members=[path], signatures=sigs, visits=1))
    path = "evidence/popup_1/0001.png"
    (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(tmp_path / path), frames["popup"])
    popup = DraftPopup(name="popup_1", over=["page_main"], box=(880, 80, 1040, 240), members=[path],
                       signatures=stable_signatures([frames["popup"]], [frames[n] for n in names], prefix="popup_1"),
                       dismiss=TapStep(type="tap", point=(930, 170)))
    links = [DraftLink(**{"from": "page_login", "to": "page_main", "action": TapStep(type="tap", point=(640, 590)),
                          "seen": 2, "tried": 2})]
    return Draft(game="draft_demo", resolution=(1280, 720), start_page="page_login", pages=pages, links=links,
                 popups=[popup])


def test_draft_round_trips(tmp_path, frames):
    draft = _draft(tmp_path, frames)
    save_draft(draft, tmp_path)
    assert load_draft(tmp_path) == draft
    assert "from: page_login" in (tmp_path / "draft.yaml").read_text()


def test_bad_draft_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_draft(tmp_path)
    (tmp_path / "draft.yaml").write_text("format: engine-draft/1\ngame: x\nresolution: [1, 2]\npages: 3\n")
    with pytest.raises(ConfigError, match="pages"):
        load_draft(tmp_path)
    (tmp_path / "draft.yaml").write_text("[: oops")
    with pytest.raises(ConfigError, match="not YAML"):
        load_draft(tmp_path)


def test_written_graph_validates_and_observes_its_pages(tmp_path, frames):
    draft = _draft(tmp_path, frames)
    save_draft(draft, tmp_path)
    write_graph(draft, tmp_path)
    report = check_graph(tmp_path)
    assert report.ok, [str(p) for p in report.problems]
    graph = load_graph(tmp_path).resolve(None)
    observer = Observer(graph, load_pack(tmp_path / "assets", graph.server))
    for name, frame in frames.items():
        seen = observer.observe(frame)
        if name == "popup":
            assert "popup_1" in seen.popups
        else:
            assert seen.page == name, (name, seen.page, seen.ambiguous)


def test_a_page_behind_a_loading_screen_gets_twice_its_slowest_measured_arrival_not_a_flat_15_s(tmp_path, frames):
    """Generated game 1's draft under chaos: every page behind a loading screen had 15 s, and a dropped tap or a
    screen nobody names on the way there cost 15 s of a goto's 30 (129 of 200 arrived). The atlas keeps the slowest
    arrival through a loading screen; the written allowance is LOADING_FACTOR times it, between LOADING_LEAST and
    LOADING_SECONDS; a page found slow without a measurement keeps LOADING_SECONDS."""
    import yaml

    from engine.explore.atlas import Atlas
    from engine.explore.sketch import sketch
    from engine.explore.write import LOADING_FACTOR, LOADING_LEAST, LOADING_SECONDS, allowance

    atlas = Atlas()
    atlas.absorb({"type": "screenshot"}, sketch(frames["page_login"]), "l.png")
    loading = [(sketch(frames["page_settings"]), "t.png")]  # any screen that came and went by itself
    for elapsed in (2.5, 3.5, 2.0):
        atlas.absorb({"type": "tap", "point": [640, 590]}, sketch(frames["page_main"]), "m.png", loading,
                     elapsed=elapsed)
        atlas.absorb({"type": "key", "key": "back"}, sketch(frames["page_login"]), "l.png")
    main = next(p for p in atlas.pages if p.slow)
    assert main.slow_s == 3.5
    assert allowance(main.slow_s) == LOADING_FACTOR * 3.5
    assert allowance(0.5) == LOADING_LEAST and allowance(60.0) == allowance(0.0) == LOADING_SECONDS

    draft = _draft(tmp_path, frames)
    draft.pages[1] = draft.pages[1].model_copy(update={"loading": True, "loading_s": allowance(3.5)})
    draft.pages[2] = draft.pages[2].model_copy(update={"loading": True})
    write_graph(draft, tmp_path)
    written = {p["name"]: p for p in yaml.safe_load((tmp_path / "pages.yaml").read_text())["pages"]}
    assert written["page_main"]["loading"] == LOADING_FACTOR * 3.5
    assert written["page_shop"]["loading"] == LOADING_SECONDS
    assert "loading" not in written["page_mail"]


def test_pages_whose_signatures_are_one_anothers_are_left_out_of_the_graph_which_loads(tmp_path, frames):
    """Generated game 9's draft: six pages on one backdrop got the same two colour samples (no region told them
    apart), the loader refused the whole graph and not one goto could run. They stay in the draft; the graph leaves
    them out with their links, and loads."""
    from engine.explore.draft import Signature

    draft = _draft(tmp_path, frames)
    same = [Signature(type="color", area=(244, 324, 316, 396), rgb=(146, 96, 161))]
    draft.pages[2] = draft.pages[2].model_copy(update={"signatures": same})
    draft.pages[3] = draft.pages[3].model_copy(update={"signatures": same})
    twins = {draft.pages[2].name, draft.pages[3].name}
    draft.links.append(DraftLink(**{"from": "page_main", "to": draft.pages[2].name,
                                    "action": TapStep(type="tap", point=(100, 100)), "seen": 2, "tried": 2}))
    write_graph(draft, tmp_path)
    report = check_graph(tmp_path)
    assert report.ok, [str(p) for p in report.problems]
    graph = load_graph(tmp_path)
    assert twins.isdisjoint(p.name for p in graph.pages)
    assert all(link.to not in twins for p in graph.pages for link in p.links)
    assert {"page_login", "page_main"} <= {p.name for p in graph.pages}
