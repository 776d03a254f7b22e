"""What every studio handler answers with: JSON and errors that are never cached, the Studio of a request, and the
shield that turns a failure no handler expected into a structured 503 instead of a 500."""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

log = logging.getLogger(__name__)

NO_STORE = {"Cache-Control": "no-store"}


def studio_of(request: Request) -> Any:
    """The engine.faces.studio.app.Studio the app serves."""
    return request.app.state.studio


def error(http_status: int, message: str, /, **extra: Any) -> JSONResponse:
    """A JSON error ``{"error": message, **extra}``. The first two are positional-only so that `extra` may carry a
    ``status`` (the engine's status word, as a ToolResult names it) beside the HTTP status."""
    return JSONResponse({"error": message, **extra}, status_code=http_status, headers=NO_STORE)


def as_json(body: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=NO_STORE)


class Shield:
    """ASGI middleware, the last resort behind every handler: an exception that no handler turned into an answer
    is logged with its traceback and answered 503 ``{"error": ..., "internal": true}`` (when no response has
    started yet), never a bare 500. ``internal`` marks a bug to report; the expected faults (a device that drops
    out, a bad request) are answered by their handlers with a 4xx or 503 of their own."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watched(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watched)
        except Exception as exc:  # the page gets an answer it can show, the log gets the bug
            log.exception("studio: %s %s failed", scope.get("method"), scope.get("path"))
            if started:
                raise
            reply = error(503, f"{scope.get('method')} {scope.get('path')} failed: {type(exc).__name__}: {exc}",
                          internal=True)
            await reply(scope, receive, send)
