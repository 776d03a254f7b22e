"""Device round trips per hop and device time per goto, for the engine and a naive ALAS-style navigator.

The same routes (random gotos between Azur Lane pages that can follow one another) run on the simulator under
each device latency profile (engine/sim/profiles): screenshots and taps per hop are counted by the simulator, and
the time per goto is read on a virtual clock shared by the simulator and the navigators (SharedClock): a
screencap or a tap advances it by its profile cost, waits advance it by their length, our CPU does not. So the
time reported is what the device would cost on that profile, and a 130/250 ms profile costs no wall time here.

The naive navigator is written here: for each hop of the planned route, tap, sleep a fixed interval
(NAIVE_SLEEP_S), screenshot, check the destination with the same observer, and retry (look again after the same
sleep; tap again after NAIVE_RETAP_LOOKS looks that still show the source page).

CI runs ROUNDTRIP_GOTOS gotos per profile (default 6); `ROUNDTRIP_GOTOS=60` gives the numbers in
docs/benchmarks/roundtrips.md.
"""

from __future__ import annotations

import os
import random
import time

import pytest

from benchmarks.test_soak import strongly_connected_targets
from engine.config.loader import load_graph
from engine.config.policies import load_policies
from engine.core.context import RunContext
from engine.device import open_device
from engine.navigation.actuator import Actuator
from engine.navigation.navigator import Navigator
from engine.navigation.routes import plan_route
from engine.observe.observer import Observer
from engine.sim import Scenario, SyntheticAssets, start_embedded
from engine.sim.process import SharedClock

GOTOS = int(os.environ.get("ROUNDTRIP_GOTOS", "6"))
NAIVE_SLEEP_S = 0.3
"""The naive navigator's fixed pause after a tap and between looks."""
NAIVE_RETAP_LOOKS = 3
"""Looks that still show the source page before the naive navigator taps again."""
NAIVE_MAX_LOOKS = 20

PROFILES = {
    "quiet": Scenario(),
    "fast_capture_emulator": Scenario(profile="fast_capture_emulator"),
    "emulator_adb": Scenario(profile="emulator_adb"),
    "usb_phone": Scenario(profile="usb_phone"),
    "emulator_adb+fade": Scenario(profile="emulator_adb", transition_s=0.4, transition="fade"),
    "emulator_adb+slide": Scenario(profile="emulator_adb", transition_s=1.0, transition="slide"),
}
"""Device profiles, and two page changes that take time (a 0.4 s fade, a 1 s slide; taps during them are lost)."""


def naive_goto(device, actuator, observer, graph, clock, here: str, target: str) -> tuple[str, int]:
    """ALAS-style: tap, sleep, screenshot, check, retry. Returns (the page it ends on, hops taken)."""
    ctx = RunContext("naive", target, bound=120.0, clock=clock.now, sleep=clock.sleep)
    hops = 0
    while here != target:
        link = plan_route(graph, here, target).hops[0].link
        hops += 1
        actuator.perform(ctx, link.action)
        for look in range(1, NAIVE_MAX_LOOKS + 1):
            clock.sleep(NAIVE_SLEEP_S)
            obs = observer.observe(device.screenshot(), expected=link.to)
            if obs.page == link.to:
                here = link.to
                break
            if obs.page == here and look % NAIVE_RETAP_LOOKS == 0:
                actuator.perform(ctx, link.action)
        else:
            raise AssertionError(f"naive navigator stuck on the hop {here} -> {link.to}")
    return here, hops


def run_profile(name: str, graph, assets, observer, routes: list[str]) -> dict:
    policies = load_policies()
    out = {}
    for who in ("engine", "naive"):
        clock = SharedClock()
        with start_embedded(graph, assets=assets, scenario=PROFILES[name], clock=clock.now) as sim:
            sim.game.goto("page_main")
            device = open_device(sim.serial, graph=graph, policies=policies, adb_host=sim.host,
                                 adb_port=sim.port, sleep=clock.sleep)
            try:
                nav = Navigator(device, graph, observer, clock=clock.now)
                actuator, here = Actuator(device, graph), "page_main"
                if who == "engine":  # the engine first finds where it is (the naive navigator is told)
                    assert nav.goto("page_main", RunContext("goto", "page_main", bound=30.0, clock=clock.now,
                                                            sleep=clock.sleep)).ok
                start = sim.game.truth()
                hops, virtual, wall0 = 0, 0.0, time.perf_counter()
                for target in routes:
                    t0 = clock.now()
                    if who == "engine":
                        ctx = RunContext("goto", target, bound=policies.get("goto").timeout, clock=clock.now,
                                         sleep=clock.sleep)
                        result = nav.goto(target, ctx)
                        assert result.ok, (name, target, result.status, result.text)
                        hops += ctx.hops
                    else:
                        here, taken = naive_goto(device, actuator, observer, graph, clock, here, target)
                        hops += taken
                    virtual += clock.now() - t0
                    assert sim.game.truth()["page"] == target
                truth = sim.game.truth()
            finally:
                device.close()
        out[who] = {
            "hops": hops,
            "screenshots_per_hop": (truth["frames"] - start["frames"]) / hops,
            "taps_per_hop": (truth["taps"] - start["taps"]) / hops,
            "device_s_per_goto": virtual / len(routes),
            "real_s_per_goto": (time.perf_counter() - wall0) / len(routes),
        }
    out["ratio"] = out["engine"]["device_s_per_goto"] / out["naive"]["device_s_per_goto"]
    return out


@pytest.mark.soak
def test_round_trips_per_hop_engine_against_naive(capsys, figures):
    graph = load_graph().resolve("en")
    assets = SyntheticAssets(graph)
    observer = Observer(graph, assets)
    targets = [t for t in strongly_connected_targets(graph, "page_main") if t != "page_main"]
    rng = random.Random(13)
    routes = []
    for _ in range(GOTOS):
        routes.append(rng.choice([t for t in targets if not routes or t != routes[-1]]))
    results = {name: run_profile(name, graph, assets, observer, routes) for name in PROFILES}
    with capsys.disabled():
        print(f"\nround trips, {GOTOS} gotos per profile (device time on the virtual clock):")
        for name, r in results.items():
            e, n = r["engine"], r["naive"]
            print(f"  {name:22s} engine {e['screenshots_per_hop']:.2f} shots/hop {e['taps_per_hop']:.2f} taps/hop "
                  f"{e['device_s_per_goto']:.2f} s/goto | naive {n['screenshots_per_hop']:.2f} shots/hop "
                  f"{n['taps_per_hop']:.2f} taps/hop {n['device_s_per_goto']:.2f} s/goto | ratio {r['ratio']:.2f} "
                  f"| real s/goto {e['real_s_per_goto']:.3f} / {n['real_s_per_goto']:.3f}")
    for name, r in results.items():
        for who in ("engine", "naive"):
            for key in ("screenshots_per_hop", "taps_per_hop"):
                figures.add(f"{name}_{who}_{key}", r[who][key], unit="", kind="count")
            figures.add(f"{name}_{who}_device_s_per_goto", r[who]["device_s_per_goto"], unit="s", kind="absolute")
        figures.add(f"{name}_ratio", r["ratio"], unit="", kind="ratio")
    assert results["quiet"]["engine"]["screenshots_per_hop"] <= 1.05
    assert results["emulator_adb"]["ratio"] <= 0.6
    for r in results.values():
        assert r["engine"]["taps_per_hop"] <= r["naive"]["taps_per_hop"] + 1e-9
