"""Tasks that something outside the engine runs (a user's existing automation, started as another process), listed
by alas_tools beside the YAML tasks and skills, run by alas_run under the run's bound, and verified by the engine.

A provider (alas_wrapped.AlasProvider is one) answers for the task names it owns (``alas:Commission``), runs one in a
worker it can kill, and reports what the worker said. The engine does the rest here, the same for every provider:
the worker holds the device lock while it runs (so our own device actions wait or answer within their bounds, while
health and state keep answering), and when it ends, whatever it says, the engine looks at the screen. The result
carries the worker's own verdict as ``tool_success`` and the look as ``state_verification``: a worker that says it
succeeded while a blocking popup covers the screen, or the screen is unknown, is not ok.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from engine.core.errors import EngineError
from engine.core.results import Outcome

if TYPE_CHECKING:
    from engine.core.context import RunContext
    from engine.navigation.navigator import Navigator

VERIFY_MARGIN_S = 4.0
"""Of the run's bound, what is kept for killing an overrunning worker and looking at the screen afterwards."""


@dataclass
class ExternalRun:
    """How a provider's worker ended."""

    claimed: bool
    """Whether the worker itself says it succeeded (exit 0 and its own success mark)."""
    status: str
    """exited, timeout, cancelled, refused, not_started, or the provider's own word for how the task failed (an
    ALAS task: game_stuck, request_human_takeover...)."""
    text: str
    extra: dict[str, Any] = field(default_factory=dict)
    """Exit code, last output lines, pid, whether the group was killed and what survived."""
    suggested: str | None = None
    """The next step for the provider's own status (one of engine.core.results.SUGGESTED_ACTIONS)."""


class TaskProvider(Protocol):
    def describe(self) -> list[dict[str, Any]]:
        """``[{name, description, kind}]`` of the tasks this provider runs."""

    def owns(self, name: str) -> bool:
        """Whether `name` is one of this provider's tasks (listed or refused)."""

    def policy_names(self, name: str) -> list[str]:
        """Policies that may bound task `name`, most specific first (the first loaded one applies)."""

    def run(self, name: str, ctx: RunContext, device: Any, budget_s: float) -> ExternalRun:
        """Run task `name` against `device` for at most `budget_s` seconds (and until ``ctx.cancel``), then make
        sure nothing it started is left running."""

    def state(self) -> dict[str, Any]:
        """What runs now (read-only, answered at once)."""

    def health(self) -> dict[str, Any]:
        """The provider's configuration, for adb_health."""

    def close(self) -> None:
        """Kill whatever still runs (engine shutdown)."""


def provider_for(providers: list[TaskProvider], name: str) -> TaskProvider | None:
    return next((p for p in providers if p.owns(name)), None)


def describe_outside(providers: list[TaskProvider], strict: bool = True) -> list[dict[str, Any]]:
    """Every provider's tasks. Listing may need what running needs (ALAS's Python): `strict` lets its ConfigError
    through; otherwise such a provider adds nothing (for did-you-mean suggestions, which must not fail)."""
    rows: list[dict[str, Any]] = []
    for provider in providers:
        try:
            rows += provider.describe()
        except EngineError:
            if strict:
                raise
    return rows


def outside_bound(providers: list[TaskProvider], name: str, policies: Any) -> float | None:
    """The bound of outside task `name`: the first of its provider's policies that is loaded (alas:Task, then
    alas); None when no provider owns it or none of its policies is loaded."""
    provider = provider_for(providers, name)
    loaded = [n for n in provider.policy_names(name) if policies is not None and n in policies] if provider else []
    return float(policies.get(loaded[0]).timeout) if loaded else None


def device_owner(providers: list[TaskProvider]) -> str | None:
    """Why the device is not ours now: an outside worker runs (our acting tools then answer `busy` at once)."""
    for provider in providers:
        running = provider.state().get("running")
        if running:
            return (f"{running.get('task')} owns the device (an outside worker, pid {running.get('pid')}, running "
                    f"for {running.get('seconds', 0):.0f} s); health and state still answer")
    return None


def run_external(nav: Navigator, provider: TaskProvider, name: str, ctx: RunContext) -> Outcome:
    """Run a provider's task, then look: the Outcome whose tool_success is the worker's and ok is also the look's."""
    budget = max(0.0, ctx.remaining() - VERIFY_MARGIN_S)
    ctx.record("external_start", task=name, budget_s=round(budget, 2))
    run = provider.run(name, ctx, nav.device, budget)
    ctx.record("external_end", task=name, status=run.status, claimed=run.claimed,
               **{k: v for k, v in run.extra.items() if k != "last_lines"})
    extra = {"worker": run.extra}
    if run.status in ("refused", "not_started"):
        return Outcome(False, run.status, run.text, tool_success=False, extra=extra, suggested=run.suggested)
    obs = nav.look(ctx)
    if obs.page is not None:
        nav.machine.relocalise(obs.page, obs.confidence)
    blocking = [p for p in obs.popups if nav.graph.popup(p).blocking]
    seen = obs.page or "an unknown screen"
    if run.status != "exited" or not run.claimed:
        return Outcome(False, run.status if run.status != "exited" else "worker_failed",
                       f"{run.text}; the screen shows {seen}", observation=obs, tool_success=False, extra=extra,
                       suggested=run.suggested)
    if blocking or obs.covered:
        what = f"popup {blocking[0]}" if blocking else "a dialog no popup names"
        return Outcome(False, "popup_blocking", f"{run.text}, but {what} covers {seen}",
                       observation=obs, tool_success=True, extra=extra)
    if obs.page is None:
        return Outcome(False, "unknown_screen", f"{run.text}, but the screen is not one the graph knows",
                       observation=obs, tool_success=True, extra=extra)
    return Outcome(True, "verified", f"{run.text}; the screen shows {seen}", observation=obs, tool_success=True,
                   extra=extra)
