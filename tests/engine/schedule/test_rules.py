"""When tasks are due (engine.schedule.rules) and how schedule.yaml is checked (engine.config.schedule)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from engine.config.loader import load_graph
from engine.config.schedule import Due, Entry, Retry, Schedule, load_schedule, parse_zone
from engine.core.errors import GraphError
from engine.schedule.rules import after_failure, after_success, duration_s, last_reset, next_reset


def _at(text: str, zone) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=zone).timestamp()


def test_durations_read_by_ocr_give_the_soonest_and_refuse_garbage():
    assert duration_s("3:42:10") == 3 * 3600 + 42 * 60 + 10
    assert duration_s("00:29:59 01:29:59 00:O9:58") == 9 * 60 + 58  # O read for 0
    assert duration_s(90) == 90.0 and duration_s("12") == 12.0
    for bad in ("garbage", "1:75:00", -5, True, None, float("nan"), "9" * 3000):
        assert duration_s(bad) is None


def test_the_next_reset_is_the_servers_midnight_in_a_fixed_offset():
    zone = parse_zone("UTC-07:00")
    now = _at("2026-03-01T23:59:00", zone)
    assert next_reset(now, ("00:00",), zone) == _at("2026-03-02T00:00:00", zone)
    assert next_reset(_at("2026-03-02T00:00:00", zone), ("00:00",), zone) == _at("2026-03-03T00:00:00", zone)
    assert last_reset(now, ("00:00",), zone) == _at("2026-03-01T00:00:00", zone)
    # several server times: the next of them
    assert next_reset(_at("2026-03-02T06:30:00", zone), ("00:00", "06:00", "21:00"), zone) == \
        _at("2026-03-02T21:00:00", zone)


def test_resets_in_a_daylight_saving_zone_fall_on_the_local_time_both_sides_of_a_change():
    berlin = ZoneInfo("Europe/Berlin")
    before = _at("2026-03-27T12:00:00", berlin)  # the clocks go forward in the night to Sunday 29 March
    first = next_reset(before, ("04:00",), berlin)
    second = next_reset(first, ("04:00",), berlin)
    assert datetime.fromtimestamp(first, berlin).hour == 4 and datetime.fromtimestamp(second, berlin).hour == 4
    assert second - first == 23 * 3600  # the short day
    autumn = next_reset(_at("2026-10-23T12:00:00", berlin), ("04:00",), berlin)  # back on Sunday 25 October
    assert next_reset(autumn, ("04:00",), berlin) - autumn == 25 * 3600  # the long day
    # 02:30 does not exist on 29 March: it lands after the gap, never before the previous reset
    gap = next_reset(_at("2026-03-28T12:00:00", berlin), ("02:30",), berlin)
    assert datetime.fromtimestamp(gap, berlin).strftime("%d %H:%M") == "29 03:30"


def _schedule(*entries: Entry, retry: Retry | None = None) -> Schedule:
    return Schedule(entries, ("00:00",), parse_zone("UTC+08:00"), retry or Retry(), None)


def test_after_a_verified_run_the_earliest_rule_wins_and_a_reported_time_replaces_the_interval():
    entry = Entry(task="t", due=Due(reported="next", every=3600, reset=True))
    schedule = _schedule(entry)
    now = _at("2026-03-01T12:00:00", parse_zone("UTC+08:00"))
    assert after_success(entry, schedule, now, {"next": "0:10:00"}) == (now + 600, "reported next")
    assert after_success(entry, schedule, now, {})[0] == now + 3600
    late = _at("2026-03-01T23:30:00", parse_zone("UTC+08:00"))
    assert after_success(entry, schedule, late, {"next": "2:00:00"}) == (late + 1800, "reset")


def test_failures_back_off_then_restart_the_game_then_put_the_task_off():
    rules = Retry(backoff_s=60, max_backoff_s=200, restart_after=2, give_up_after=4, put_off_s=1800)
    assert after_failure(rules, 1, 0.0) == (60.0, "retry")
    assert after_failure(rules, 2, 0.0) == (120.0, "restart")
    assert after_failure(rules, 3, 0.0) == (200.0, "restart")
    assert after_failure(rules, 4, 0.0) == (1800.0, "put_off")


def test_the_shipped_schedule_loads_for_every_server_with_its_own_zone():
    from engine.runtime.session import load_task_book

    offsets = {}
    for server in ("en", "cn", "jp", "tw"):
        graph = load_graph().resolve(server)
        schedule = load_schedule(None, graph, set(load_task_book(None, graph).names()))
        offsets[server] = schedule.zone.utcoffset(None).total_seconds() / 3600
        assert schedule.names()[0] == "commission" and schedule.start_task == "login"
    assert offsets == {"en": -7, "cn": 8, "jp": 9, "tw": 8}


BAD = """\
resets:
  en: {at: "00:00", zone: "UTC-07:00"}
  mars: {at: "00:00", zone: "UTC+01:00"}
tasks:
  - {task: login, due: {every: 60}}
  - {task: no.such.task, due: {every: 60}}
  - {task: login, due: {reset: true}}
"""


def test_a_schedule_naming_what_the_graph_lacks_fails_with_file_and_line(tmp_path):
    graph = load_graph().resolve("en")
    (tmp_path / "schedule.yaml").write_text(BAD)
    with pytest.raises(GraphError) as caught:
        load_schedule(tmp_path, graph, {"login"})
    text = str(caught.value)
    assert "schedule.yaml:3:" in text and "unknown server 'mars'" in text
    assert "schedule.yaml:6:" in text and "unknown task 'no.such.task'" in text
    assert "schedule.yaml:7:" in text and "scheduled twice" in text


@pytest.mark.parametrize("body, words", [
    ("tasks: [{task: login, due: {}}]", "due needs reset, every or reported"),
    ("resets: {en: {zone: Mars/Olympus}}", "unknown time zone"),
    ("resets: {en: {at: '25:00', zone: UTC}}", "not a time of day"),
    ("tasks: [{task: login, due: {every: -1}}]", "every"),
])
def test_bad_values_are_refused_with_a_located_message(tmp_path, body, words):
    (tmp_path / "schedule.yaml").write_text(body)
    with pytest.raises(GraphError) as caught:
        load_schedule(tmp_path, load_graph().resolve("en"), {"login"})
    assert words in str(caught.value) and "schedule.yaml:1:" in str(caught.value)


def test_committed_schema_is_current_and_the_shipped_file_points_at_it():
    import json
    from pathlib import Path

    from engine.config.schedule import schedule_json_schema

    pages = Path(__file__).resolve().parents[3] / "pages"
    committed = json.loads((pages / "schedule.schema.json").read_text())
    assert committed == schedule_json_schema(), "run: python -m engine schema --schedule > pages/schedule.schema.json"
    first = (pages / "azurlane" / "schedule.yaml").read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=../schedule.schema.json"
