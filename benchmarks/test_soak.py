"""The soak: random gotos between Azur Lane pages in the simulator under a chaos scenario.

Targets (issue "Navigation"): at least 99% of gotos reach their target, zero false successes (ok while the
simulator's true page differs), every goto inside its bound, vision escalations on at most 1% of hops, and our own
CPU time per hop (device waits excluded: measured with the navigating thread's CPU clock) p50 at most 5 ms on the
machine it was set on; asserted as a ratio to a classify-all measured in the same run (see the tests).
Loading screens are a chaos event like the others (after 20% of hops); a second soak shows one after every hop.

The simulator runs in a process of its own and shares a virtual clock with the navigator, so loading screens and
retry waits cost no wall time; everything else (the ADB protocol on loopback, raw screencap decoding,
observation) is real. CI runs a short form
(SOAK_GOTOS, default 30); `SOAK_GOTOS=300 python -m pytest benchmarks/test_soak.py` is the full soak.
"""

from __future__ import annotations

import os
import random
import statistics
import time

import pytest

from engine.config.loader import load_graph
from engine.config.policies import load_policies
from engine.core.context import RunContext
from engine.core.errors import NavigationError
from engine.device import open_device
from engine.navigation.navigator import Navigator
from engine.navigation.routes import plan_route
from engine.observe.observer import Observer
from engine.sim import Scenario, SyntheticAssets
from engine.sim.process import SharedClock, SimProcess

pytestmark = pytest.mark.timing  # a speed assertion: runs alone (the README's last pytest)

GOTOS = int(os.environ.get("SOAK_GOTOS", "30"))



class DeviceClock:
    """Wraps a Device and adds up the navigating thread's CPU time spent inside device calls (ADB transfer and
    frame decoding), so the soak can report our own CPU per hop with device work excluded, and with it."""

    def __init__(self, device) -> None:
        self.device = device
        self.cpu_s = 0.0

    def __getattr__(self, name):
        attr = getattr(self.device, name)
        if name not in ("screenshot", "tap", "swipe", "key"):
            return attr

        def timed(*args, **kwargs):
            start = time.thread_time()
            try:
                return attr(*args, **kwargs)
            finally:
                self.cpu_s += time.thread_time() - start

        return timed


class LoadingLooks:
    """Wraps the Observer and adds up the CPU time of looks that found nothing (loading screens, transitions):
    the cost of waiting for the game, reported beside the decision cost."""

    def __init__(self, observer) -> None:
        self.observer = observer
        self.cpu_s = 0.0

    def __getattr__(self, name):
        return getattr(self.observer, name)

    def observe(self, frame, *args, **kwargs):
        start = time.thread_time()
        obs = self.observer.observe(frame, *args, **kwargs)
        if obs.page is None and not obs.popups:
            self.cpu_s += time.thread_time() - start
        return obs


# The real idle screen dims the game; the simulator draws IDLE as a popup panel, which hides a popup shown before
# it and its weak 9x16 marks cannot be reported over a page. The chaos scenario leaves it out.
EXCLUDED_POPUPS = {"IDLE"}


def chaos(graph, loading_p: float = 0.2) -> Scenario:
    return Scenario(
        description="issue 5 soak: popups after 20% of hops, loading, 5% ADB errors, 1% black, 1% dropped, 0.5% unknown",
        popup_p=0.20,
        popups=[p.name for p in graph.popups if p.name not in EXCLUDED_POPUPS],
        loading_min=0.2,
        loading_max=1.5,
        loading_p=loading_p,
        adb_error_p=0.05,
        black_frame_p=0.01,
        drop_tap_p=0.01,
        unknown_p=0.005,
    )


