"""Goals in YAML: the shipped goals load, bad goal files name file:line, and criteria are checked by observation."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.config.goals import (
    Criterion,
    all_held,
    check_criteria,
    evaluate,
    free_text_goal,
    goals_json_schema,
    load_goals,
    read_goals,
)
from engine.config.loader import load_graph
from engine.core.errors import GraphError
from engine.core.paths import builtin_graph_dir
from engine.core.results import Observation

ROOT = Path(__file__).resolve().parents[3]
TASKS = {"login", "mail.collect", "commission.status"}


@pytest.fixture(scope="module")
def graph():
    return load_graph()


def write(tmp_path: Path, body: str, name: str = "goals.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body).lstrip())
    return path


def problems(tmp_path: Path, graph, body: str) -> list[str]:
    with pytest.raises(GraphError) as info:
        load_goals(write(tmp_path, body), graph, task_names=TASKS)
    return [str(p) for p in info.value.problems]


def test_shipped_goals_load_and_the_schema_file_is_current(graph):
    book = load_goals(builtin_graph_dir(), graph)
    top = [g.name for g in book.goals]
    assert top == ["commission_counters", "collect_mail", "cold_login", "back_to_main", "find_resources"]
    assert book.get("cold_login.announcements.first").success[0].popup_absent == "LOGIN_ANNOUNCE"
    assert book.get("find_resources").free_text and not book.get("find_resources").success
    assert book.get("collect_mail").budget.turns == 10
    committed = json.loads((ROOT / "pages" / "goals.schema.json").read_text())
    assert committed == goals_json_schema(), "run: python -m engine schema --goals > pages/goals.schema.json"
    first = (builtin_graph_dir() / "goals.yaml").read_text().splitlines()[0]
    assert first == "# yaml-language-server: $schema=../goals.schema.json"


def test_unknown_page_popup_field_and_task_are_located(tmp_path, graph):
    found = problems(tmp_path, graph, """
        goals:
          - name: g
            description: d
            success:
              - {page: page_nowhere}
              - field: {name: no_such_field, op: ge, value: 1}
              - {task: no.task}
            blockers:
              - {popup: NO_POPUP, reason: r}
    """)
    file = str(tmp_path / "goals.yaml")
    assert f"{file}:5:10: goal g: unknown page 'page_nowhere'" in found
    assert any(p.startswith(f"{file}:6:") and "unknown text field 'no_such_field'" in p for p in found)
    assert any(p.startswith(f"{file}:7:") and "unknown task 'no.task'" in p and "mail.collect" in p for p in found)
    assert any(p.startswith(f"{file}:9:") and "unknown popup 'NO_POPUP'" in p for p in found)


def test_bad_op_and_inconsistent_field_checks_are_schema_errors(tmp_path, graph):
    found = problems(tmp_path, graph, """
        goals:
          - name: g
            description: d
            budget: {turns: 5}
            success:
              - field: {name: commission_running, op: about, value: 1}
              - field: {name: commission_running, op: gt, value: lots}
              - {page: page_main, no_popup: true}
    """)
    assert any(":6:" in p and "op" in p and "about" in p for p in found), found
    assert any(":7:" in p and "op gt needs a number" in p for p in found), found
    assert any(":8:" in p and "exactly one of" in p and "page, no_popup" in p for p in found), found


def test_three_levels_of_subgoals_are_refused_at_the_third(tmp_path, graph):
    found = problems(tmp_path, graph, """
        goals:
          - name: a
            description: d
            success: [{page: page_main}]
            subgoals:
              - name: b
                description: d
                success: [{page: page_main}]
                subgoals:
                  - name: c
                    description: d
                    success: [{page: page_main}]
                    subgoals:
                      - name: too.deep
                        description: d
                        success: [{page: page_main}]
    """)
    assert len(found) == 1
    assert ":13:13: goal c: subgoals nest at most 2 levels deep" in found[0] and "'too.deep'" in found[0]


def test_duplicate_goal_names_point_at_both(tmp_path, graph):
    found = problems(tmp_path, graph, """
        goals:
          - {name: twice, description: d, success: [{page: page_main}]}
          - {name: other, description: d, success: [{page: page_main}],
             subgoals: [{name: twice, description: d, success: [{page: page_mail}]}]}
    """)
    file = str(tmp_path / "goals.yaml")
    assert found == [f"{file}:4:18: goal 'twice' is declared twice (first at {file}:2); give each goal its own name"]


def test_empty_success_needs_free_text(tmp_path, graph):
    found = problems(tmp_path, graph, """
        goals:
          - name: vague
            description: do something nice
    """)
    assert len(found) == 1 and ":2:" in found[0] and "success is empty" in found[0] and "free_text" in found[0]
    book = load_goals(write(tmp_path, "goals: [{name: vague, description: d, free_text: true}]\n"), graph)
    assert book.get("vague").free_text


def test_read_goals_without_a_graph_checks_only_the_shape(tmp_path):
    path = write(tmp_path, "goals: [{name: g, description: d, success: [{page: page_anything}]}]\n")
    goals, found = read_goals([path])
    assert [g.name for g in goals] == ["g"] and found == []


def test_validate_names_the_broken_goals_line_and_exits_2(tmp_path):
    folder = tmp_path / "game"
    shutil.copytree(ROOT / "tests" / "data" / "graphs" / "good", folder)
    write(folder, """
        goals:
          - name: ok
            description: d
            success: [{page: page_mail}]
          - name: bad
            description: d
            success: [{page: page_nowhere}]
    """)
    result = subprocess.run([sys.executable, "-m", "engine", "validate", str(folder)], check=False, cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stderr
    assert f"{folder / 'goals.yaml'}:7:16: goal bad: unknown page 'page_nowhere'" in result.stderr


def obs(page: str | None = "page_mail", *popups: str) -> Observation:
    return Observation(page=page, popups=popups, confidence=0.9)


def crit(**kwargs) -> Criterion:
    return Criterion.model_validate(kwargs)


def check(criteria, observation, fields=None, tasks=None):
    return evaluate(criteria, observation, read_field=(fields or {}).get, task_outcome=(tasks or {}).get)


def test_evaluate_pages_and_popups():
    criteria = [crit(page="page_mail"), crit(popup_absent="GET_ITEMS_1"), crit(no_popup=True), crit(popup="X")]
    results = check(criteria, obs("page_mail", "GET_ITEMS_1"))
    assert [r.held for r in results] == [True, False, False, False]
    assert "GET_ITEMS_1" in results[1].detail
    results = check(criteria[:3], obs("page_main"))
    assert [r.held for r in results] == [False, True, True]
    assert results[0].detail == "expected page_mail, page_main shows"
    assert check([crit(page="page_mail")], obs(None))[0].detail == "expected page_mail, an unknown screen shows"
    assert not check([crit(no_popup=True)], None)[0].held


@pytest.mark.parametrize(
    "field, text, held",
    [
        ({"op": "ge", "value": 3}, "3/4", True),
        ({"op": "gt", "value": 3}, "3/4", False),
        ({"op": "eq", "value": 4, "part": "total"}, "3 / 4", True),
        ({"op": "lt", "value": 4, "part": "total"}, "3/4", False),
        ({"op": "eq", "value": 1234}, "1,234", True),
        ({"op": "ne", "value": 2.5}, "2.5", False),
        ({"op": "eq", "value": "3/4"}, " 3/4 ", True),
        ({"op": "ne", "value": "3/4"}, "3/4", False),
        ({"op": "matches", "value": r"^\d+/12$"}, "7/12", True),
        ({"op": "matches", "value": r"^\d+/12$"}, "7/13", False),
        ({"op": "eq", "value": 4, "part": "total"}, "4", False),
        ({"op": "ge", "value": 0}, "none", False),
        ({"op": "ge", "value": 0}, None, False),
    ],
)
def test_evaluate_fields(field, text, held):
    result = check([crit(field={"name": "f", **field})], obs(), fields={"f": text})[0]
    assert result.held is held, result.detail
    assert result.detail.startswith("field f")


def test_evaluate_tasks_and_all_held():
    criteria = [crit(task="a"), crit(task="b"), crit(task="c")]
    results = check(criteria, obs(), tasks={"a": True, "b": False})
    assert [r.held for r in results] == [True, False, False]
    assert [r.detail for r in results] == ["task a ran and was verified", "task b failed", "task c has not run"]
    assert not all_held(results) and all_held(results[:1]) and not all_held([])


def test_free_text_goals_take_only_the_users_criteria(graph):
    goal = free_text_goal("find the oil balance")
    assert goal.free_text and not goal.success  # nothing checkable: such an episode can only end unverified
    given = free_text_goal("reach the dorm", success=[crit(page="page_dorm"), crit(no_popup=True)])
    assert given.free_text and given.success == [crit(page="page_dorm"), crit(no_popup=True)]
    assert check_criteria([crit(page="page_main"), crit(no_popup=True)], graph, TASKS) == []
    problems = check_criteria([crit(page="page_nowhere"), crit(task="mail.collect"), crit(task="fly")], graph, TASKS)
    assert len(problems) == 2 and "unknown page 'page_nowhere'" in problems[0] and "unknown task 'fly'" in problems[1]


@pytest.mark.parametrize("text, op, value, part", [
    ("3/4", "lt", 4, None), ("3/4", "eq", 4, "total"), ("Oil 1,200", "ge", 1000, None), ("11/12", "ne", 12, None),
    ("Commission", "eq", "Commission", None), ("Commission ", "ne", "Dock", None), ("daily 7/12", "matches", r"\d+/12", None),
])
def test_a_goals_field_criterion_compares_as_a_tasks_value_condition(text, op, value, part):
    """One comparison of OCR values: a goal's field criterion and a task's value condition agree on every case."""
    from engine.config.goals import FieldCheck, _compare
    from engine.config.taskvalues import compare

    check = FieldCheck(name="f", op=op, value=value, part=part)
    held, _ = _compare(check, text)
    assert held == compare(op, text, value, None if isinstance(value, str) else (part or "current"))[0]
    assert held  # every case above holds
