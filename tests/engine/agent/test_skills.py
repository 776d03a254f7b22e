"""Learned skills: tool calls mapped to task steps, the per-game skills file, and skills run in a live session."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from engine.agent.skills import skill_from_calls
from engine.config.loader import load_graph
from engine.config.taskfiles import load_tasks, read_tasks
from engine.config.tasks import GotoStep, SwipeStep, TapStep, Task
from engine.core.errors import ConfigError, GraphError
from engine.core.paths import agent_home, builtin_graph_dir, game_dir, skills_file
from engine.runtime.session import open_session, reload_tasks
from engine.tasks.skills import SkillStore

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "tests" / "data" / "graphs" / "good"


@pytest.fixture(scope="module")
def graph():
    return load_graph().resolve(None)


@pytest.fixture(scope="module")
def book(graph):
    return load_tasks(builtin_graph_dir(), graph)


def call(tool: str, ok: bool = True, **arguments) -> dict:
    return {"tool": tool, "arguments": arguments, "ok": ok, "status": "verified" if ok else "not_verified"}


def skill(name: str, steps: list, success: list, **extra) -> Task:
    return Task(name=name, description=f"{name} skill", steps=steps, success=success,
                origin="learned from goal test, episode 1", **extra)


# --------------------------------------------------------------------------------------------- where skills live


def test_agent_home_is_the_environment_s_else_the_user_data_folder():
    assert agent_home({"ENGINE_HOME": "/srv/engine"}) == Path("/srv/engine")
    assert agent_home({}) == Path.home() / ".local" / "share" / "engine"
    # tests/conftest.py points every test at a throwaway home, never the real one.
    assert agent_home() == Path(os.environ["ENGINE_HOME"]) != agent_home({})


def test_the_game_folder_is_a_safe_slug_of_the_graph_s_game():
    home = Path("/h")
    assert game_dir(home, SimpleNamespace(game="Azur Lane")) == home / "azur-lane"
    assert game_dir(home, SimpleNamespace(game="../../etc/passwd")) == home / "etc-passwd"
    assert game_dir(home, SimpleNamespace(game="..")) == home / "game"
    assert skills_file(home, SimpleNamespace(game="demo")) == home / "demo" / "skills.yaml"


# --------------------------------------------------------------------------------------------- calls to a task


def test_successful_calls_map_to_steps_runs_are_inlined_and_the_rest_is_dropped(book):
    calls = [
        call("adb_screenshot"),
        call("alas_goto", page="page_main"),
        call("alas_goto", ok=False, page="page_dorm"),
        call("alas_run", name="mail.collect"),
        call("alas_state"),
        call("adb_tap", x=100, y=200),
        call("adb_tap", ok=False, x=5, y=5),
        call("adb_swipe", x1=10, y1=20, x2=30, y2=40),
        call("adb_swipe", x1=1, y1=2, x2=3, y2=4, duration_ms=120),
        call("alas_tools"),
    ]
    task = skill_from_calls("mail.again", "collect mail", calls, book, start_page="page_login",
                            success=[{"page": "page_mail"}, {"no_popup": True}], origin="learned from goal g")
    shipped = book.get("mail.collect").steps
    assert task.steps[0] == GotoStep(type="goto", page="page_main")
    assert task.steps[1:1 + len(shipped)] == shipped
    rest = task.steps[1 + len(shipped):]
    assert rest == [TapStep(type="tap", point=(100, 200)),
                    SwipeStep(type="swipe", start=(10, 20), end=(30, 40), duration_ms=300),
                    SwipeStep(type="swipe", start=(1, 2), end=(3, 4), duration_ms=120)]
    assert task.preconditions == []  # it starts with a goto, which works from anywhere
    assert [c.model_dump(exclude_none=True) for c in task.success] == [{"page": "page_mail"}, {"no_popup": True}]
    assert task.origin == "learned from goal g"


def test_a_skill_starting_with_a_raw_point_is_bound_to_its_start_page(book):
    calls = [call("adb_swipe", x1=10, y1=20, x2=30, y2=40), call("alas_goto", page="page_mail")]
    bound = skill_from_calls("s", "d", calls, book, start_page="page_main", success=[], origin="o")
    assert bound.preconditions == ["page_main"]
    assert [c.page for c in bound.success] == ["page_mail"]  # no success given: the last goto's page
    unknown_start = skill_from_calls("s", "d", calls, book, start_page=None, success=[], origin="o")
    assert unknown_start.preconditions == []


@pytest.mark.parametrize(("calls", "success", "message"), [
    ([call("adb_screenshot"), call("alas_goto", ok=False, page="page_main")], [{"page": "page_main"}],
     "nothing to replay"),
    ([call("adb_tap", x=1, y=2)], [], "no success criterion"),
    ([call("alas_run", name="no.such.task")], [{"page": "page_main"}], "no.such.task"),
])
def test_calls_that_cannot_make_a_skill_are_refused(book, calls, success, message):
    with pytest.raises(ValueError, match=message):
        skill_from_calls("s", "d", calls, book, start_page="page_main", success=success, origin="o")


def test_a_run_without_a_book_and_a_bad_name_are_refused():
    with pytest.raises(ValueError, match="mail.collect"):
        skill_from_calls("s", "d", [call("alas_run", name="mail.collect")], None, start_page=None,
                         success=[{"page": "page_main"}], origin="o")
    with pytest.raises(ValueError):
        skill_from_calls("Bad Name", "d", [call("alas_goto", page="page_main")], None, start_page=None,
                         success=[], origin="o")


# --------------------------------------------------------------------------------------------- the skills file


def test_saving_replaces_by_name_and_loads_back_in_order(tmp_path, graph):
    store = SkillStore(tmp_path / "azurlane" / "skills.yaml")
    assert store.load(graph) == []
    first = skill("a.first", [{"type": "goto", "page": "page_main"}], [{"page": "page_main"}])
    second = skill("b.second", [{"type": "tap", "point": [10, 20]}], [{"page": "page_main"}],
                   preconditions=["page_main"])
    assert store.save(first, graph) == store.path
    store.save(second, graph)
    better = skill("a.first", [{"type": "goto", "page": "page_mail"}], [{"page": "page_mail"}])
    store.save(better, graph)
    assert store.load(graph) == [better, second]
    text = store.path.read_text()
    assert text.startswith("# Skills learned by the engine's agent") and "may edit" in text
    assert [p.name for p in store.path.parent.iterdir()] == ["skills.yaml"]  # no temporary file left behind
    with pytest.raises(ValueError, match="shipped task"):
        store.save(skill("login", [{"type": "goto", "page": "page_main"}], [{"page": "page_main"}]), graph,
                   reserved=["login"])


def test_a_hand_broken_skills_file_is_a_graph_error_at_its_line(tmp_path, graph):
    path = tmp_path / "skills.yaml"
    path.write_text("# learned\ntasks:\n  - name: broken\n    description: d\n    steps:\n"
                    "      - {type: goto, page: page_nowhere}\n    success: [{page: page_main}]\n")
    store = SkillStore(path)
    with pytest.raises(GraphError) as info:
        store.load(graph)
    problem = info.value.problems[0]
    assert (problem.file, problem.line) == (str(path), 6) and "page_nowhere" in problem.message
    before = path.read_text()
    with pytest.raises(GraphError):
        store.save(skill("ok", [{"type": "goto", "page": "page_main"}], [{"page": "page_main"}]), graph)
    assert path.read_text() == before  # a broken file is the user's to fix, never overwritten


def test_a_skill_that_does_not_fit_the_graph_is_not_written(tmp_path, graph):
    store = SkillStore(tmp_path / "skills.yaml")
    with pytest.raises(GraphError) as info:
        store.save(skill("far", [{"type": "goto", "page": "page_nowhere"}], [{"page": "page_main"}]), graph)
    assert info.value.problems[0].file == str(store.path)
    assert list(tmp_path.iterdir()) == []


def test_a_tap_point_off_the_screen_is_a_load_problem(tmp_path, graph):
    width, height = graph.resolution
    path = tmp_path / "tasks.yaml"
    path.write_text(f"tasks:\n  - name: offscreen\n    description: d\n    steps:\n"
                    f"      - {{type: tap, point: [{width}, 10]}}\n"
                    f"      - {{type: swipe, start: [10, 10], end: [10, {height + 5}]}}\n"
                    f"    success: [{{page: page_main}}]\n")
    _, problems = read_tasks([path], graph)
    assert [(p.line, "outside the screen" in p.message) for p in problems] == [(5, True), (6, True)]
    both = tmp_path / "both.yaml"
    both.write_text("tasks:\n  - name: both\n    description: d\n    steps:\n"
                    "      - {type: tap, button: MAIL_COLLECT_ALL, point: [1, 1]}\n    success: [{page: page_main}]\n")
    _, problems = read_tasks([both], graph)
    assert problems and "exactly one of" in problems[0].message


# --------------------------------------------------------------------------------------------- in a session


def test_a_session_lists_its_skills_and_runs_them_verified(tmp_path, graph):
    x1, y1, x2, y2 = graph.button("MAIN_GOTO_FLEET").click_area
    store = SkillStore(tmp_path / "skills.yaml")
    store.save(skill("fleet.open", [{"type": "goto", "page": "page_main"},
                                    {"type": "tap", "point": [(x1 + x2) // 2, (y1 + y2) // 2]}],
                     [{"page": "page_fleet"}]), graph)
    with open_session(skills=store.path) as s:
        assert s.skills_path == store.path
        listed = {t["name"]: t["kind"] for t in s.tools.call("alas_tools", {}).data["tasks"]}
        assert listed["fleet.open"] == "skill" and listed["mail.collect"] == "task"
        result = s.tools.call("alas_run", {"name": "fleet.open"})
        assert result.ok, result.text
        assert s.sim.game.truth()["page"] == "page_fleet"
        # A skill saved while the session runs joins its book.
        store.save(skill("main.back", [{"type": "goto", "page": "page_main"}], [{"page": "page_main"}]), s.graph,
                   reserved=s.shipped_tasks)
        assert "main.back" in reload_tasks(s)
        assert "main.back" in {t["name"] for t in s.tools.call("alas_tools", {}).data["tasks"]}


def test_a_skill_named_like_a_shipped_task_is_a_config_error_naming_the_file(tmp_path, graph):
    path = tmp_path / "skills.yaml"
    SkillStore(path).save(skill("login", [{"type": "goto", "page": "page_main"}], [{"page": "page_main"}]), graph)
    with pytest.raises(ConfigError, match="login") as info:
        open_session(skills=path)
    assert str(path) in str(info.value)


def test_a_graph_without_tasks_gets_a_book_from_the_default_skills_file(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGINE_HOME", str(tmp_path / "home"))
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder)
    demo = load_graph(folder).resolve(None)
    path = skills_file(tmp_path / "home", demo)
    SkillStore(path).save(skill("shop.by_swipe", [{"type": "goto", "page": "page_settings"},
                                                  {"type": "swipe", "start": [640, 400], "end": [200, 400]}],
                                [{"page": "page_shop"}]), demo)
    with open_session(graph_dir=folder) as s:
        assert s.skills_path == path
        assert s.tools.call("alas_tools", {}).data["tasks"] == [
            {"name": "shop.by_swipe", "description": "shop.by_swipe skill", "kind": "skill",
             "bound_s": s.tools.task_bound("shop.by_swipe")}]
        result = s.tools.call("alas_run", {"name": "shop.by_swipe"})
        assert result.ok, result.text
        assert s.sim.game.truth()["page"] == "page_shop"


def test_without_skills_the_session_still_knows_where_to_save_them(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGINE_HOME", str(tmp_path / "home"))
    with open_session(graph_dir=DEMO) as s:
        assert s.skills_path == tmp_path / "home" / "demo" / "skills.yaml" and not s.skills_path.exists()
        assert s.tasks.names() == [] and s.tools.call("alas_tools", {}).data["tasks"] == []
        assert s.tools.tasks is s.tasks  # a skill saved later lands in the book the tools already run from
