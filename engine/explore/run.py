"""One explore, from an open device to a written draft folder: the loop (engine.explore.explorer), the draft
(engine.explore.drafting), draft.yaml, and the graph and asset pack generated from it (engine.explore.write)."""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from engine.core.errors import DeviceError
from engine.explore.draft import Draft, Made, save_draft
from engine.explore.drafting import Drafter, Namer, Reader
from engine.explore.explorer import Budget, Explorer
from engine.explore.write import write_graph

DRAFT_RESERVE = (0.1, 60.0)
"""Share of the time budget (at most this many seconds) kept for writing the draft after the last action."""


@dataclass
class Explored:
    draft: Draft
    folder: Path
    taps: int
    restarts: int
    seconds: float
    stopped_because: str
    device_failed: bool = False
    """The run ended because the device failed (the draft holds what was learnt until then)."""


def explore(device: Any, out: str | Path, *, taps: int | None = None, minutes: float = 20.0,
            restart: Callable[[], None] | None = None, reader: Reader | None = None, namer: Namer | None = None,
            game: str = "draft_game", server: str = "en", app: dict[str, str] | None = None,
            from_graph: str | None = None, progress: Callable[[str], None] | None = None,
            clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], object] = time.sleep,
            pace: float = 1.0) -> Explored:
    """Explore `device` within `minutes` (and `taps` actions, when given), and write the draft folder `out`
    (continuing the recording already there, if any)."""
    seconds = minutes * 60.0
    budget = Budget(taps=taps, seconds=seconds, reserve=min(DRAFT_RESERVE[1], seconds * DRAFT_RESERVE[0]))
    started_at = dt.datetime.now(dt.timezone.utc)
    start = clock()
    explorer = Explorer(device, out, budget=budget, restart=restart, progress=progress, clock=clock, sleep=sleep,
                        pace=pace, reader=reader)
    failed = False
    try:
        atlas = explorer.run()
    except DeviceError as exc:  # the device went away: what was learnt so far still makes a draft (and resumes)
        atlas, failed = explorer.atlas, True
        explorer.stopped_because = f"the device failed: {exc}"
    finished_at = dt.datetime.now(dt.timezone.utc)
    made = Made(serial=getattr(device, "serial", None), minutes=round((clock() - start) / 60.0, 2),
                taps=explorer.taps, started=started_at.isoformat(timespec="seconds"),
                finished=finished_at.isoformat(timespec="seconds"), from_graph=from_graph)
    drafter = Drafter(atlas, out, resolution=tuple(device.resolution), game=game, server=server, reader=reader,
                      namer=namer, app=app)
    draft = drafter.build(made)
    save_draft(draft, out)
    write_graph(draft, out)
    return Explored(draft, Path(out), explorer.taps, explorer.restarts, clock() - start,
                    explorer.stopped_because or "stopped", failed)
