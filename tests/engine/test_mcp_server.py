"""The MCP server over stdio with the real MCP SDK client, against the embedded simulator in a child process.

One server per concern: a healthy simulator (tools, schemas, arguments, goto beside health, cancellation), a hung
device (every tool answers inside its bound), and a raw JSON-RPC session for stdout hygiene.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import cv2
import numpy as np
import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client, MCPError, StdioServerParameters

from engine.config.loader import load_graph
from engine.core.results import SUGGESTED_ACTIONS
from engine.runtime.transcript import read_lines
from tests.speed import within
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ["adb_health", "adb_screenshot", "adb_tap", "adb_swipe", "alas_state", "alas_goto", "alas_tools", "alas_run"]


def server_params(*extra: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    environ = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    environ.pop("GEMINI_API_KEY", None)  # no vision calls from tests
    return StdioServerParameters(command=sys.executable, args=["-m", "engine", "serve", *extra], cwd=str(ROOT),
                                 env=environ)


class SyncClient:
    """The SDK's async Client driven from synchronous tests through an anyio portal (one event loop thread)."""

    def __init__(self, portal, client: Client) -> None:
        self.portal = portal
        self.client = client

    def call(self, name: str, arguments: dict | None = None, timeout: float | None = None):
        return self.portal.call(lambda: self.client.call_tool(name, arguments or {}, read_timeout_seconds=timeout))

    def start(self, name: str, arguments: dict | None = None, timeout: float | None = None):
        """Start a call in the background; returns a concurrent.futures.Future."""
        return self.portal.start_task_soon(
            lambda: self.client.call_tool(name, arguments or {}, read_timeout_seconds=timeout)
        )

    def list_tools(self):
        return self.portal.call(self.client.list_tools)


def open_client(params: StdioServerParameters):
    portal_cm = start_blocking_portal()
    portal = portal_cm.__enter__()
    client_cm = portal.wrap_async_context_manager(Client(params, read_timeout_seconds=90))
    try:
        client = client_cm.__enter__()
    except BaseException:
        portal_cm.__exit__(None, None, None)
        raise

    def close() -> None:
        try:
            client_cm.__exit__(None, None, None)
        finally:
            portal_cm.__exit__(None, None, None)

    return SyncClient(portal, client), close


def body(result) -> dict:
    assert result.structured_content is not None
    text = json.loads(result.content[0].text)
    assert text == result.structured_content
    return result.structured_content


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("mcp")


@pytest.fixture(scope="module")
def mcp(workdir):
    scenario = workdir / "slow.yaml"
    # A loading screen after every hop keeps a goto busy long enough to talk to the server beside it.
    scenario.write_text("description: slow hops\nloading_min: 0.4\nloading_max: 0.4\n")
    client, close = open_client(server_params("--scenario", str(scenario), "--transcript", str(workdir / "run"),
                                              "--seed", "5"))
    yield client
    close()


def test_the_eight_tools_are_listed_with_their_input_schemas(mcp):
    listed = {tool.name: tool for tool in mcp.list_tools().tools}
    assert sorted(listed) == sorted(TOOLS)
    tap = listed["adb_tap"].input_schema
    assert tap["required"] == ["x", "y"]
    assert tap["properties"]["x"]["type"] == "integer" and "0..1279" in tap["properties"]["x"]["description"]
    swipe = listed["adb_swipe"].input_schema
    assert set(swipe["required"]) == {"x1", "y1", "x2", "y2"} and swipe["properties"]["duration_ms"]["default"] == 300
    assert listed["alas_goto"].input_schema["required"] == ["page"]
    assert listed["alas_run"].input_schema["required"] == ["name"]
    for name in ("adb_health", "adb_screenshot", "alas_state", "alas_tools"):
        assert listed[name].input_schema.get("required", []) == []
        assert listed[name].annotations.read_only_hint is True
    for tool in listed.values():
        assert "s." in tool.description and "answers within" in tool.description