def harsh(graph, loading_p: float = 0.2) -> Scenario:
    """The hardening issue's mix: faults that compound, ADB errors included, on top of the chaos above."""
    return chaos(graph, loading_p).model_copy(update={
        "description": "issue 10 soak: popups after 30% of hops with chains, 10% dropped taps, 5% unknown screens, "
                       "2% crashes to the login screen, 5% black frames, 5% ADB errors",
        "popup_p": 0.30, "popup_chain_p": 0.5, "drop_tap_p": 0.10, "unknown_p": 0.05, "crash_p": 0.02,
        "black_frame_p": 0.05, "adb_error_p": 0.05,
    })


MIXES = {"chaos": chaos, "harsh": harsh}


def event_pages(graph) -> list[str]:
    """The pages an event entry leads to: destinations of links that share their button with another link of
    the same page (ALAS's event entry: one button, a different page per running event)."""
    out = []
    for page in graph.pages:
        buttons = [getattr(link.action, "button", None) for link in page.links]
        out += [link.to for link, b in zip(page.links, buttons) if b is not None and buttons.count(b) > 1]
    return sorted(set(out))


def unambiguous(graph, event: str | None = None):
    """The graph without links whose button also leads elsewhere from the same page, save one: the link to the
    running `event` (the scenario's `event`, which the simulator follows) or, without one, the first."""
    pages = []
    for page in graph.pages:
        buttons = [getattr(link.action, "button", None) for link in page.links]
        kept = []
        for link, b in zip(page.links, buttons):
            shared = [other for other, ob in zip(page.links, buttons) if b is not None and ob == b]
            if len(shared) <= 1 or link is next((o for o in shared if o.to == event), shared[0]):
                kept.append(link)
        pages.append(page.model_copy(update={"links": kept}))
    return graph.model_copy(update={"pages": pages})


def strongly_connected_targets(graph, hub: str, event: str | None = None) -> list[str]:
    """Pages reachable from the hub and able to get back to it while `event` runs: any can follow any other."""
    graph = unambiguous(graph, event)
    out = []
    for page in graph.page_names:
        if page in (hub, graph.unknown_page):
            out.append(page) if page == hub else None
            continue
        try:
            plan_route(graph, hub, page)
            plan_route(graph, page, hub)
        except NavigationError:
            continue
        out.append(page)
    return out


def classify_all_ms(graph, assets) -> float:
    """The same-run baseline: CPU (this thread's clock) of classifying one frame among every page and popup, p50.

    A soak hop's CPU is a few such looks plus the navigator's own work, and both scale with the machine alike,
    so the soak's CPU targets are ratios to this number (measured on the frames of 20 pages, 5 rounds each).
    """
    from engine.sim.render import Renderer

    renderer, observer = Renderer(graph, assets), Observer(graph, assets)
    frames = [renderer.page(name) for name in graph.page_names[:20] if name != graph.unknown_page]
    samples = []
    for _ in range(5):
        for frame in frames:
            start = time.thread_time()
            observer.observe(frame)
            samples.append(time.thread_time() - start)
    return 1000 * statistics.median(samples)


