"""Page state declared beside the graph (engine.config.simstate): it loads with located errors, taps change it, timers run
on the game's clock, OCR reads back the counters the simulator draws, and truth() shows what really changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config.loader import load_graph
from engine.config.simstate import StateSpec, load_state
from engine.core.errors import YamlError
from engine.sim import SimGame

GRAPH_DIR = Path(__file__).resolve().parents[3] / "pages" / "azurlane"


@pytest.fixture(scope="module")
def graph():
    return load_graph(GRAPH_DIR)


@pytest.fixture(scope="module")
def spec(graph) -> StateSpec:
    return load_state(GRAPH_DIR, graph)


@pytest.fixture
def game(graph, spec, clock) -> SimGame:
    return SimGame(graph.resolve(), state=spec, clock=clock)


def centre(area):
    return (area[0] + area[2]) // 2, (area[1] + area[3]) // 2


def state(game):
    return game.truth()["state"]


def states(game, name):
    return [i["state"] for i in state(game)["lists"][name]]


def test_the_shipped_state_loads_and_the_graph_skips_it(spec):
    assert {c.name for c in spec.counters} >= {"mail_count", "commission_running", "commission_daily"}
    assert {x.name for x in spec.lists} >= {"mails", "commissions", "missions"}
    from engine.config.graphfiles import graph_files

    assert all(not p.name.startswith("sim_state") for p in graph_files(GRAPH_DIR))


def test_errors_are_located(tmp_path, graph):
    bad = tmp_path / "sim_state.yaml"
    bad.write_text("counters:\n  - {name: c, page: page_mail, area: [0, 0, 9, 9]}\n"
                   "dots:\n  - {name: d, page: page_mail, at: [5, 5], when: {counter: nope}}\n"
                   "taps:\n  - {page: page_nowhere, button: MAIL_COLLECT_ALL, do: [{show: NO_POPUP}]}\n")
    with pytest.raises(YamlError) as err:
        load_state(tmp_path, graph)
    text = [str(p) for p in err.value.problems]
    assert any(":4:" in t and "unknown counter 'nope'" in t for t in text), text
    assert any(":6:" in t and "unknown page 'page_nowhere'" in t for t in text), text
    assert any(":6:" in t and "unknown popup 'NO_POPUP'" in t for t in text), text
    bad.write_text("lists:\n  - {name: l, page: page_mail, area: [0, 0, 9, 9]}\n")  # no row_height
    with pytest.raises(YamlError) as err:
        load_state(bad, graph)
    assert err.value.problems[0].line == 2


def test_mail_collect_all_empties_the_list_and_shows_get_items(game, graph):
    game.goto("page_mail")
    assert state(game)["counters"]["mail_count"] == 3 and state(game)["dots"]["mail_dot"]
    button = graph.resolve().button("MAIL_COLLECT_ALL")
    game.tap(*centre(button.click_area))
    truth = game.truth()
    assert truth["popups"] == ["GET_ITEMS_1"] and truth["state"]["lists"]["mails"] == []
    assert truth["state"]["counters"]["mail_count"] == 0 and not truth["state"]["dots"]["mail_dot"]
    assert truth["state"]["acted"]["page_mail"] == 1 and truth["state"]["taken"]["page_mail"] == 3  # one tap, 3 mails
    game.tap(*centre(graph.resolve().button("GET_ITEMS_1").click_area))
    game.tap(*centre(button.click_area))  # nothing left: the tap does nothing
    assert game.truth()["popups"] == [] and game.truth()["state"]["taken"]["page_mail"] == 3


def test_a_tap_to_continue_screen_closes_on_a_tap_anywhere_and_a_dialog_only_on_its_button(game, graph, spec):
    """closed_by_any_tap: the game takes any tap on a 'tap to continue' screen (real frames say so); a dialog not
    listed still swallows every tap but its own button's."""
    assert "GET_ITEMS_1" in spec.closed_by_any_tap and "POPUP_CONFIRM" not in spec.closed_by_any_tap
    resolved = graph.resolve()
    game.goto("page_main")
    game.show_popup("GET_ITEMS_1")
    spot = resolved.button("GET_ITEMS_1").click_area
    x, y = 200, 200  # far from the graph's spot (ALAS's, bottom right)
    assert not (spot[0] <= x <= spot[2] and spot[1] <= y <= spot[3])
    game.tap(x, y)
    assert game.truth()["popups"] == [] and game.truth()["page"] == "page_main"
    game.show_popup("POPUP_CONFIRM")
    game.tap(x, y)
    assert game.truth()["popups"] == ["POPUP_CONFIRM"]