def test_each_tool_works_over_stdio(mcp):
    health = body(mcp.call("adb_health"))
    assert health["ok"] and health["status"] == "healthy"

    shot = mcp.call("adb_screenshot")
    assert not shot.is_error
    image = [c for c in shot.content if c.type == "image"][0]
    assert image.mime_type == "image/png"
    frame = cv2.imdecode(np.frombuffer(base64.b64decode(image.data), np.uint8), cv2.IMREAD_COLOR)
    assert frame.shape == (720, 1280, 3)
    assert body(shot)["data"]["black_frame"] is False

    tap = body(mcp.call("adb_tap", {"x": 1279, "y": 719}))
    assert tap["ok"] and tap["data"]["observation"] is not None
    swipe = body(mcp.call("adb_swipe", {"x1": 600, "y1": 300, "x2": 700, "y2": 300, "duration_ms": 100}))
    assert swipe["ok"] and swipe["data"]["observation"] is not None

    state = body(mcp.call("alas_state"))
    assert state["data"]["tool"] == "alas_state" and state["data"]["observation"] is not None
    assert "belief" in state["data"]

    tasks = body(mcp.call("alas_tools"))
    assert tasks["ok"] and isinstance(tasks["data"]["tasks"], list)

    page = state["data"]["observed"] or "page_main"
    goto = body(mcp.call("alas_goto", {"page": page}))
    assert goto["data"]["tool"] == "alas_goto" and goto["data"]["target"] == page
    run = body(mcp.call("alas_run", {"name": "no_such_task"}))
    assert run["status"] == "unknown_task"


def test_bad_arguments_come_back_as_structured_errors(mcp):
    wrong_type = mcp.call("adb_tap", {"x": 1, "y": "up"})
    assert wrong_type.is_error
    result = body(wrong_type)
    assert result["status"] == "bad_argument" and result["data"]["errors"][0]["field"] == "y"
    assert result["data"]["screenshot_analysis"]["suggested_action"] in SUGGESTED_ACTIONS

    missing = body(mcp.call("alas_goto", {}))
    assert missing["status"] == "bad_argument" and missing["data"]["errors"][0]["field"] == "page"

    off_screen = mcp.call("adb_tap", {"x": 1280, "y": 10})
    assert off_screen.is_error and body(off_screen)["status"] == "bad_argument"
    assert "off the 1280x720 screen" in body(off_screen)["text"]

    typo = body(mcp.call("alas_goto", {"page": "page_comission"}))
    assert typo["status"] == "unknown_page" and "page_commission" in typo["data"]["suggestions"]



def _entries(workdir: Path, kind: str, tool: str = "goto") -> list[dict]:
    return [e for e in read_lines(workdir / "run" / "transcript.jsonl") if e["kind"] == kind and e.get("tool") == tool]


