"""The MCP face: the eight tools of engine.runtime.tools served over stdio or streamable HTTP.

Each tool is an async handler that hands the work to engine.runtime.tools on a worker thread and awaits it, so a long
goto never blocks the transport: while one runs, adb_health and alas_state are served on their own threads.
The tools layer bounds every call; ``anyio.fail_after`` (bound plus a grace) is a second belt. When the client
cancels a call or its request times out (the SDK then sends ``notifications/cancelled``), the handler's scope is
cancelled and the tool's cancel Event is set: the navigation stops at its next hop boundary. A call's bound
counts from the moment its request came off the wire: waiting to be read, to reach a worker thread and for the
device all count inside it.

Over HTTP, engine.faces.mcpauth says who may call: a bearer token (required off loopback, checked by the SDK's own
auth) and the Host and Origin names the face answers to.

Every result is the ToolResult engine.runtime.tools made, passed through unchanged: its JSON as text content and as
structured content (every tool declares the ToolResult's JSON Schema as its ``outputSchema``), a screenshot also
as image content, and ``isError`` when it is not ok. Bad arguments (wrong types, missing fields) are rejected by
the SDK's argument validation and come back as the tools' ``bad_argument`` result before any tool runs; so do
arguments a tool does not take. Types are strict: an integer must be a JSON integer (not ``"10"``, ``true`` or
``10.0``), a string a JSON string. Instructions, descriptions and examples name the loaded graph's game, pages and
tasks.

stdout carries only JSON-RPC: logging goes to stderr (configured by ``python -m engine`` before anything logs),
``print`` in library code lands on stderr (``sys.stdout`` is stderr while the session opens and while it serves,
fd 1 included), and the real stdout is the transport's alone: engine.faces.mcpwire writes answers to a private copy of
it from a thread of its own, and reads stdin on another, stamping each call's arrival so its bound counts the
time it waited to be read.
"""

# No `from __future__ import annotations`: the SDK reads the tools' parameter types, and the local aliases
# (X, Y) must be real objects when it does.
import base64
import contextlib
import contextvars
import inspect
import json
import logging
import math
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from engine import __version__
from engine.core.results import ToolResult, tool_result_model
from engine.faces.mcpauth import (
    BearerToken,
    auth_settings,
    check_bind,
    startup_line,
    transport_security,
)
from engine.faces.mcpwire import QueuedStdout, StampedStdin
from engine.runtime.tools import SPECS, Tools

log = logging.getLogger(__name__)

GRACE_S = 0.05
"""How far past a tool's bound the server's own belt lets a call run before answering timeout itself. The tools
layer answers by its own deadline (counted from the request's arrival here), so the belt only catches a worker
thread that could not even report; a long grace would be a late answer the client sees."""

SWITCH_INTERVAL_S = 0.001
"""The interpreter's thread switch interval while serving. The event loop and the wire's threads share the GIL
with navigation threads that compute; at Python's default 5 ms a thread woken by a new request or a finished
answer may wait that long for each hand-off. 1 ms keeps the transport responsive for a small cost in switching."""

INSTRUCTIONS = """\
Drives the game {game} (described by a YAML page graph) on an Android device over ADB.
Every tool answers {{ok, status, text, data}}; data carries the observation of the screen after the action,
the evidence for it, and screenshot_analysis.suggested_action when something went wrong (one of retry,
dismiss_popup_then_retry, use_vision, reconnect, restart_app, human). Prefer alas_goto and alas_run (they
verify every step by looking) over raw adb_tap/adb_swipe. alas_tools lists the tasks alas_run knows{tasks}.
Every tool is time-bounded; a timeout is a result, not a hang."""

ARRIVED: contextvars.ContextVar[float | None] = contextvars.ContextVar("arrived", default=None)
"""When the request being handled came off the wire (the tools' clock), if the transport recorded it."""

ToolResultJson = tool_result_model()
Answer = Annotated[CallToolResult, ToolResultJson]
"""What every tool handler returns: a CallToolResult whose structured content is a ToolResult (outputSchema)."""


def to_call_result(result: ToolResult) -> CallToolResult:
    """A ToolResult as MCP content: JSON text, structured content, and the screenshot as an image."""
    body = result.to_dict()
    content: list[Any] = [TextContent(type="text", text=json.dumps(body, ensure_ascii=False, default=str))]
    if result.png:
        content.append(ImageContent(type="image", data=base64.b64encode(result.png).decode(), mime_type="image/png"))
    return CallToolResult(content=content, structured_content=body, is_error=not result.ok)


