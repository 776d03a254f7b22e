"""ToolResult converts to a percept for an agent loop: failures outrank successes."""

from engine.core.results import SUGGESTED_ACTIONS, ToolResult


def test_percepts_rank_failures_above_successes_and_device_trouble_highest():
    ok = ToolResult(True, "verified", "reached page_main", {"tool": "goto"}).to_percept()
    miss = ToolResult(False, "popup_blocking", "popup still there", {"tool": "goto"}).to_percept()
    hung = ToolResult(False, "timeout", "no answer", {"tool": "goto"}).to_percept()
    assert ok["modality"] == miss["modality"] == "tool_result"
    assert ok["priority"] < miss["priority"] < hung["priority"]
    assert miss["content"] == "popup still there" and miss["tool"] == "goto"
    for device_fault in ("connection_lost", "device_offline", "adb_server_down", "device_not_found"):
        assert ToolResult(False, device_fault, "lost", {}).to_percept()["priority"] == hung["priority"]
    assert ToolResult(False, "unknown_page", "typo", {}).to_percept()["priority"] == miss["priority"]


def test_the_suggested_actions_are_a_closed_set():
    assert set(SUGGESTED_ACTIONS) == {"retry", "dismiss_popup_then_retry", "use_vision", "reconnect",
                                      "restart_app", "human"}


def test_every_navigation_failure_suggests_an_action_from_the_closed_set():
    from engine.core.results import suggested_action as _suggest

    for status in ("popup_blocking", "unknown_screen", "timeout", "cancelled", "stuck", "device_offline",
                   "adb_server_down", "device_not_found", "black_screen", "bad_frame", "no_route", "other"):
        assert _suggest(status) in SUGGESTED_ACTIONS


def test_every_status_the_engine_reports_is_in_the_one_vocabulary():
    """Errors' statuses, the agent's stop reasons and every status an Outcome is given in the engine's code."""
    import ast
    import inspect
    from pathlib import Path

    from engine.core import errors
    from engine.core.results import STATUSES, STOP_REASONS, SUCCESS_STATUSES, SUGGESTED_ACTIONS

    known = set(STATUSES) | set(SUCCESS_STATUSES)
    assert set(STATUSES.values()) <= set(SUGGESTED_ACTIONS)
    used = {cls.status for _, cls in inspect.getmembers(errors, inspect.isclass) if issubclass(cls, errors.EngineError)}
    used |= set(STOP_REASONS)
    root = Path(__file__).resolve().parents[2] / "engine"
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Outcome" and len(node.args) >= 2:
                if isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                    used.add(node.args[1].value)
    assert used - known == set()


def test_covered_is_a_named_page_with_a_cover_and_no_field_of_its_own():
    from dataclasses import asdict, fields

    from engine.core.results import Observation

    class Cover:
        def to_dict(self):
            return {"covered": True}

    assert Observation("page_main", cover=Cover()).covered
    assert not Observation("page_main").covered
    assert not Observation(None, cover=Cover()).covered  # no page named: not "covered", whatever the cover says
    obs = Observation("page_main", cover=Cover())
    assert "covered" not in obs.to_dict() and "covered" not in asdict(obs)
    assert "covered" not in {f.name for f in fields(Observation)}
