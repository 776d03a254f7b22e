"""The studio's safety rules: loopback Host and Origin only, bounded request bodies, file paths kept in their roots.

A page on another site can make a browser send requests to ``127.0.0.1`` in two ways: through a DNS name that
it points at 127.0.0.1 (DNS rebinding: the Host header then names the attacker's domain) and through a cross-site
form or ``fetch`` (the Origin header then names the attacker's site). ``LoopbackGuard`` refuses both with 403.
``BodyLimit`` answers 413 as soon as a body grows past its limit, whether or not a Content-Length was sent.
``confine`` is the one way a name from a request becomes a path.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Awaitable, Callable
from urllib.parse import urlsplit

from engine.core.errors import PathRefused

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
JSON_LIMIT = 1 << 20
"""Largest JSON body the API reads (1 MiB)."""
UPLOAD_LIMIT = 8 << 20
"""Largest upload (8 MiB)."""
_HOST = re.compile(r"^(\[[0-9a-fA-F:.]+\]|[^:\[\]]+)(?::\d{1,5})?$")


def host_name(host: str) -> str | None:
    """The host part of a Host header (``[::1]:8011`` -> ``[::1]``), lower-cased; None when malformed."""
    match = _HOST.match(host.strip())
    return match.group(1).lower() if match else None


def is_loopback_host(host: str | None) -> bool:
    return bool(host) and host_name(host) in LOOPBACK_HOSTS


def is_loopback_origin(origin: str) -> bool:
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and is_loopback_host(parts.netloc)


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


class LoopbackGuard:
    """ASGI middleware: 403 for a Host header that is not loopback, and for a state-changing request whose Origin
    is not loopback (a cross-site POST)."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        if not is_loopback_host(host):
            await _refuse(send, 403, f"refused: Host {host!r} is not loopback (127.0.0.1, localhost or [::1])")
            return
        origin = _header(scope, b"origin")
        # Origin "null" (a sandboxed frame, a file: page) is refused too: a sandboxed iframe on any site could
        # otherwise post forms to the studio.
        if scope.get("method", "GET") not in SAFE_METHODS and origin is not None and not is_loopback_origin(origin):
            await _refuse(send, 403, f"refused: Origin {origin!r} is not loopback")
            return
        await self.app(scope, receive, send)


class _TooLarge(Exception):
    pass


class BodyLimit:
    """ASGI middleware: 413 for a body over `limit` bytes (`upload_limit` on the paths in `upload_paths`)."""

    def __init__(self, app: App, *, limit: int = JSON_LIMIT, upload_limit: int = UPLOAD_LIMIT,
                 upload_paths: frozenset[str] = frozenset({"/api/upload"})) -> None:
        self.app, self.limit, self.upload_limit, self.upload_paths = app, limit, upload_limit, upload_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.upload_limit if scope.get("path") in self.upload_paths else self.limit
        declared = _header(scope, b"content-length")
        if declared is not None and (not declared.strip().isdigit() or int(declared) > limit):
            await _refuse(send, 413, f"the body is over the limit of {limit} bytes")
            return
        seen = 0
        started = False

        async def limited() -> dict[str, Any]:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise _TooLarge
            return message

        async def watched(message: dict[str, Any]) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited, watched)
        except _TooLarge:
            if not started:
                await _refuse(send, 413, f"the body is over the limit of {limit} bytes")


SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]{0,127}$")
"""A file or folder name a request may give: no separators, no leading dot."""


def confine(root: Path, relative: str, *, must_exist: bool = True) -> Path:
    """`relative` below `root`, resolved (symlinks followed), or PathRefused when it is absolute, climbs out with
    ``..``, resolves outside `root` (a symlink out), or (with `must_exist`) does not exist."""
    text = relative.replace("\\", "/")
    if text.startswith("/") or re.match(r"^[A-Za-z]:", text) or "\x00" in text:
        raise PathRefused(f"{relative!r}: absolute paths are refused", 400)
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise PathRefused(f"{relative!r}: '..' is refused", 400)
    base = Path(root).resolve()
    target = base.joinpath(*parts).resolve()
    if target != base and not target.is_relative_to(base):
        raise PathRefused(f"{relative!r} is outside its folder", 404)
    if must_exist and not target.exists():
        raise PathRefused(f"{relative!r} not found", 404)
    return target


def confine_name(root: Path, name: str, *, must_exist: bool = True) -> Path:
    """A single file name (no folders) inside `root`: SAFE_NAME, then ``confine``."""
    if not SAFE_NAME.match(name):
        raise PathRefused(f"{name!r} is not a plain file name", 400)
    return confine(root, name, must_exist=must_exist)
