"""One run of a scheduled task, claimed and recorded the same way whoever runs it: the scheduler, or a tool call
(alas_run from an MCP client or the agent). Both go through `claim_due` and `record`, so a model acting as the
scheduler and the built-in scheduler never run one task twice for one due time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.config.schedule import Schedule
from engine.schedule.rules import after_failure, after_success
from engine.schedule.store import Claim, Store


@dataclass(frozen=True)
class Recorded:
    """What became of a run: ``done`` (verified; due again at next_run), ``retry``, ``restart`` (restart the game
    before the retry), ``put_off`` (retries used up; tried again at next_run, the failures in a row kept for status until then), or ``lost`` (another process took the
    claim over: nothing was written)."""

    action: str
    next_run: float
    rule: str


def claim_due(store: Store, device: str, task: str, owner: str, now: float) -> Claim | None:
    """Claim `task`'s current due time when it has come; None when it is not due or someone else holds it."""
    row = store.tasks(device).get(task)
    if row is None or row["next_run"] > now:
        return None
    return store.claim(device, task, row["next_run"], owner, now)


def record(store: Store, schedule: Schedule, claim: Claim, *, ok: bool, status: str, text: str,
           values: dict[str, Any] | None, started: float, now: float, via: str) -> Recorded:
    """Record the end of a claimed run and when the task is due next (engine.schedule.rules)."""
    row = store.tasks(claim.device).get(claim.task)
    before = int(row["failures"]) if row is not None else 0
    if before >= schedule.rules_of(claim.task).give_up_after:
        before = 0  # the count starts again after a put-off (which shows the count it reached)
    if ok:
        next_run, rule = after_success(schedule.entry(claim.task), schedule, now, values)
        action, failures, reason = "done", 0, None
    else:
        failures = before + 1
        next_run, action = after_failure(schedule.rules_of(claim.task), failures, now)
        rule = f"failure {failures}"
        reason = f"{status}: {text}"[:300]
        if action == "put_off":
            reason = f"put off after {failures} failures in a row; last: {reason}"
    written = store.finish(claim, started=started, now=now, status=status, ok=ok, text=text, next_run=next_run,
                           failures=failures, reason=reason, via=via,
                           data={"values": values} if values else None)
    return Recorded(action if written else "lost", next_run, rule)
