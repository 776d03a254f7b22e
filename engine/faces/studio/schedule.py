"""The studio's Schedule panel: what `python -m engine schedule status` shows (engine.schedule.store.Store.status),
read from the same database, off the event loop."""

from __future__ import annotations

import time

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from engine.core.errors import ConfigError
from engine.faces.studio.replies import as_json, error

NO_SCHEDULER = "no scheduler has run here yet: start one with `python -m engine schedule`"


def _status() -> dict:
    from engine.faces.cli import schedule_db
    from engine.schedule.store import Store, database_exists, open_backend

    url = schedule_db()
    if not database_exists(url):
        return {"database": open_backend(url).where, "devices": [], "note": NO_SCHEDULER}
    store = Store(url, create=False)
    try:
        return store.status(time.time())
    finally:
        store.close()


async def status(request: Request) -> Response:
    try:
        return as_json(await run_in_threadpool(_status))
    except ConfigError as exc:  # corrupt or locked: the page says so
        return error(503, str(exc), status=exc.status)
