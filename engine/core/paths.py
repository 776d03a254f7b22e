"""Where things live: the shipped data (from a checkout or an installed copy) and the per-game state under the
engine's home folder."""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

HOME_ENV = "ENGINE_HOME"
"""Environment variable naming the engine's home folder (skills, progress and other per-game state live below it)."""
SKILLS_FILE = "skills.yaml"


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


def agent_home(env: Mapping[str, str] | None = None) -> Path:
    """The agent's home folder: ``$ENGINE_HOME``, else ``~/.local/share/engine`` (not created here).

    Args:
        env: the environment to read (default: ``os.environ``).
    """
    env = os.environ if env is None else env
    home = env.get(HOME_ENV)
    return Path(home).expanduser() if home else Path.home() / ".local" / "share" / "engine"


def game_slug(game: str) -> str:
    """A filesystem-safe folder name for a game's name (``Tower Defense`` -> ``tower-defense``), never empty or
    hidden."""
    text = unicodedata.normalize("NFKC", game).casefold()
    slug = re.sub(r"[^\w.-]+", "-", text).strip("-.")
    return slug or "game"


def game_dir(home: str | Path, graph: Any) -> Path:
    """The folder of one game's learned state under `home`, named after ``graph.game``."""
    return Path(home) / game_slug(graph.game)


def skills_file(home: str | Path, graph: Any) -> Path:
    """The skills file of `graph`'s game under `home`."""
    return game_dir(home, graph) / SKILLS_FILE