async def invoke(tools: Tools, name: str, arguments: dict[str, Any]) -> CallToolResult:
    """Run one tool on a worker thread; cancellation of the request sets the tool's cancel Event."""
    cancel = threading.Event()
    started = min(tools.clock(), ARRIVED.get() or math.inf)  # queued behind other requests: that wait counts
    try:
        bound = tools.task_bound(arguments["name"]) if name == "alas_run" and "name" in arguments else tools.bound(name)
        with anyio.fail_after(bound + GRACE_S):
            result = await anyio.to_thread.run_sync(
                partial(tools.call, name, arguments, cancel=cancel, started=started), abandon_on_cancel=True
            )
    except TimeoutError:
        cancel.set()
        result = tools.overrun(name, started)
    except anyio.get_cancelled_exc_class():
        cancel.set()
        log.info("%s cancelled by the client; its worker stops at the next checkpoint", name)
        raise
    return to_call_result(result)


def problems_of(exc: ValidationError) -> list[dict[str, str]]:
    """Each wrong field of a validation error (the values stay out: they are the caller's)."""
    return [
        {"field": ".".join(str(p) for p in err["loc"]) or "(arguments)", "problem": err["msg"], "type": err["type"]}
        for err in exc.errors()
    ]


def unknown_arguments(arguments: Any, known: set[str]) -> list[dict[str, str]]:
    """A problem per argument the tool does not take (the SDK would drop them silently)."""
    if not isinstance(arguments, dict):
        return [{"field": "(arguments)", "problem": "arguments must be a JSON object", "type": "dict_type"}]
    listed = ", ".join(sorted(known)) or "none"
    return [{"field": str(key), "problem": f"unknown argument (this tool takes: {listed})", "type": "extra_forbidden"}
            for key in arguments if key not in known]


class EngineServer(MCPServer):
    """MCPServer whose argument errors, unknown arguments and unknown tool names come back as the tools' structured
    ToolResults."""

    def __init__(self, tools: Tools, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tools = tools
        self.parameters: dict[str, set[str]] = {}
        """Each tool's argument names (from its handler's signature, which is also its input schema)."""
        self.arrivals: dict[str, float] = {}
        """When each pending tools/call request was read off stdio, by request id (engine.faces.mcpwire)."""

    async def run_stdio_async(self) -> None:
        """The SDK's stdio transport, its stdin read by engine.faces.mcpwire so each call's arrival is known: under a
        burst
        of calls a request waits to be read, and its bound must count that wait."""
        stdin = StampedStdin(sys.stdin.buffer, self.tools.clock).start()
        stdout = QueuedStdout(os.fdopen(os.dup(sys.stdout.fileno()), "wb"))  # the wire: the real fd 1, kept
        self.arrivals = stdin.arrivals
        try:
            with stdout_to_stderr():  # stray prints and C writes to fd 1 stay off the wire while serving
                async with stdio_server(stdin=stdin, stdout=stdout) as (read_stream, write_stream):  # type: ignore
                    await self._lowlevel_server.run(read_stream, write_stream,
                                                    self._lowlevel_server.create_initialization_options())
        finally:
            stdout.close()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        arrived = self.arrivals.pop(str(context.request_id), None) if context is not None else None
        if name not in SPECS:
            return to_call_result(self.tools.call(name, arguments))  # an unknown tool, with suggestions
        ARRIVED.set(arrived)
        extra = unknown_arguments(arguments, self.parameters.get(name, set()))
        if extra:
            return to_call_result(self.tools.bad_arguments(name, extra))
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return to_call_result(self.tools.bad_arguments(name, problems_of(exc.__cause__)))
            raise


def instructions(tools: Tools) -> str:
    graph = tools.graph
    names = [t["name"] for t in tools.tasks.book.describe()] if tools.tasks is not None else []
    listed = f" ({', '.join(names[:8])}{', ...' if len(names) > 8 else ''})" if names else ""
    return INSTRUCTIONS.format(game=graph.game, tasks=listed)


def describe(tools: Tools, name: str) -> str:
    """A tool's description: what it does, its bound, and for goto and run the names it takes."""
    text = f"{SPECS[name].summary} Bounded: answers within {tools.bound(name):g} s."
    if name == "alas_goto":
        text += f" Pages: {', '.join(p for p in tools.graph.page_names if p != tools.graph.unknown_page)}."
    if name == "alas_run":
        names = [t["name"] for t in tools.all_tasks()]  # outside tasks too (alas:Commission)
        text += f" Tasks: {', '.join(names)}." if names else ""
        longer = [f"{t} {tools.task_bound(t):g} s" for t in names if tools.task_bound(t) != tools.bound(name)]
        text += f" Longer bounds: {', '.join(longer)}." if longer else ""
    return text


def handlers(tools: Tools) -> dict[str, Any]:
    """The eight async handlers; their signatures are the tools' input schemas."""
    width, height = (int(v) for v in tools.graph.resolution)
    X = Annotated[int, Field(strict=True, description=f"Horizontal pixel, 0..{width - 1} (the graph's {width}x{height}).")]
    Y = Annotated[int, Field(strict=True, description=f"Vertical pixel, 0..{height - 1}.")]
    pages = [p for p in tools.graph.page_names if p != tools.graph.unknown_page]
    tasks = tools.tasks.names() if tools.tasks is not None else []
    page_example = f", e.g. {pages[-1]}" if pages else ""
    task_example = f", e.g. {tasks[0]}" if tasks else ""

    async def adb_health() -> Answer:
        return await invoke(tools, "adb_health", {})

    async def adb_screenshot() -> Answer:
        return await invoke(tools, "adb_screenshot", {})

    async def adb_tap(x: X, y: Y) -> Answer:
        return await invoke(tools, "adb_tap", {"x": x, "y": y})

    async def adb_swipe(
        x1: X, y1: Y, x2: X, y2: Y,
        duration_ms: Annotated[int, Field(strict=True, description="Length of the gesture in milliseconds.")] = 300,
    ) -> Answer:
        return await invoke(tools, "adb_swipe", {"x1": x1, "y1": y1, "x2": x2, "y2": y2, "duration_ms": duration_ms})

    async def alas_state() -> Answer:
        return await invoke(tools, "alas_state", {})

    async def alas_goto(page: Annotated[str, Field(strict=True, description=f"Destination page name{page_example}.")]
                        ) -> Answer:
        return await invoke(tools, "alas_goto", {"page": page})

    async def alas_tools() -> Answer:
        return await invoke(tools, "alas_tools", {})

    async def alas_run(name: Annotated[str, Field(strict=True,
                                                  description=f"Task name as alas_tools lists it{task_example}.")],
                       resume: Annotated[bool, Field(strict=True, description="For a routine of several tasks: skip "
                                                     "the ones it already did today.")] = False,
                       ) -> Answer:
        return await invoke(tools, "alas_run", {"name": name, **({"resume": True} if resume else {})})

    return {fn.__name__: fn for fn in (adb_health, adb_screenshot, adb_tap, adb_swipe, alas_state, alas_goto,
                                       alas_tools, alas_run)}


def build_server(tools: Tools, token: str | None = None) -> EngineServer:
    """An MCPServer exposing the eight tools over `tools`; with a `token`, its HTTP face requires it as a bearer
    token (the SDK's auth, engine.faces.mcpauth)."""
    auth: dict[str, Any] = {"token_verifier": BearerToken(token), "auth": auth_settings()} if token else {}
    server = EngineServer(tools, name="alas-engine", version=__version__, instructions=instructions(tools), **auth)
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                open_world_hint=False)
    acting = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                             open_world_hint=False)
    for name, fn in handlers(tools).items():
        annotations = acting if SPECS[name].acts else read_only
        server.add_tool(fn, name=name, description=describe(tools, name), annotations=annotations)
        server.parameters[name] = set(inspect.signature(fn).parameters)
    return server