def run_soak(gotos: int, seed: int = 7, loading_p: float = 0.2, mix: str = "chaos") -> dict:
    full = load_graph().resolve("en")
    # The running event, picked per run (SOAK_EVENT names one): its pages are soak targets, the other events'
    # pages are not (their entry button leads to this event's page), and the navigator knows which it is.
    event = os.environ.get("SOAK_EVENT") or random.Random(f"{seed}:{mix}:{loading_p}").choice(event_pages(full))
    graph = unambiguous(full, event)
    assets = SyntheticAssets(graph)
    policies = load_policies()
    clock = SharedClock()
    bound = policies.get("goto").timeout
    rng = random.Random(seed)
    targets = strongly_connected_targets(graph, "page_main", event)
    outcomes = []
    baseline_ms = classify_all_ms(graph, assets)
    # The simulator runs in its own process, as a phone would: in-process, its server threads compete for the
    # GIL and more than triple the CPU time this thread spends per observation.
    scenario = MIXES[mix](graph, loading_p).model_copy(update={"event": event})
    with SimProcess.start(server="en", scenario=scenario, seed=seed, clock=clock) as sim:
        device = open_device(sim.serial, graph=graph, policies=policies, adb_host=sim.host, adb_port=sim.port,
                             sleep=clock.sleep)
        try:
            timed = DeviceClock(device)
            looks = LoadingLooks(Observer(graph, assets))
            nav = Navigator(timed, graph, looks, clock=clock.now)
            for _ in range(gotos):
                target = rng.choice(targets)
                cpu0, dev0, load0 = time.thread_time(), timed.cpu_s, looks.cpu_s
                wall0, virt0 = time.perf_counter(), clock.now()
                ctx = RunContext("goto", target, bound=bound, clock=clock.now, sleep=clock.sleep)
                result = nav.goto(target, ctx)
                total_cpu = time.thread_time() - cpu0
                device_cpu = timed.cpu_s - dev0
                loading_cpu = looks.cpu_s - load0
                wall = time.perf_counter() - wall0
                truth = sim.truth()
                steps = ctx.steps
                outcomes.append({
                    "target": target,
                    "ok": result.ok,
                    "status": result.status,
                    "false_success": result.ok and (
                        truth["page"] != target or any(graph.popup(p).blocking for p in truth["popups"])
                    ),
                    "hops": sum(1 for e in steps if e["kind"] == "action"),
                    "looks": sum(1 for e in steps if e["kind"] == "observation"),
                    "vision": sum(1 for e in steps if e["kind"] == "recover" and e["rung"] == "vision"),
                    "cpu_s": total_cpu - device_cpu,
                    "decision_cpu_s": total_cpu - device_cpu - loading_cpu,
                    "total_cpu_s": total_cpu,
                    "wall_s": wall,
                    "virtual_s": clock.now() - virt0,
                })
                if not result.ok:
                    # A failed goto leaves the game somewhere odd; the next goto starts from what it sees.
                    nav.machine.relocalise(None, 0.0)
        finally:
            device.close()
    hops = sum(o["hops"] for o in outcomes)
    per_hop_cpu_ms = [1000 * o["cpu_s"] / o["hops"] for o in outcomes if o["hops"]]
    return {
        "gotos": gotos,
        "mix": mix,
        "event": event,
        "targets": len(targets),
        "loading_p": loading_p,
        "success_rate": sum(o["ok"] for o in outcomes) / gotos,
        "false_successes": sum(o["false_success"] for o in outcomes),
        "failures": [(o["target"], o["status"]) for o in outcomes if not o["ok"]],
        "hops": hops,
        "hops_per_goto": hops / gotos,
        "vision_escalation_rate": sum(o["vision"] for o in outcomes) / max(hops, 1),
        "cpu_ms_per_hop_p50": statistics.median(per_hop_cpu_ms),
        "cpu_ms_per_hop_p90": statistics.quantiles(per_hop_cpu_ms, n=10)[-1],
        "cpu_ms_per_hop_with_device_p50": statistics.median(
            1000 * o["total_cpu_s"] / o["hops"] for o in outcomes if o["hops"]),
        "looks_per_hop": sum(o["looks"] for o in outcomes) / max(hops, 1),
        "decision_cpu_ms_per_hop_p50": statistics.median(
            1000 * o["decision_cpu_s"] / o["hops"] for o in outcomes if o["hops"]),
        "wall_ms_per_hop_p50": statistics.median(1000 * o["wall_s"] / o["hops"] for o in outcomes if o["hops"]),
        "max_goto_wall_s": max(o["wall_s"] for o in outcomes),
        "max_goto_virtual_s": max(o["virtual_s"] for o in outcomes),
        "bound_s": bound,
        "classify_all_ms_p50": baseline_ms,
        "cpu_per_hop_over_classify_all": statistics.median(per_hop_cpu_ms) / baseline_ms,
    }


