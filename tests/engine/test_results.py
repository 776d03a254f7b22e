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
