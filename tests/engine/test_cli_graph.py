"""`python -m engine validate|schema|graph|route` through a real subprocess: exit codes, stdout, stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config.loader import graph_files, graph_json_schema

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "graphs"
GOOD = DATA / "good"
BAD = DATA / "bad"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_validate_good_graph_prints_one_summary_line() -> None:
    result = run("validate", str(GOOD))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok: 6 pages, 9 links, 2 popups, 14 buttons (0 warnings)\n"
    assert "Traceback" not in result.stderr


def test_validate_warnings_go_to_stderr_and_still_succeed() -> None:
    result = run("validate", str(BAD / "warnings.yaml"))
    assert result.returncode == 0
    assert result.stdout.startswith("ok: ") and result.stdout.rstrip().endswith("(4 warnings)")
    assert f"{BAD / 'warnings.yaml'}:16:5: warning: page 'page_blind' has no signatures" in result.stderr


def test_validate_bad_graph_lists_every_problem_on_stderr_and_exits_2() -> None:
    result = run("validate", str(BAD / "wrong_type.yaml"))
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert f"{BAD / 'wrong_type.yaml'}:17:9: expected a number, got 'abc'" in lines
    assert sum(":" in line and "wrong_type.yaml:" in line for line in lines) == 5
    assert "Traceback" not in result.stderr


def test_validate_json_reports_problems_on_stdout() -> None:
    result = run("validate", str(BAD / "syntax.yaml"), "--json")
    assert result.returncode == 2
    report = json.loads(result.stdout)
    assert report["ok"] is False
    (error,) = report["errors"]
    assert (error["line"], error["col"]) == (9, 22)
    assert error["message"].startswith("YAML syntax error: mapping values are not allowed here")


def test_validate_missing_folder_is_bad_input_not_a_traceback(tmp_path: Path) -> None:
    result = run("validate", str(tmp_path / "nope"))
    assert result.returncode == 2
    assert "no such graph folder or file" in result.stderr and "Traceback" not in result.stderr


def test_schema_prints_the_graph_file_schema() -> None:
    result = run("schema")
    assert result.returncode == 0
    schema = json.loads(result.stdout)
    assert schema == graph_json_schema()
    assert schema["$schema"].startswith("https://json-schema.org/") and "pages" in schema["properties"]


@pytest.mark.parametrize("fmt, first, edge", [
    ("mermaid", "flowchart LR", 'page_main -->|"tap MAIN_SHOP"| page_shop'),
    ("dot", 'digraph "demo" {', '"page_main" -> "page_shop" [label="tap MAIN_SHOP"];'),
])
def test_graph_draws_every_link(fmt: str, first: str, edge: str) -> None:
    result = run("graph", str(GOOD), "--format", fmt)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == first
    assert edge in [line.strip() for line in lines]
    assert sum("->" in line for line in lines) == 9


def test_graph_of_a_bad_graph_exits_2() -> None:
    result = run("graph", str(BAD / "unknown_page.yaml"))
    assert result.returncode == 2 and "link to unknown page 'page_mian'" in result.stderr


def test_route_prints_hops_with_costs() -> None:
    result = run("route", "page_login", "page_settings", "--graph", str(GOOD))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "page_login -> page_main  [tap LOGIN_START]  cost 5",
        "page_main -> page_settings  [tap MAIN_SETTINGS]  cost 2",
        "total cost 7 in 2 hop(s)",
    ]


def test_route_json() -> None:
    result = run("route", "page_shop", "page_main", "--graph", str(GOOD), "--json")
    assert json.loads(result.stdout)["hops"] == [
        {"from": "page_shop", "to": "page_main", "cost": 1.0, "action": "tap BACK"}
    ]


def test_route_unknown_page_exits_2_with_suggestions() -> None:
    result = run("route", "page_login", "page_setings", "--graph", str(GOOD))
    assert result.returncode == 2
    assert result.stdout == ""
    assert "unknown page 'page_setings'; did you mean page_settings" in result.stderr


def test_route_without_a_path_exits_1() -> None:
    result = run("route", "page_unknown", "page_main", "--graph", str(GOOD))
    assert result.returncode == 1 and "no route from 'page_unknown' to 'page_main'" in result.stderr


def test_route_on_the_shipped_graph() -> None:
    folder = ROOT / "pages" / "azurlane"
    if not folder.is_dir() or not graph_files(folder):
        pytest.skip("pages/azurlane has no graph files yet")
    result = run("route", "page_main", "page_commission")
    assert result.returncode == 0, result.stderr
    assert [line.split()[0] for line in result.stdout.splitlines()[:-1]] == ["page_main", "page_reward"]


def _demo_copy(tmp_path: Path) -> Path:
    import shutil

    folder = tmp_path / "demo"
    shutil.copytree(GOOD, folder)
    return folder


def test_validate_checks_the_task_files_of_the_folder(tmp_path: Path) -> None:
    folder = _demo_copy(tmp_path)
    (folder / "tasks.yaml").write_text(
        "tasks:\n  - name: t\n    description: d\n    steps:\n      - {type: goto, page: page_mial}\n"
        "    success: [{page: page_main}]\n"
    )
    result = run("validate", str(folder))
    assert result.returncode == 2 and result.stdout == ""
    assert f"{folder / 'tasks.yaml'}:5:22: task t: unknown page 'page_mial'" in result.stderr.splitlines()
    assert "Traceback" not in result.stderr


def test_validate_checks_a_policy_file_and_the_policies_hops_name(tmp_path: Path) -> None:
    folder = _demo_copy(tmp_path)
    policies = tmp_path / "policies.yaml"
    policies.write_text("policies:\n  careful_hop: {attempts: 2, timeout: 5}\n")
    game = folder / "game.yaml"
    game.write_text(game.read_text().replace("defaults:\n", "defaults:\n  policy: careful_hop\n", 1))
    unknown = run("validate", str(folder))
    assert unknown.returncode == 2 and "names unknown policy 'careful_hop'" in unknown.stderr
    assert run("validate", str(folder), "--policies", str(policies)).returncode == 0
    policies.write_text("policies:\n  careful_hop: {attempts: 2, timeout: .nan}\n")
    broken = run("validate", str(folder), "--policies", str(policies))
    assert broken.returncode == 2
    assert f"{policies}:2:30: timeout: expected a finite number, got nan" in broken.stderr.splitlines()
