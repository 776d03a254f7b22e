"""Loading a graph folder: YAML files -> one cross-checked ``schema.Graph``, or every problem at once.

A graph is a folder of ``*.yaml`` files (sorted by name, not recursive), each a ``schema.GraphFile``; their buttons,
pages and popups are concatenated and the graph-wide fields (game, resolution, servers, ...) may each be set in one
file only. Files named ``tasks*.yaml`` (and ``goals*.yaml``) are skipped: they may live beside the pages but are
not graph files. ``check_graph`` checks them with their own loaders, registered with ``register_companion`` (tasks
and goals are; anything else that lives beside a graph can register its check the same way). A single ``.yaml`` file is
accepted too.

Everything that can be checked before the first tap is checked at load time (MaaFramework's PipelineChecker), in two
steps: ``engine.config.graphfiles`` reads and validates each file on its own (schema errors, fields set twice), then
``engine.config.graphcheck`` checks the graph as a whole (duplicate names, dangling references, areas off the screen,
unsafe asset names, unknown servers, pages that can never be reached or told apart). Each problem is a
``yamlsrc.Problem`` with file:line:col; this module sorts them into a ``Report`` and turns errors into a ``GraphError``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from engine.config.graphcheck import Checker
from engine.config.graphfiles import (  # noqa: F401 - graph_files and the constants are re-exported
    COMPANION_PREFIXES,
    GRAPH_WIDE_FIELDS,
    ITEM_MODELS,
    REQUIRED_FIELDS,
    SKIPPED_FILE_PREFIX,
    graph_files,
    read_files,
)
from engine.config.schema import Graph, GraphFile
from engine.config.yamlsrc import Problem
from engine.core import paths
from engine.core.errors import GraphError

logger = logging.getLogger(__name__)

CompanionCheck = Callable[[list[Path], Graph | None], list[Problem]]
"""Checks the companion files of a graph (sorted paths) against the graph (None when the graph has errors)."""

_COMPANIONS: dict[str, CompanionCheck] = {}


def register_companion(pattern: str, check: CompanionCheck) -> None:
    """Have ``check_graph`` (and so ``validate``) check the files matching `pattern` beside a graph's files."""
    _COMPANIONS[pattern] = check


def _check_tasks(files: list[Path], graph: Graph | None) -> list[Problem]:
    from engine.config.taskfiles import read_tasks

    return read_tasks(files, graph)[1]


register_companion(COMPANION_PREFIXES[0] + "*.yaml", _check_tasks)


def _check_goals(files: list[Path], graph: Graph | None) -> list[Problem]:
    from engine.config.goals import read_goals

    return read_goals(files, graph)[1]


register_companion(COMPANION_PREFIXES[1] + "*.yaml", _check_goals)


def _check_sim_state(files: list[Path], graph: Graph | None) -> list[Problem]:
    from engine.config.simstate import read_state

    return read_state(files, graph)[1]


register_companion(COMPANION_PREFIXES[2] + "*.yaml", _check_sim_state)


def _check_schedule(files: list[Path], graph: Graph | None) -> list[Problem]:
    from engine.config.goals import task_names_beside
    from engine.config.schedule import SCHEDULE_FILE, read_schedule

    mine = [f for f in files if f.name == SCHEDULE_FILE]
    if not mine or graph is None:
        return []
    return read_schedule(mine[0], graph, task_names_beside(mine[0].parent, graph))[1]


register_companion(COMPANION_PREFIXES[3] + "*.yaml", _check_schedule)


@dataclass(frozen=True)
class Report:
    """The outcome of checking a graph: the graph (None when there are errors), problems, and sizes."""

    graph: Graph | None
    problems: tuple[Problem, ...]
    pages: int = 0
    links: int = 0
    popups: int = 0
    buttons: int = 0

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(p for p in self.problems if p.severity == "warning")

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        head = "ok" if self.ok else f"{len(self.errors)} error(s)"
        return (
            f"{head}: {self.pages} pages, {self.links} links, {self.popups} popups, {self.buttons} buttons "
            f"({len(self.warnings)} warnings)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "summary": self.summary(),
            "counts": {"pages": self.pages, "links": self.links, "popups": self.popups, "buttons": self.buttons},
            "errors": [p.to_dict() for p in self.errors],
            "warnings": [p.to_dict() for p in self.warnings],
        }


