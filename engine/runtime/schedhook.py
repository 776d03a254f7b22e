"""The schedule as the eight tools see it: alas_tools shows each scheduled task's next run and state, and alas_run
of a scheduled task that is due claims that due time first (engine.schedule.runs), exactly as the scheduler does.
A task that the scheduler is running now answers ``busy``; a run between due times is recorded in the history and
leaves the schedule as it is."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from engine.config.schedule import Schedule
from engine.core.results import ToolResult
from engine.schedule.runs import claim_due, record
from engine.schedule.store import Store, new_owner


class ScheduleHook:
    def __init__(self, store: Store, schedule: Schedule, device: str, *,
                 clock: Callable[[], float] = time.time, owner: str | None = None) -> None:
        self.store, self.schedule, self.device, self.clock = store, schedule, device, clock
        self.owner = owner or new_owner()
        store.ensure_tasks(device, schedule.names(), clock())

    def annotate(self, tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rows = self.store.tasks(self.device)
        now, scheduled = self.clock(), set(self.schedule.names())
        out = []
        for task in tasks:
            row = rows.get(task["name"]) if task["name"] in scheduled else None
            if row is not None:
                task = {**task, "schedule": {
                    "next_run": row["next_run"], "due_in_s": round(row["next_run"] - now, 1), "state": row["state"],
                    "last_status": row["last_status"], "failures": row["failures"], "reason": row["reason"],
                    "priority": self.schedule.entry(task["name"]).priority}}
            out.append(task)
        return out

    def run(self, name: str, run: Callable[[], ToolResult], tools: Any) -> ToolResult:
        started = self.clock()
        other = self.store.busy(self.device, self.owner, started)
        if other is not None:  # one device runs one task at a time, whoever started it
            return tools.result("alas_run", ok=False, status="busy", target=name,
                                text=f"the scheduler is running {other} on this device; try again when it is done")
        if name not in self.schedule.names():
            return run()
        row = self.store.tasks(self.device).get(name)
        if row is not None and row["next_run"] <= started:
            claim = claim_due(self.store, self.device, name, self.owner, started)
            if claim is None:
                return tools.result("alas_run", ok=False, status="busy", target=name,
                                    text=f"{name} is due and another runner (the scheduler) holds its run; "
                                         "see alas_tools for its state")
            result = run()
            done = record(self.store, self.schedule, claim, ok=result.ok, status=result.status, text=result.text,
                          values=(result.data or {}).get("values"), started=started, now=self.clock(), via="tool")
            result.data["schedule"] = {"due": claim.due, "next_run": done.next_run, "recorded": done.action}
            return result
        result = run()
        self.store.record_off_schedule(self.device, name, started=started, now=self.clock(), status=result.status,
                                       ok=result.ok, text=result.text, owner=self.owner, via="tool")
        return result