def _wait_for(predicate, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_health_and_state_answer_while_a_goto_runs(mcp, workdir, far_page):
    assert body(mcp.call("alas_goto", {"page": "page_main"}))["ok"]
    actions = len(_entries(workdir, "action"))
    goto = mcp.start("alas_goto", {"page": far_page(load_graph(), "page_main")})
    try:
        assert _wait_for(lambda: len(_entries(workdir, "action")) > actions, 15)
        assert not goto.done()
        health = body(mcp.call("adb_health"))
        state = body(mcp.call("alas_state"))
        assert not goto.done()  # both answered beside the goto, not after it
        assert health["ok"] and health["status"] == "healthy"
        assert state["data"]["busy"] is True
    finally:
        goto.result(60)


def test_a_cancelled_goto_stops_tapping_at_the_next_hop(mcp, workdir, far_page):
    # Back to the start so the goto has a long way to go.
    assert body(mcp.call("alas_goto", {"page": "page_main"}))["ok"]
    actions = len(_entries(workdir, "action"))
    with pytest.raises(MCPError):
        # The client gives up after 1.5 s and sends notifications/cancelled.
        mcp.call("alas_goto", {"page": far_page(load_graph(), "page_main")}, timeout=1.5)
    assert len(_entries(workdir, "action")) > actions  # it was navigating when cancelled
    assert _wait_for(lambda: any(e.get("status") == "cancelled" for e in _entries(workdir, "result")), 5)
    settled = len(_entries(workdir, "action"))
    time.sleep(1.5)
    assert len(_entries(workdir, "action")) == settled  # no orphan keeps tapping
    assert body(mcp.call("adb_health"))["ok"]  # and the device is free again
    assert body(mcp.call("adb_tap", {"x": 5, "y": 5}))["ok"]


def _burst(client: SyncClient, calls: list[tuple[str, dict]]) -> list[tuple[str, dict, float]]:
    """All `calls` at once over the one client; each answer with its round trip as the client saw it."""

    async def timed(name: str, arguments: dict) -> tuple[str, dict, float]:
        start = time.monotonic()
        result = await client.client.call_tool(name, arguments)
        return name, body(result), time.monotonic() - start

    futures = [client.portal.start_task_soon(timed, name, arguments) for name, arguments in calls]
    return [future.result(90) for future in futures]


JITTER_S = 0.1
"""The scheduling jitter of a loaded 2-core machine: a thread woken at its deadline may run that much later (an
answer built at 983 ms for a 900 ms bound was seen with the load average at 12)."""

TRANSPORT_SPREAD_S = 0.6
"""How much later than a quiet burst's the transport of one answer may be while the machine is busy: the most seen
over the quiet burst's was 0.19 s (1.109 s round trip, 0.88 s server-side, 0.036 s quiet transport; hunt run 26,
beside two busy loops), and this leaves it 3x. A server that read its calls late or held answers back would still
exceed it: a tap queued behind a goto answers seconds late."""


def test_twenty_concurrent_calls_each_answer_inside_their_bound_while_gotos_hold_the_device(mcp):
    """Gotos and taps mixed, 20 at once: taps queue behind the gotos for the device and must still answer in time.

    The server counts each bound from the moment the call came off the wire (engine.faces.mcpwire), so its answer is
    built inside the bound (``elapsed_ms``). The client's round trip adds the transport, which the server cannot
    bound: the SDK client queues 20 concurrent requests through its own writer. That allowance is the transport
    measured here, with 20 concurrent alas_tools calls (no device, answered at once) over the same client, once warm
    (the first burst also starts both sides' thread pools), plus TRANSPORT_SPREAD_S. The server's own answer is
    allowed JITTER_S for the scheduling jitter of a loaded 2-core machine (it is built 20 ms before the bound,
    engine.core.bounded).
    Measured over 17 whole-suite runs (docs/benchmarks/timing-spread.md): taps answered at 0.880-0.884 s
    server-side in every run, idle and busy; the quiet burst's transport 0.013-0.055 s; a tap's round trip 0.90-0.98 s
    idle, up to 1.109 s beside two busy loops (hunt run 26: its answer's transport 0.23 s against the quiet burst's
    0.036 s, the client's event loop reading 16 answers at once while four gotos ran).
    """
    from engine.config.policies import load_policies

    policies = load_policies()
    _burst(mcp, [("alas_tools", {})] * 20)
    baseline = _burst(mcp, [("alas_tools", {})] * 20)
    transport = max(rtt - result["data"]["elapsed_ms"] / 1000 for _, result, rtt in baseline)
    allowance = transport + TRANSPORT_SPREAD_S
    within(transport, 1.0, "MCP transport of 20 concurrent calls, wall (s)")
    assert body(mcp.call("alas_goto", {"page": "page_main"}))["ok"]
    pages = ["page_commission", "page_dock", "page_main", "page_reward"]
    calls = [("alas_goto", {"page": pages[i // 5]}) if i % 5 == 0 else ("adb_tap", {"x": 5 + i, "y": 5})
             for i in range(20)]
    answers = _burst(mcp, calls)
    bounds = {"alas_goto": policies.get("goto").timeout, "adb_tap": policies.get("tap").timeout}
    for name, result, rtt in answers:
        bound = bounds[name]
        server_ms = result["data"]["elapsed_ms"]
        within(server_ms, (bound + JITTER_S) * 1000, f"{name} among 20 concurrent calls, server-side (ms)")
        within(rtt, bound + allowance, f"{name} among 20 concurrent calls, round trip (s)")
    statuses = {result["status"] for name, result, _ in answers if name == "adb_tap"}
    assert "timeout" in statuses, statuses  # some taps did wait for the device, and answered in time all the same


def test_unknown_arguments_and_loose_types_are_bad_arguments_naming_them(mcp):
    extra = body(mcp.call("adb_tap", {"x": 1, "y": 1, "z": 2, "force": True}))
    assert extra["status"] == "bad_argument"
    assert sorted(e["field"] for e in extra["data"]["errors"]) == ["force", "z"]
    assert "unknown argument" in extra["text"]
    for arguments in ({"x": "10", "y": 1}, {"x": True, "y": 1}, {"x": 10.0, "y": 1}):
        loose = body(mcp.call("adb_tap", arguments))
        assert loose["status"] == "bad_argument" and loose["data"]["errors"][0]["field"] == "x", arguments
    assert body(mcp.call("alas_goto", {"page": 7}))["status"] == "bad_argument"


# --------------------------------------------------------------------------------------------- a hung device


def test_a_hung_device_makes_each_tool_answer_timeout_inside_its_bound(workdir):
    from engine.config.policies import load_policies

    policies = load_policies()
    scenario = workdir / "hung.yaml"
    scenario.write_text("description: every device request hangs\nhang_p: 1.0\nhang_seconds: 60\n")
    client, close = open_client(server_params("--scenario", str(scenario)))
    try:
        calls = {
            "adb_health": ({}, "health"),
            "adb_screenshot": ({}, "screenshot"),
            "adb_tap": ({"x": 10, "y": 10}, "tap"),
            "adb_swipe": ({"x1": 1, "y1": 1, "x2": 9, "y2": 9, "duration_ms": 50}, "swipe"),
            "alas_state": ({}, "state"),
            "alas_goto": ({"page": "page_main"}, "goto"),
        }

        async def timed(name: str, args: dict) -> tuple[dict, float]:
            start = time.monotonic()
            result = await client.client.call_tool(name, args)
            return body(result), time.monotonic() - start

        # All at once: each is bounded on its own, whatever the others are stuck in.
        futures = {name: client.portal.start_task_soon(timed, name, args) for name, (args, _) in calls.items()}
        for name, (_, policy) in calls.items():
            result, elapsed = futures[name].result(60)
            assert not result["ok"] and result["status"] == "timeout", (name, result["text"])
            within(elapsed, policies.get(policy).timeout + 1.0, f"{name} against a hung device, wall (s)")
            assert result["data"]["screenshot_analysis"]["suggested_action"] in ("reconnect", "retry"), name
        assert body(client.call("alas_tools"))["ok"]  # it never touches the device
    finally:
        close()


# --------------------------------------------------------------------------------------------- streamable HTTP


def test_streamable_http_serves_the_same_tools_on_loopback():
    port = free_port()
    env = {**os.environ}
    env.pop("GEMINI_API_KEY", None)
    with tempfile.TemporaryFile() as stderr, subprocess.Popen(
        [sys.executable, "-m", "engine", "serve", "--transport", "http", "--port", str(port)], cwd=ROOT, env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
    ) as proc:
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                    break
                except OSError:
                    time.sleep(0.1)

            async def session() -> tuple[list[str], dict]:
                async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=30) as client:
                    names = [t.name for t in (await client.list_tools()).tools]
                    return names, body(await client.call_tool("adb_health", {}))

            names, health = anyio.run(session)
            assert sorted(names) == sorted(TOOLS)
            assert health["status"] == "healthy"
        finally:
            proc.terminate()
            proc.wait(10)
        assert proc.stdout.read() == b""  # HTTP mode: nothing on stdout at all


# --------------------------------------------------------------------------------------------- stdout hygiene


def _rpc(id_: int | None, method: str, params: dict | None = None) -> bytes:
    message: dict = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        message["id"] = id_
    if params is not None:
        message["params"] = params
    return (json.dumps(message) + "\n").encode()


def test_stdout_carries_only_json_rpc_even_with_debug_logging():
    requests = b"".join([
        _rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "hygiene", "version": "0"}}),
        _rpc(None, "notifications/initialized"),
        _rpc(2, "tools/list"),
        _rpc(3, "tools/call", {"name": "adb_health", "arguments": {}}),
        _rpc(4, "tools/call", {"name": "alas_state", "arguments": {}}),
        _rpc(5, "tools/call", {"name": "adb_tap", "arguments": {"x": "nope"}}),
    ])
    env = {**os.environ, "ENGINE_LOG_LEVEL": "DEBUG"}
    env.pop("GEMINI_API_KEY", None)
    with tempfile.TemporaryFile() as stderr, subprocess.Popen(
        [sys.executable, "-m", "engine", "serve"], cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=stderr,
    ) as proc:
        proc.stdin.write(requests)
        proc.stdin.flush()
        answered: dict[int, dict] = {}
        lines: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(answered) < 5 and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            message = json.loads(line)
            if "id" in message:
                answered[message["id"]] = message
        proc.stdin.close()  # end of input: the server leaves
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        rest = proc.stdout.read()
        stderr.seek(0)
        errors = stderr.read()
    lines += rest.splitlines(keepends=True)
    assert lines and lines[0].startswith(b"{")
    for line in lines:
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert sorted(answered) == [1, 2, 3, 4, 5]
    assert len(answered[2]["result"]["tools"]) == 8
    health = answered[3]["result"]["structuredContent"]
    assert health["status"] == "healthy"
    assert answered[5]["result"]["isError"] is True
    assert b"DEBUG" in errors  # the logs went somewhere: stderr


