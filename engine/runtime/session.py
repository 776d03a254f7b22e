"""A session: one device and one server-resolved graph, with its observer, navigator, tasks, transcript and tools.

Its task book is the graph's shipped tasks (tasks*.yaml beside the graph) plus the skills the agent learned for
the game (engine.agent.skills), which may not shadow a shipped task; ``reload_tasks`` brings a skill saved while
the session runs into its book.

``open_session()`` is where the game server is chosen, once: ``--server``, or the graph's first declared
server. Everything below (observer, simulator, renderer, navigator) takes the resolved graph. With no serial it
starts the embedded simulator behind a fake ADB server and connects to it through adbutils, exactly as it would
connect to a phone.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from engine.config.loader import load_graph
from engine.config.policies import Policies, load_policies

if TYPE_CHECKING:
    from engine.config.assets import AssetPack
    from engine.config.schema import Graph
    from engine.device.base import Device
    from engine.navigation.navigator import Navigator
    from engine.observe.observer import Observer
    from engine.runtime.tools import Tools
    from engine.runtime.transcript import Transcript
    from engine.tasks.runner import TaskRunner

log = logging.getLogger(__name__)


@dataclass
class Session:
    """Everything one device needs; ``tools`` is the bounded surface every face calls."""

    device: Device
    graph: Graph
    policies: Policies
    observer: Observer | None = None
    navigator: Navigator | None = None
    tasks: TaskRunner | None = None
    assets: AssetPack | None = None
    transcript: Transcript | None = None
    bundle_dir: str | None = None
    unavailable: str | None = None
    """Why this session cannot observe or navigate (a real device with no asset pack), or None."""
    sim: Any = None
    """The embedded simulator (engine.sim.EmbeddedSim) when no serial was given; tests read its truth."""
    tools: Tools | None = None
    skills_path: Path | None = None
    """The game's skills file: merged into the task book when it exists, and where the agent saves new skills."""
    shipped_tasks: frozenset[str] = frozenset()
    """Names of the graph's own tasks, which a skill may not take."""
    _closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        if self.tools is not None:
            self.tools.close()
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
    server: str | None = None,
    assets: str | Path | None = None,
    scenario: Any = None,
    seed: int | None = None,
    transcript_dir: str | Path | None = None,
    policies_file: str | Path | None = None,
    adb_host: str | None = None,
    adb_port: int | None = None,
    clock: Callable[[], float] | None = None,
    sleep: Callable[[float], None] | None = None,
    skills: str | Path | None = None,
    control: str | None = None,
    providers: list[Any] | None = None,
) -> Session:
    """Open everything a navigation needs.

    Args:
        serial: an ADB serial (a phone, or 127.0.0.1:21503 for MEmu); None starts the embedded simulator.
        graph_dir: the page graph folder (default: the shipped default graph).
        server: game server whose per-server values apply (default: the graph's first declared server).
        assets: an asset pack directory (ALAS layout or ours); None uses the simulator's synthetic pack.
        scenario, seed: a simulator fault scenario (path or engine.sim.scenario.Scenario) and the simulator's seed.
        transcript_dir: where the JSONL ledger, traces and error bundles go (None: no transcript).
        adb_host, adb_port: the ADB server of a real device (default: the environment's, else 127.0.0.1:5037).
        clock, sleep: injectable for tests (the simulator and every run keep time with them).
        skills: the skills file merged into the task book (default: engine.core.paths.skills_file, if there).
        control: what taps go through (adb, maatouch, minitouch, auto); default: the tap policy's control.
        providers: runners of outside tasks (engine.tasks.providers, e.g. alas_wrapped's), killed when the session
        closes.

    Raises:
        ConfigError: the graph, policies, tasks, skills, server, scenario or asset pack is wrong (a skill named
            like a shipped task included).
    """
    policies = load_policies(policies_file)
    graph = load_graph(graph_dir, policies=policies.names).resolve(server)  # hops may name the user's policies
    pack = _asset_pack(assets, graph.server, graph.fallback_server)
    session = Session(device=None, graph=graph, policies=policies)  # type: ignore[arg-type] - set just below
    session.skills_path = Path(skills) if skills is not None else _default_skills(graph)
    try:
        _open_device(session, serial, pack, scenario, seed, clock, adb_host, adb_port, control, graph_dir)
        if transcript_dir is not None:
            _open_transcript(session, Path(transcript_dir))
        if session.assets is not None:
            _open_navigation(session, graph_dir, clock)
        else:
            session.unavailable = (f"a real device ({serial}) needs an asset pack: pass --assets DIR (for example an "
                                   "ALAS checkout's assets, or a pack made by `python -m engine assets import-alas`)")
        from engine.runtime.tools import Tools

        session.tools = Tools.from_session(session, providers=providers or (), **({"clock": clock} if clock else {}),
                                           **({"sleep": sleep} if sleep else {}))
    except BaseException:
        session.close()
        raise
    return session


def _open_device(session: Session, serial: str | None, pack: Any, scenario: Any, seed: int | None,
                 clock: Any, adb_host: str | None, adb_port: int | None, control: str | None = None,
                 graph_dir: str | Path | None = None) -> None:
    from engine.device import open_device

    graph, policies = session.graph, session.policies
    if serial is None:
        from engine.config.simstate import state_beside
        from engine.runtime.devices import open_simulated
        from engine.sim import Scenario

        if isinstance(scenario, (str, Path)):
            scenario = Scenario.from_file(scenario)
        session.device = open_simulated(graph, policies=policies, control=control, assets=pack, scenario=scenario,
                                        seed=seed or 0, state=state_beside(graph_dir, graph),
                                        **({"clock": clock} if clock is not None else {}))
        session.sim = session.device.sim  # closing the device stops it
        session.assets = pack if pack is not None else session.sim.assets
    else:
        session.device = open_device(serial, graph=graph, policies=policies, adb_host=adb_host, adb_port=adb_port,
                                     control=control)
        session.assets = pack
    session._closers.append(session.device.close)


