"""The MCP face: the eight tools of engine.tools served over stdio or streamable HTTP.

Each tool is an async handler that hands the work to engine.tools on a worker thread and awaits it, so a long
goto never blocks the transport: while one runs, adb_health and alas_state are served on their own threads.
The tools layer bounds every call; ``anyio.fail_after`` (bound plus a grace) is a second belt. When the client
cancels a call or its request times out (the SDK then sends ``notifications/cancelled``), the handler's scope is
cancelled and the tool's cancel Event is set: the navigation stops at its next hop boundary.

Every result is a ToolResult: its JSON as text content and as structured content, a screenshot also as image
content, and ``isError`` when it is not ok. Bad arguments (wrong types, missing fields) are rejected by the
SDK's argument validation with a structured error before any tool runs.

stdout carries only JSON-RPC: logging goes to stderr (configured by ``python -m engine`` before anything logs),
``print`` in library code lands on stderr (``sys.stdout`` is stderr while the session opens, and the SDK's stdio
transport points fd 1 at stderr while it serves), and the real stdout is the transport's alone.
"""

# No `from __future__ import annotations`: the SDK reads the tools' parameter types, and the local aliases
# (X, Y) must be real objects when it does.
import base64
import contextlib
import json
import logging
import os
import sys
import threading
from functools import partial
from typing import Annotated, Any, Iterator

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from engine import __version__
from engine.results import ToolResult
from engine.tools import SPECS, ImageResult, Tools, closest, suggested_action

log = logging.getLogger(__name__)

GRACE_S = 0.5
"""How far past a tool's bound the server's own belt may let a call run before answering timeout itself."""

INSTRUCTIONS = """\
Drives the game Azur Lane (or any game described by a YAML page graph) on an Android device over ADB.
Every tool answers {ok, status, text, data}; data carries the observation of the screen after the action,
the evidence for it, and screenshot_analysis.suggested_action when something went wrong (one of retry,
dismiss_popup_then_retry, use_vision, reconnect, restart_app, human). Prefer alas_goto and alas_run (they
verify every step by looking) over raw adb_tap/adb_swipe. alas_tools lists the tasks alas_run knows
(login is one). Every tool is time-bounded; a timeout is a result, not a hang."""


def to_call_result(result: ToolResult) -> CallToolResult:
    """A ToolResult as MCP content: JSON text, structured content, and the screenshot as an image."""
    body = result.to_dict()
    content: list[Any] = [TextContent(type="text", text=json.dumps(body, ensure_ascii=False, default=str))]
    if isinstance(result, ImageResult) and result.png:
        content.append(ImageContent(type="image", data=base64.b64encode(result.png).decode(), mime_type="image/png"))
    return CallToolResult(content=content, structured_content=body, is_error=not result.ok)


async def invoke(tools: Tools, name: str, arguments: dict[str, Any]) -> CallToolResult:
    """Run one tool on a worker thread; cancellation of the request sets the tool's cancel Event."""
    cancel = threading.Event()
    bound = tools.bound(name)
    try:
        with anyio.fail_after(bound + GRACE_S):
            result = await anyio.to_thread.run_sync(
                partial(tools.call, name, arguments, cancel=cancel), abandon_on_cancel=True
            )
    except TimeoutError:
        cancel.set()
        result = ToolResult(False, "timeout", f"{name} did not answer within {bound:g} s",
                            {"tool": name, "screenshot_analysis": {"suggested_action": "retry"}})
    except anyio.get_cancelled_exc_class():
        cancel.set()
        log.info("%s cancelled by the client; its worker stops at the next checkpoint", name)
        raise
    return to_call_result(result)


def bad_arguments(name: str, exc: ValidationError) -> ToolResult:
    """A structured ``bad_argument`` result naming each wrong field (the values stay out: they are the caller's)."""
    problems = [
        {"field": ".".join(str(p) for p in err["loc"]) or "(arguments)", "problem": err["msg"], "type": err["type"]}
        for err in exc.errors()
    ]
    listed = "; ".join(f"{p['field']}: {p['problem']}" for p in problems)
    return ToolResult(False, "bad_argument", f"{name}: bad arguments: {listed}", {
        "tool": name, "tool_success": False, "state_verification": "not_checked", "errors": problems,
        "screenshot_analysis": {"blocking_element": None, "ocr_detected": [],
                                "suggested_action": suggested_action("bad_argument")},
    })


