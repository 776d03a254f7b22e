"""What every studio handler answers with: JSON and errors that are never cached, and the Studio of a request."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

NO_STORE = {"Cache-Control": "no-store"}


def studio_of(request: Request) -> Any:
    """The engine.faces.studio.app.Studio the app serves."""
    return request.app.state.studio


def error(status: int, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": message, **extra}, status_code=status, headers=NO_STORE)


def as_json(body: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=NO_STORE)