# --------------------------------------------------------------------------------------------- one ToolResult


def _calls(page: str) -> list[tuple[str, dict]]:
    """One call per tool, and the ways a call can fail before or after reaching the device."""
    return [
        ("alas_goto", {"page": page}),
        ("adb_health", {}),
        ("adb_screenshot", {}),
        ("adb_tap", {"x": 5, "y": 5}),
        ("adb_swipe", {"x1": 600, "y1": 300, "x2": 700, "y2": 300, "duration_ms": 100}),
        ("alas_state", {}),
        ("alas_tools", {}),
        ("alas_run", {"name": "no_such_task"}),
        ("alas_goto", {"page": "page_comission"}),
        ("adb_tap", {"x": 5000, "y": 1}),
        ("adb_tap", {"x": "ten", "y": 1}),
        ("adb_tapp", {"x": 1, "y": 1}),
    ]


def test_every_tool_declares_the_tool_result_schema_and_every_answer_validates(mcp):
    import jsonschema

    from engine.core.results import DATA_KEYS, tool_result_schema

    listed = {tool.name: tool for tool in mcp.list_tools().tools}
    for tool in listed.values():
        assert tool.output_schema is not None, tool.name
        assert tool.output_schema["required"] == ["ok", "status", "text", "data"]
    schema = tool_result_schema()
    for name, arguments in _calls("page_main"):
        result = body(mcp.call(name, arguments))
        jsonschema.validate(result, listed.get(name, listed["adb_tap"]).output_schema)
        jsonschema.validate(result, schema)
        assert set(DATA_KEYS) <= set(result["data"]), (name, set(DATA_KEYS) - set(result["data"]))
        assert result["data"]["tool"] == name