def test_closed_by_any_tap_names_popups_of_the_graph(tmp_path, graph):
    bad = tmp_path / "sim_state.yaml"
    bad.write_text("closed_by_any_tap: [GET_ITEMS_1,\n  NO_SUCH_POPUP]\n")
    with pytest.raises(YamlError) as err:
        load_state(bad, graph)
    assert any("unknown popup 'NO_SUCH_POPUP'" in str(p) for p in err.value.problems), err.value.problems


def test_commission_timers_run_on_the_virtual_clock_and_rows_collect(game, clock, spec):
    game.goto("page_commission")
    assert states(game, "commissions") == ["ready", "running", "running", "running", "idle"]
    clock.advance(1800)
    assert states(game, "commissions")[1] == "ready"
    commissions = next(x for x in spec.lists if x.name == "commissions")
    x1, y1 = commissions.area[:2]
    collect = commissions.buttons["ready"].area
    game.tap(x1 + (collect[0] + collect[2]) // 2, y1 + (collect[1] + collect[3]) // 2)  # row 0's Collect
    truth = game.truth()
    assert truth["state"]["lists"]["commissions"][0]["name"] == "Escort Mission"
    assert truth["popups"] == ["GET_ITEMS_1"] and truth["state"]["counters"]["commission_running"] == 2


def test_dispatch_is_bounded_by_the_free_slots(game, spec):
    game.goto("page_commission")
    commissions = next(x for x in spec.lists if x.name == "commissions")
    go = commissions.buttons["idle"].area
    row = 4 * commissions.row_height
    tap = (commissions.area[0] + (go[0] + go[2]) // 2, commissions.area[1] + row + (go[1] + go[3]) // 2)
    game.tap(*tap)
    assert states(game, "commissions")[4] == "running"
    counters = state(game)["counters"]
    assert {k: counters[k] for k in ("mail_count", "commission_running", "commission_daily")} == {
        "mail_count": 3, "commission_running": 4, "commission_daily": 8}


def test_mission_collect_all_clears_the_red_dot(game, spec):
    game.goto("page_main")
    assert state(game)["dots"]["mission_dot"]
    game.goto("page_mission")
    game.tap(*centre(spec.taps[1].area))
    truth = game.truth()
    assert truth["popups"] == ["GET_ITEMS_1"] and not truth["state"]["dots"]["mission_dot"]
    assert states(game, "missions") == ["done", "done", "running"]


def test_overrides_replace_initial_values(spec, graph, clock):
    game = SimGame(graph.resolve(), state=spec.with_overrides({"mails": [], "commission_daily": 12}), clock=clock)
    assert state(game)["counters"]["mail_count"] == 0 and state(game)["counters"]["commission_daily"] == 12
    with pytest.raises(ValueError):
        spec.with_overrides({"no_such_thing": 1})


def test_ocr_reads_the_counters_the_simulator_draws(game, graph, spec):
    from verifiers.ocr import read_value

    page = graph.resolve().page("page_commission")
    fields = {f.name: f for f in page.fields}
    game.goto("page_commission")
    frame = game.frame()
    assert read_value(frame, fields["commission_running"].area, fields["commission_running"].pattern)[1] == "3/4"
    assert read_value(frame, fields["commission_daily"].area, fields["commission_daily"].pattern)[1] == "7/12"
    game.goto("page_mail")
    game.tap(*centre(graph.resolve().button("MAIL_COLLECT_ALL").click_area))
    game.tap(*centre(graph.resolve().button("GET_ITEMS_1").click_area))
    area = spec.counters[0].area
    assert read_value(game.frame(), area, r"(\d+\s*/\s*\d+)")[1] == "0/50"


@pytest.mark.parametrize("page", ["page_main", "page_mail", "page_commission", "page_mission"])
def test_pages_with_state_drawn_are_still_observed(game, graph, page):
    from engine.observe.observer import Observer

    observer = Observer(graph.resolve(), game.renderer.assets)  # the simulator's own synthetic pack
    game.goto(page)
    assert observer.observe(game.frame()).page == page


def test_committed_schema_is_current_and_the_shipped_file_points_at_it():
    import json

    from engine.config.simstate import state_json_schema

    committed = json.loads((GRAPH_DIR.parent / "sim_state.schema.json").read_text())
    assert committed == state_json_schema(), "run: python -m engine schema --sim-state > pages/sim_state.schema.json"
    first = (GRAPH_DIR / "sim_state.yaml").read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=../sim_state.schema.json"
