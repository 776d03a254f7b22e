"""A session: one device, one graph, its observer, policies, tasks and transcript, wired into a Navigator.

``open_session()`` with no serial starts the embedded simulator behind a fake ADB server and connects to it
through adbutils, exactly as it would connect to a phone.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.loader import load_graph
from engine.navigator import Navigator
from engine.policies import load_policies

log = logging.getLogger(__name__)


@dataclass
class Session:
    device: Any
    graph: Any
    observer: Any
    policies: Any
    navigator: Navigator
    assets: Any
    transcript: Any = None
    sim: Any = None
    """The embedded simulator (engine.sim.EmbeddedSim) when no serial was given; tests read its truth."""
    _closers: list = field(default_factory=list)

    def close(self) -> None:
        for close in reversed(self._closers):
            try:
                close()
            except Exception as exc:  # noqa: BLE001 - closing must not mask the caller's outcome
                log.debug("close failed: %s", exc)
        self._closers.clear()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_session(
    serial: str | None = None,
    *,
    graph_dir: str | Path | None = None,
    server: str = "en",
    assets: str | Path | None = None,
    scenario: Any = None,
    seed: int | None = None,
    transcript_dir: str | Path | None = None,
    policies_file: str | Path | None = None,
    clock: Any = None,
    sleep: Any = None,
) -> Session:
    """Open everything a navigation needs.

    Args:
        serial: an ADB serial (a phone, or 127.0.0.1:21503 for MEmu); None starts the embedded simulator.
        graph_dir: the page graph folder (default: the shipped Azur Lane graph).
        server: game server whose per-server values apply (en, cn).
        assets: an asset pack directory (ALAS layout or ours); None uses the simulator's synthetic pack.
        scenario: a simulator fault scenario (path or engine.sim.scenario.Scenario), embedded simulator only.
        seed: the simulator's seed.
        transcript_dir: where the JSONL ledger, traces and error bundles go (None: no transcript).
    """
    from engine.device import open_device
    from engine.observe import Observer

    graph = load_graph(graph_dir, server=server)
    policies = load_policies(policies_file)
    closers: list = []
    sim = None
    pack = _asset_pack(assets, server)
    if serial is None:
        from engine.sim import start_embedded

        from engine.sim import Scenario

        if isinstance(scenario, (str, Path)):
            scenario = Scenario.from_file(scenario)
        sim = start_embedded(graph, server=server, assets=pack, scenario=scenario, seed=seed or 0,
                             **({"clock": clock} if clock is not None else {}))
        closers.append(sim.stop)
        device = open_device(sim.serial, graph=graph, policies=policies, adb_host=sim.host, adb_port=sim.port)
        if pack is None:
            pack = sim.assets
    else:
        device = open_device(serial, graph=graph, policies=policies)
        if pack is None:
            raise _no_assets(serial)
    closers.append(device.close)
    vision = _vision(policies)
    observer = Observer(graph, pack, vision=vision)
    transcript = None
    bundle_dir = None
    if transcript_dir is not None:
        from engine.transcript import Transcript

        Path(transcript_dir).mkdir(parents=True, exist_ok=True)
        transcript = Transcript(Path(transcript_dir) / "transcript.jsonl")
        closers.append(transcript.close)
        bundle_dir = str(Path(transcript_dir) / "error_bundles")
    tasks = _tasks(graph_dir, graph)
    kwargs: dict[str, Any] = {}
    if clock is not None:
        kwargs["clock"] = clock
    if sleep is not None:
        kwargs["sleep"] = sleep
    navigator = Navigator(device, graph, observer, policies, transcript=transcript, vision=vision, tasks=tasks,
                          bundle_dir=bundle_dir, **kwargs)
    return Session(device=device, graph=graph, observer=observer, policies=policies, navigator=navigator,
                   assets=pack, transcript=transcript, sim=sim, _closers=closers)


def _asset_pack(assets: str | Path | None, server: str) -> Any:
    if assets is None:
        return None
    from engine.assetpacks import load_pack

    return load_pack(assets, server)


def _tasks(graph_dir: str | Path | None, graph: Any) -> Any:
    from engine.paths import builtin_graph_dir
    from engine.tasks import load_tasks

    folder = Path(graph_dir) if graph_dir is not None else builtin_graph_dir()
    if folder.is_file():
        folder = folder.parent
    if not any(folder.glob("tasks*.yaml")):
        return None
    return load_tasks(folder, graph)


def _vision(policies: Any) -> Any:
    """The vision verifier when a Gemini key (or a local endpoint) is configured, else None."""
    if not os.environ.get("GEMINI_API_KEY"):
        return None
    from verifiers.vision import VisionClient

    return VisionClient.from_env()


def _no_assets(serial: str) -> Exception:
    from engine.errors import ConfigError

    return ConfigError(
        f"a real device ({serial}) needs an asset pack: pass --assets DIR (for example an ALAS checkout's "
        "assets imported with `python -m engine assets import-alas`)"
    )