class EngineServer(MCPServer):
    """MCPServer whose argument errors and unknown tool names come back as structured ToolResults."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        known = [tool.name for tool in await self.list_tools()]
        if name not in known:
            options = closest(name, known)
            hint = f"; did you mean {', '.join(options)}?" if options else ""
            return to_call_result(ToolResult(False, "bad_argument", f"unknown tool {name!r}{hint}", {
                "tool": name, "suggestions": options,
                "screenshot_analysis": {"suggested_action": suggested_action("bad_argument")},
            }))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return to_call_result(bad_arguments(name, exc.__cause__))
            raise


def _width_height(tools: Tools) -> tuple[int, int]:
    width, height = tools.graph.resolution
    return int(width), int(height)


def build_server(tools: Tools) -> EngineServer:
    """An MCPServer exposing the eight tools over `tools`."""
    server = EngineServer("alas-engine", version=__version__, instructions=INSTRUCTIONS)
    width, height = _width_height(tools)
    X = Annotated[int, Field(description=f"Horizontal pixel, 0..{width - 1} (the graph's {width}x{height}).")]
    Y = Annotated[int, Field(description=f"Vertical pixel, 0..{height - 1}.")]

    def describe(name: str) -> str:
        spec = SPECS[name]
        text = f"{spec.summary} Bounded: answers within {tools.bound(name):g} s."
        if name == "alas_goto":
            pages = [p for p in tools.graph.page_names if p != tools.graph.unknown_page]
            text += f" Pages: {', '.join(pages)}."
        if name == "alas_run" and tools.navigator is not None:
            names = [str(t.get("name")) for t in tools.navigator.task_list()]
            text += f" Tasks: {', '.join(names)}." if names else ""
        return text

    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)
    acting = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                             open_world_hint=False)

    async def adb_health() -> CallToolResult:
        return await invoke(tools, "adb_health", {})

    async def adb_screenshot() -> CallToolResult:
        return await invoke(tools, "adb_screenshot", {})

    async def adb_tap(x: X, y: Y) -> CallToolResult:
        return await invoke(tools, "adb_tap", {"x": x, "y": y})

    async def adb_swipe(
        x1: X, y1: Y, x2: X, y2: Y,
        duration_ms: Annotated[int, Field(description="Length of the gesture in milliseconds.")] = 300,
    ) -> CallToolResult:
        return await invoke(tools, "adb_swipe", {"x1": x1, "y1": y1, "x2": x2, "y2": y2, "duration_ms": duration_ms})

    async def alas_state() -> CallToolResult:
        return await invoke(tools, "alas_state", {})

    async def alas_goto(
        page: Annotated[str, Field(description="Destination page name, e.g. page_commission.")],
    ) -> CallToolResult:
        return await invoke(tools, "alas_goto", {"page": page})

    async def alas_tools() -> CallToolResult:
        return await invoke(tools, "alas_tools", {})

    async def alas_run(
        name: Annotated[str, Field(description="Task name as alas_tools lists it, e.g. login.")],
    ) -> CallToolResult:
        return await invoke(tools, "alas_run", {"name": name})

    handlers = {
        "adb_health": (adb_health, read_only),
        "adb_screenshot": (adb_screenshot, read_only),
        "adb_tap": (adb_tap, acting),
        "adb_swipe": (adb_swipe, acting),
        "alas_state": (alas_state, read_only),
        "alas_goto": (alas_goto, acting),
        "alas_tools": (alas_tools, read_only),
        "alas_run": (alas_run, acting),
    }
    for name, (fn, annotations) in handlers.items():
        server.add_tool(fn, name=name, description=describe(name), annotations=annotations)
    return server


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send everything written to stdout (Python prints and C writes to fd 1) to stderr for a while."""
    sys.stdout.flush()
    saved_fd = os.dup(1)
    saved = sys.stdout
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        sys.stderr.flush()
        sys.stdout = saved
        os.dup2(saved_fd, 1)
        os.close(saved_fd)


def serve(open_tools: Any, *, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8000) -> None:
    """Open the tools (``open_tools() -> (Tools, close)``) with stdout guarded, then serve until the client leaves.

    Args:
        open_tools: builds the Tools (opening the session: device, simulator, graph) and a closer.
        transport: ``stdio`` or ``http`` (streamable HTTP on host:port, loopback by default).
    """
    with stdout_to_stderr():
        tools, close = open_tools()
        server = build_server(tools)
    try:
        if transport == "stdio":
            # The SDK's stdio transport takes fd 1 for the wire and points fd 1 at stderr while it serves.
            anyio.run(server.run_stdio_async)
        elif transport == "http":
            with stdout_to_stderr():
                anyio.run(partial(server.run_streamable_http_async, host=host, port=port))
        else:
            raise ValueError(f"unknown transport {transport!r}; use stdio or http")
    finally:
        with stdout_to_stderr():
            tools.close()
            close()
