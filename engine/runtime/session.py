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
    """Everything one device needs; ``tools`` is the bounded surface every face calls.

    Made by ``open_session`` with the device and what was read before it; the constructor builds the rest
    (observer, navigator, tasks, tools) from those, so a Session is whole when it exists.
    """

    device: Device
    graph: Graph
    policies: Policies
    assets: AssetPack | None = None
    """The pack pages are recognised with (learned popups are added to it here); None: nothing can be observed."""
    sim: Any = None
    """The embedded simulator (engine.sim.EmbeddedSim) when no serial was given; tests read its truth."""
    transcript: Transcript | None = None
    bundle_dir: str | None = None
    unavailable: str | None = None
    """Why this session cannot observe or navigate (a real device with no asset pack), or None."""
    skills_path: Path | None = None
    """The game's skills file: merged into the task book when it exists, and where the agent saves new skills."""
    graph_dir: str | Path | None = None
    """The graph's folder as the user named it (None: the shipped graph): its tasks and learned popups."""
    providers: tuple[Any, ...] = ()
    """Runners of outside tasks (engine.tasks.providers), killed when the session closes."""
    clock: Callable[[], float] | None = None
    sleep: Callable[[float], None] | None = None
    navigation: bool = True
    """False: the device's own tools only (health, a screenshot): no observer, navigator or task book is built, so a
    command that needs none answers sooner (bare ``health`` on the built-in simulator: issue 47 point 6)."""
    schedule_db: str | Path | None = None
    """The scheduler's database: when it exists and the graph has a schedule, alas_tools shows each task's next run
    and alas_run claims a due run in it (engine.runtime.schedhook), as the scheduler does."""
    _closers: list[Callable[[], None]] = field(default_factory=list)
    observer: Observer | None = field(init=False, default=None)
    navigator: Navigator | None = field(init=False, default=None)
    tasks: TaskRunner | None = field(init=False, default=None)
    """The graph's tasks and the game's skills; an empty book when it has neither, None when it cannot navigate."""
    shipped_tasks: frozenset[str] = field(init=False, default=frozenset())
    """Names of the graph's own tasks, which a skill may not take."""
    tools: Tools = field(init=False)

    def __post_init__(self) -> None:
        from engine.runtime.tools import Tools

        if self.assets is not None and self.navigation:
            self._open_navigation()
        timing = {key: value for key, value in (("clock", self.clock), ("sleep", self.sleep)) if value is not None}
        self.tools = Tools.from_session(self, providers=self.providers, schedule=self._schedule_hook(), **timing)

    def _schedule_hook(self) -> Any:
        if self.schedule_db is None or self.tasks is None:
            return None
        from engine.config.schedule import load_schedule
        from engine.core.errors import ScheduleUnreachable
        from engine.runtime.schedhook import ScheduleHook
        from engine.schedule.store import Store, database_exists

        try:
            if not database_exists(self.schedule_db):  # no scheduler ran there: the tools make no schedule
                return None
            schedule = load_schedule(self.graph_dir, self.graph, set(self.tasks.names()))
            if schedule is None:
                return None
            store = Store(self.schedule_db)
            self._closers.append(store.close)
            return ScheduleHook(store, schedule, self.device.serial)
        except ScheduleUnreachable as exc:  # the tools still work; they just do not see the schedule
            log.warning("%s; the tools run without the schedule", exc)
            return None

    def _open_navigation(self) -> None:
        from engine.config.taskfiles import TaskBook
        from engine.learning.learner import session_learner, with_learned
        from engine.navigation.navigator import Navigator
        from engine.observe.observer import Observer
        from engine.tasks.runner import TaskRunner

        base = self.assets
        self.assets = with_learned(self.graph_dir, base, self.graph.server)  # popups learned before, if any
        vision = _vision(self.graph, self.policies)
        if vision is not None:
            self._closers.append(vision.close)
        self.observer = Observer(self.graph, self.assets, vision=vision)
        # with a transcript: screens the model resolved become proposals beside it
        learner = session_learner(self, self.graph_dir, base)
        self.navigator = Navigator(self.device, self.graph, self.observer, learner=learner,
                                   search=self.policies.learning.search,
                                   **({"clock": self.clock} if self.clock is not None else {}))
        book = load_task_book(self.graph_dir, self.graph)  # None: the graph ships no tasks
        _check_task_policies(book, self.policies)
        self.shipped_tasks = frozenset(book.names() if book is not None else ())
        self.tasks = TaskRunner(self.navigator, book if book is not None else TaskBook([]),
                                progress_dir=_progress_dir(self.graph))
        reload_tasks(self)

    def close(self) -> None:
        tools = getattr(self, "tools", None)  # None when the constructor failed before making them
        if tools is not None:
            tools.close()
        _close_all(self._closers)

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
    schedule_db: str | Path | None = None,
    navigation: bool = True,
    files: tuple[Policies, Graph] | None = None,
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
        schedule_db: the scheduler's database, shared when it exists (Session.schedule_db).
        navigation: False opens the device's own tools only (Session.navigation).
        files: the policies and graph load_files loaded from `policies_file`, `graph_dir` and `server`, when the
            caller loaded them already (engine.faces.cli.open_tools, while a scan resolved the serial).

    Raises:
        ConfigError: the graph, policies, tasks, skills, server, scenario or asset pack is wrong (a skill named
            like a shipped task included).
    """
    policies, graph = files if files is not None else load_files(graph_dir, policies_file, server)
    pack = _asset_pack(assets, graph.server, graph.fallback_server)
    closers: list[Callable[[], None]] = []
    try:
        device, sim, pack = _open_device(graph, policies, serial, pack, scenario, seed, clock, adb_host, adb_port,
                                         control, graph_dir)
        closers.append(device.close)
        transcript, bundle_dir = _open_transcript(Path(transcript_dir), closers) if transcript_dir is not None \
            else (None, None)
        unavailable = None if pack is not None else (
            f"a real device ({serial}) needs an asset pack: pass --assets DIR (for example an ALAS checkout's "
            "assets, or a pack made by `python -m engine assets import-alas`)")
        return Session(device=device, graph=graph, policies=policies, assets=pack, sim=sim, transcript=transcript,
                       bundle_dir=bundle_dir, unavailable=unavailable,
                       skills_path=Path(skills) if skills is not None else _default_skills(graph),
                       graph_dir=graph_dir, providers=tuple(providers or ()), clock=clock, sleep=sleep,
                       schedule_db=schedule_db, navigation=navigation, _closers=closers)
    except BaseException:
        _close_all(closers)
        raise


def load_files(graph_dir: str | Path | None = None, policies_file: str | Path | None = None,
               server: str | None = None) -> tuple[Policies, Graph]:
    """The policies and the server-resolved graph a session opens with; no device is needed for them.

    Raises:
        ConfigError: the policies or the graph are wrong, or the server is not the graph's.
    """
    policies = load_policies(policies_file)
    return policies, load_graph(graph_dir, policies=policies.names).resolve(server)  # hops may name its policies


def _close_all(closers: list[Callable[[], None]]) -> None:
    """Run `closers` newest first and empty the list; a failing one is logged, never raised (closing must not mask
    the caller's outcome)."""
    for close in reversed(closers):
        try:
            close()
        except Exception as exc:  # noqa: BLE001
            log.debug("close failed: %s", exc)
    closers.clear()


def _open_device(graph: Graph, policies: Policies, serial: str | None, pack: Any, scenario: Any, seed: int | None,
                 clock: Any, adb_host: str | None, adb_port: int | None, control: str | None = None,
                 graph_dir: str | Path | None = None) -> tuple[Device, Any, Any]:
    """(device, the simulator or None, the asset pack: the simulator's synthetic one when none was given)."""
    from engine.device import open_device

    if serial is not None:
        return (open_device(serial, graph=graph, policies=policies, adb_host=adb_host, adb_port=adb_port,
                            control=control), None, pack)
    from engine.config.simstate import state_beside
    from engine.runtime.devices import open_simulated
    from engine.sim import Scenario, style_beside

    if isinstance(scenario, (str, Path)):
        scenario = Scenario.from_file(scenario)
    device = open_simulated(graph, policies=policies, control=control, assets=pack, scenario=scenario,
                            seed=seed or 0, state=state_beside(graph_dir, graph), style=style_beside(graph_dir),
                            **({"clock": clock} if clock is not None else {}))
    return device, device.sim, pack if pack is not None else device.sim.assets  # closing the device stops it


def _open_transcript(folder: Path, closers: list[Callable[[], None]]) -> tuple[Transcript, str]:
    """(the transcript in `folder`, its error-bundle folder); its closing is added to `closers`."""
    from engine.core.errors import ConfigError
    from engine.runtime.transcript import Transcript

    try:
        folder.mkdir(parents=True, exist_ok=True)
        transcript = Transcript(folder / "transcript.jsonl")
    except OSError as exc:
        raise ConfigError(f"cannot write the transcript in {folder}: {exc.strerror or exc}") from None
    closers.append(transcript.close)
    return transcript, str(folder / "error_bundles")


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
    names of the skills merged. A session that cannot navigate gets nothing.

    Raises:
        GraphError: the skills file is broken or names what the graph lacks (file:line:col).
        ConfigError: a skill has the name of a shipped task.
    """
    from engine.core.errors import ConfigError
    from engine.tasks.skills import SkillStore

    if session.skills_path is None or session.tasks is None:
        return []
    skills = SkillStore(session.skills_path).load(session.graph)
    clash = sorted({t.name for t in skills} & session.shipped_tasks)
    if clash:
        raise ConfigError(f"skill(s) {', '.join(clash)} have the name of a shipped task; rename them",
                          file=str(session.skills_path))
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
