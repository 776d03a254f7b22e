"""Where the shipped data lives, whether the engine runs from a checkout or an installed copy."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def _package_dir(package: str) -> Path:
    return Path(str(resources.files(package)))


def builtin_graph_dir(game: str | None = None) -> Path:
    """The folder of the shipped graph for `game` (pages/<game>); by default the one the pages package names."""
    if game is None:
        import pages

        game = pages.DEFAULT_GAME
    return _package_dir("pages") / game


def builtin_policy_file() -> Path:
    """The shipped default policy file (policies/default.yaml)."""
    return _package_dir("policies") / "default.yaml"


def schema_file() -> Path:
    """The JSON Schema of a graph file, shipped beside the graphs for editors (pages/graph.schema.json)."""
    return _package_dir("pages") / "graph.schema.json"