def _stable(value):
    """A result without what differs between two runs of the same call (timings, ages, file paths)."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items()
                if k not in ("elapsed_ms", "latency_ms", "verified_age_s", "error_bundle", "png_bytes")}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    if isinstance(value, float):
        return round(value, 2)
    return value


def test_the_cli_and_mcp_give_the_same_tool_result_for_the_same_call(tmp_path):
    """The contract over both faces: a fresh simulator, the same calls, the same ToolResults."""
    flags = {
        "alas_goto": lambda a: ["--goto", a["page"]],
        "alas_tools": lambda a: ["--list-tools"],
        "alas_run": lambda a: ["--run", a["name"]],
        "adb_tap": lambda a: ["--tap", str(a["x"]), str(a["y"])],
    }
    calls = [(n, a) for n, a in _calls("page_reward") if n in flags and not isinstance(a.get("x", 0), str)]
    client, close = open_client(server_params("--seed", "2"))
    try:
        over_mcp = [body(client.call(name, arguments)) for name, arguments in calls]
    finally:
        close()
    env = {**{k: v for k, v in os.environ.items() if k != "GEMINI_API_KEY"}, "ENGINE_SERIAL": "sim"}
    for (name, arguments), mcp_result in zip(calls, over_mcp):
        # Each CLI call opens a fresh simulator; the MCP server kept one, so only the first call (the goto from
        # the start page) and calls that do not depend on the game's state are compared.
        proc = subprocess.run([sys.executable, "-m", "engine", "cli", *flags[name](arguments), "--json",
                               "--seed", "2"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        cli_result = json.loads(proc.stdout)
        if name == "adb_tap" and arguments["x"] < 1280:
            continue  # a tap's observation depends on where the game is
        assert _stable(cli_result) == _stable(mcp_result), name