def _open_transcript(session: Session, folder: Path) -> None:
    from engine.core.errors import ConfigError
    from engine.runtime.transcript import Transcript

    try:
        folder.mkdir(parents=True, exist_ok=True)
        session.transcript = Transcript(folder / "transcript.jsonl")
    except OSError as exc:
        raise ConfigError(f"cannot write the transcript in {folder}: {exc.strerror or exc}") from None
    session._closers.append(session.transcript.close)
    session.bundle_dir = str(folder / "error_bundles")


def _open_navigation(session: Session, graph_dir: str | Path | None, clock: Any) -> None:
    from engine.learning.learner import session_learner, with_learned
    from engine.navigation.navigator import Navigator
    from engine.observe.observer import Observer
    from engine.tasks.runner import TaskRunner

    base = session.assets
    session.assets = with_learned(graph_dir, base, session.graph.server)  # popups learned before, if any
    vision = _vision(session.graph, session.policies)
    if vision is not None:
        session._closers.append(vision.close)
    session.observer = Observer(session.graph, session.assets, vision=vision)
    # with a transcript: screens the model resolved become proposals beside it
    learner = session_learner(session, graph_dir, base)
    session.navigator = Navigator(session.device, session.graph, session.observer, learner=learner,
                                  **({"clock": clock} if clock is not None else {}))
    book = load_task_book(graph_dir, session.graph)
    _check_task_policies(book, session.policies)
    session.shipped_tasks = frozenset(book.names() if book is not None else ())
    session.tasks = TaskRunner(session.navigator, book, progress_dir=_progress_dir(session.graph)) \
        if book is not None else None
    reload_tasks(session)


def _check_task_policies(book: Any, policies: Any) -> None:
    """Every policy a task names (its run's bound) must be loaded.

    Raises:
        ConfigError: naming the task and the policies there are.
    """
    from engine.core.errors import ConfigError

    for name in book.names() if book is not None else ():
        policy = book.get(name).policy
        if policy is not None and policy not in policies.names:
            raise ConfigError(f"task {name} names policy {policy!r}, which is not loaded "
                              f"(policies: {', '.join(sorted(policies.names))})")


def reload_tasks(session: Session) -> list[str]:
    """Merge the session's skills file into its task book (a skill saved again replaces its older self); the
    names of the skills merged. A session with skills but no shipped tasks gets a book; one that cannot navigate
    gets nothing.

    Raises:
        GraphError: the skills file is broken or names what the graph lacks (file:line:col).
        ConfigError: a skill has the name of a shipped task.
    """
    from engine.config.taskfiles import TaskBook
    from engine.core.errors import ConfigError
    from engine.tasks.runner import TaskRunner
    from engine.tasks.skills import SkillStore

    if session.skills_path is None or session.navigator is None:
        return []
    skills = SkillStore(session.skills_path).load(session.graph)
    clash = sorted({t.name for t in skills} & session.shipped_tasks)
    if clash:
        raise ConfigError(f"skill(s) {', '.join(clash)} have the name of a shipped task; rename them",
                          file=str(session.skills_path))
    if skills and session.tasks is None:
        session.tasks = TaskRunner(session.navigator, TaskBook([]), progress_dir=_progress_dir(session.graph))
        if session.tools is not None:
            session.tools.tasks = session.tasks
    for task in skills:
        session.tasks.book.add(task)
    return [t.name for t in skills]


def _progress_dir(graph: Graph) -> Path:
    """Where routines record what they did today: the game's folder under the agent's home."""
    from engine.core.paths import agent_home, game_dir

    return game_dir(agent_home(), graph) / "progress"


def _default_skills(graph: Graph) -> Path:
    from engine.core.paths import agent_home, skills_file

    return skills_file(agent_home(), graph)


def _asset_pack(assets: str | Path | None, server: str, fallback: str | None = None) -> Any:
    """The asset pack in folder `assets` for `server` (None: none given); an ALAS folder takes files the server
    lacks from `fallback`, the graph's ``fallback_server``."""
    if assets is None:
        return None
    from engine.config.assetpacks import load_pack

    return load_pack(assets, server, fallback=fallback)


def load_task_book(graph_dir: str | Path | None, graph: Any) -> Any:
    """The tasks beside a graph folder (its tasks*.yaml), checked against the graph; None when it has none."""
    from engine.config.taskfiles import load_tasks
    from engine.core.paths import builtin_graph_dir

    folder = Path(graph_dir) if graph_dir is not None else builtin_graph_dir()
    if folder.is_file():
        folder = folder.parent
    if not any(folder.glob("tasks*.yaml")):
        return None
    return load_tasks(folder, graph)


def _vision(graph: Graph | None = None, policies: Any = None) -> Any:
    """The vision verifier when a Gemini key (or a local endpoint) is configured, else None; its prompt names the
    graph's game, and its model is the one `policies` name (engine.llm.config)."""
    if not os.environ.get("GEMINI_API_KEY"):
        return None
    from verifiers.vision import VisionClient

    return VisionClient.from_env(game=graph.game if graph is not None else None, policies=policies)