def check_graph(
    path: str | Path | None = None, *, policies: str | Path | Iterable[str] | None = None, companions: bool = True
) -> Report:
    """Load and check the graph at `path` (default: the shipped default graph, pages.DEFAULT_GAME), reporting every
    problem.

    Args:
        path: a graph folder or a single graph file.
        policies: the policies hops may name: a policy file (read and checked too: its problems join the report;
            its policies join the shipped ones), or the names themselves; None means the shipped policies.
        companions: also check the files beside the graph registered with ``register_companion`` (tasks*.yaml).
    """
    origin = Path(path) if path is not None else paths.builtin_graph_dir()
    collected = read_files(origin)
    names, policy_problems = _policy_names(policies)
    checker = Checker(collected, origin, policy_names=names)
    checker.run()
    graph = checker.build()
    problems = [*policy_problems, *checker.problems]
    if companions and origin.is_dir():
        for pattern, check in _COMPANIONS.items():
            files = sorted(origin.glob(pattern))
            problems += check(files, graph) if files else []
    order = {str(file): i for i, file in enumerate(graph_files(origin))} if origin.is_dir() or origin.is_file() else {}
    pages = [m for m, _ in collected.items["pages"]]
    return Report(
        graph=graph if not any(p.is_error for p in problems) else None,
        problems=tuple(sorted(problems, key=lambda p: (order.get(p.file, -1), p.file, p.line or 0, p.col or 0))),
        pages=len(pages),
        links=sum(len(p.links) for p in pages),
        popups=len(collected.items["popups"]),
        buttons=len(collected.items["buttons"]),
    )


def _policy_names(policies: str | Path | Iterable[str] | None) -> tuple[set[str] | None, list[Problem]]:
    from engine.config.policies import load_policies, read_policy_file
    from engine.core.errors import ConfigError

    try:
        shipped = set(load_policies().names)
    except ConfigError:
        return None, []  # the shipped file is broken: nothing to check names against (its tests say why)
    if policies is None:
        return shipped, []
    if not isinstance(policies, (str, Path)):
        return set(policies), []
    found, problems = read_policy_file(policies)
    # A broken file's policy names are unknown, so references to them cannot be judged: its problems say enough.
    return (shipped | set(found.names) if found is not None else None), problems


def load_graph(
    path: str | Path | None = None, *, server: str | None = None, policies: str | Path | Iterable[str] | None = None
) -> Graph:
    """The checked graph at `path` (default: the shipped default graph, pages.DEFAULT_GAME), collapsed to `server` when
    given.

    Warnings are logged; errors raise. `policies` is what hops may name (see ``check_graph``); companion files
    (tasks) are not checked here: their own loaders check them when they are loaded.

    Raises:
        GraphError: listing every error problem (``.problems``), each with file:line:col.
        ValueError: `server` is not one of the graph's servers.
    """
    report = check_graph(path, policies=policies, companions=False)
    for warning in report.warnings:
        logger.info("%s", warning)
    if report.warnings:
        # One quiet line, not one per warning: every goto loads the graph, and `validate` lists them in full.
        logger.info(
            "%d warning(s) in the graph at %s; `python -m engine validate` lists them",
            len(report.warnings),
            path if path is not None else paths.builtin_graph_dir(),
        )
    if report.graph is None:
        raise GraphError(list(report.errors))
    return report.graph.for_server(server) if server is not None else report.graph


def graph_json_schema() -> dict[str, Any]:
    """The JSON Schema of one graph file (pages/graph.schema.json), for editors and external checkers."""
    body = GraphFile.model_json_schema()
    body.pop("title", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Page graph file (engine.config.schema.GraphFile)",
        **body,
    }