def http_server(server: EngineServer, host: str, port: int, allowed_hosts: Sequence[str],
                ssl_certfile: str | None, ssl_keyfile: str | None) -> Any:
    """A uvicorn server for the streamable HTTP app, its Host/Origin check set by engine.faces.mcpauth and its logs
    left to the process's logging (stderr, redacted), with uvicorn's TLS when a certificate is given."""
    import uvicorn

    app = server.streamable_http_app(host=host, transport_security=transport_security(host, allowed_hosts))
    config = uvicorn.Config(app, host=host, port=port, log_config=None, log_level=None,
                            ssl_certfile=ssl_certfile, ssl_keyfile=ssl_keyfile)
    print(startup_line(host, port, locked=server.settings.auth is not None, tls=ssl_certfile is not None),
          file=sys.stderr, flush=True)
    return uvicorn.Server(config)


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


def serve(open_tools: Any, *, transport: str = "stdio", host: str = "127.0.0.1", port: int = 8000,
          token: str | None = None, allowed_hosts: Sequence[str] = (), ssl_certfile: str | None = None,
          ssl_keyfile: str | None = None) -> None:
    """Open the tools (``open_tools() -> (Tools, close)``) with stdout guarded, then serve until the client leaves.

    Args:
        open_tools: builds the Tools (opening the session: device, simulator, graph) and a closer.
        transport: ``stdio`` or ``http`` (streamable HTTP on host:port, loopback by default).
        token: the bearer token every HTTP request must carry (required off loopback: mcpauth.check_bind).
        allowed_hosts: names the HTTP face answers to besides its own addresses (Host and Origin checks).
        ssl_certfile, ssl_keyfile: serve HTTPS with this certificate (uvicorn's own TLS).
    """
    if transport == "http":
        check_bind(host, token)  # the caller checked already; this face never serves off loopback unlocked
    with stdout_to_stderr():
        tools, close = open_tools()
        server = build_server(tools, token)
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        if transport == "stdio":
            # The wire is a private copy of fd 1 (engine.faces.mcpwire); fd 1 itself points at stderr while it serves.
            anyio.run(server.run_stdio_async)
        elif transport == "http":
            with stdout_to_stderr():
                anyio.run(http_server(server, host, port, allowed_hosts, ssl_certfile, ssl_keyfile).serve)
        else:
            raise ValueError(f"unknown transport {transport!r}; use stdio or http")
    finally:
        sys.setswitchinterval(switch_interval)
        with stdout_to_stderr():
            tools.close()
            close()