def _report(stats: dict) -> None:
    print(
        f"\nsoak ({stats['mix']}, loading after {stats['loading_p']:.0%} of hops, event {stats['event']}, "
        f"{stats['targets']} targets): {stats['gotos']} gotos, success "
        f"{stats['success_rate']:.1%}, false successes {stats['false_successes']}, {stats['hops_per_goto']:.2f} "
        f"hops/goto, CPU/hop p50 {stats['cpu_ms_per_hop_p50']:.2f} ms (p90 {stats['cpu_ms_per_hop_p90']:.2f}; "
        f"without looks at loading screens {stats['decision_cpu_ms_per_hop_p50']:.2f}; with ADB client and frame "
        f"decoding {stats['cpu_ms_per_hop_with_device_p50']:.2f}), {stats['looks_per_hop']:.1f} looks/hop, wall/hop "
        f"p50 {stats['wall_ms_per_hop_p50']:.1f} ms, slowest goto {stats['max_goto_wall_s']:.2f} s wall / "
        f"{stats['max_goto_virtual_s']:.2f} s virtual, vision escalations {stats['vision_escalation_rate']:.2%}, "
        f"failures {stats['failures']}; same-run baseline: classify-all {stats['classify_all_ms_p50']:.2f} ms, "
        f"CPU/hop = {stats['cpu_per_hop_over_classify_all']:.2f}x classify-all"
    )


def _assert_reliable(stats: dict, success: float = 0.99) -> None:
    assert stats["false_successes"] == 0
    assert stats["success_rate"] >= success, stats["failures"]
    assert stats["max_goto_wall_s"] <= stats["bound_s"]
    assert stats["max_goto_virtual_s"] <= stats["bound_s"]
    assert stats["vision_escalation_rate"] <= 0.01


def _soak(benchmark, capsys, gotos: int, loading_p: float, mix: str = "chaos", success: float = 0.99) -> dict:
    """Run one soak under pytest-benchmark, print its numbers into the log and check the reliability targets."""
    stats = benchmark.pedantic(run_soak, args=(gotos,), kwargs={"loading_p": loading_p, "mix": mix}, rounds=1,
                               iterations=1)
    benchmark.extra_info.update({k: v for k, v in stats.items() if k != "failures"})
    with capsys.disabled():  # the soak's numbers belong in the CI log
        _report(stats)
    _assert_reliable(stats, success)
    return stats


@pytest.mark.soak
def test_soak_random_gotos_under_chaos(benchmark, capsys):
    """The issue's chaos: popups after 20% of hops and loading screens after 20% of hops, like other faults.

    CPU per hop is held to 2.5x one classify-all of the same run (measured 1.3-1.7x on two machines, where the
    absolute number was 3.7 ms on one and 6-8 ms on the other): a regression in the navigator or the observer
    moves the ratio, a slower machine does not."""
    stats = _soak(benchmark, capsys, GOTOS, loading_p=0.2)
    assert stats["cpu_per_hop_over_classify_all"] <= 2.5


@pytest.mark.soak
def test_soak_with_a_loading_screen_after_every_hop(benchmark, capsys):
    """The harsh variant: every hop shows a loading screen (0.2-1.5 s). Each costs one more full observation
    (the first look at the loading frame: the expected page, its neighbours and every popup are checked before it
    counts as loading), so CPU per hop is higher (measured 3.2-3.4x one classify-all); the bound guards against
    regressions."""
    stats = _soak(benchmark, capsys, max(GOTOS // 2, 20), loading_p=1.0)
    assert stats["cpu_per_hop_over_classify_all"] <= 5.0


@pytest.mark.soak
def test_soak_under_faults_that_compound(benchmark, capsys):
    """The hardening issue's harsher mix (popups after 30% of hops with chains, 10% dropped taps, 5% unknown
    screens, 2% crashes to the login screen, 5% black frames, 5% ADB errors): device faults that come back to back
    are ridden out, so at least 99.5% of gotos arrive, with zero false successes. CI runs a short form;
    `SOAK_GOTOS=1000` runs the issue's 1000."""
    _soak(benchmark, capsys, max(GOTOS * 2 // 3, 20), loading_p=0.2, mix="harsh", success=0.995)
