"""An episode's state as one JSON file, written at every stop, so ``--resume DIR`` continues where it ended.

The checkpoint holds the goal itself (a free-text goal has no file to come back to), what was spent, the calls
made, the tasks verified, the working memory's percepts and the anti-repeat window. It is written atomically
(a temporary file, then a rename): a killed process leaves the previous checkpoint, never half of one.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from engine.core.errors import ConfigError

FILE_NAME = "checkpoint.json"
VERSION = 1
MAX_BYTES = 4 * 1024 * 1024


@dataclass
class Spend:
    """What an episode has used so far (``seconds`` counts earlier runs of a resumed episode too)."""

    turns: int = 0
    tool_calls: int = 0
    model_calls: int = 0
    tokens: int = 0
    seconds: float = 0.0
    looks: int = 0
    parser_errors: int = 0
    false_claims: int = 0
    deterministic_calls: int = 0
    invalid_in_a_row: int = 0
    """Unusable model answers since the last usable one (the agent policy's invalid_answers ends the episode)."""


@dataclass
class EpisodeState:
    """Everything a resumed episode needs."""

    episode: str
    goal: dict[str, Any]
    spend: Spend = field(default_factory=Spend)
    calls: list[dict[str, Any]] = field(default_factory=list)
    """Executed tool calls in order: ``{tool, arguments, ok, status, turn}``."""
    tasks: dict[str, bool] = field(default_factory=dict)
    """Tasks run in this episode and whether each was verified."""
    percepts: list[dict[str, Any]] = field(default_factory=list)
    repeats: list[list[str]] = field(default_factory=list)
    deterministic_done: bool = False
    last_claim_false: bool = False
    start_page: str | None = None
    stop_reason: str | None = None
    verified: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"version": VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> EpisodeState:
        """The state in `raw`; ConfigError naming `where` when it is not one."""
        if not isinstance(raw, dict) or raw.get("version") != VERSION:
            raise ConfigError(f"{where}: not an episode checkpoint of version {VERSION}")
        known = {f.name for f in fields(cls)}
        try:
            body = {k: v for k, v in raw.items() if k in known}
            spend = body.pop("spend", {})
            state = cls(spend=Spend(**spend), **body)
        except TypeError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if not isinstance(state.goal, dict) or not isinstance(state.calls, list):
            raise ConfigError(f"{where}: the goal or the calls are malformed")
        return state


def save_checkpoint(folder: str | Path, state: EpisodeState) -> Path:
    """Write `state` to ``folder/checkpoint.json`` atomically; returns the path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / FILE_NAME
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state.to_dict(), ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    os.replace(tmp, path)
    return path


def load_checkpoint(folder: str | Path) -> EpisodeState:
    """The state saved in `folder` (a folder, or the checkpoint file itself).

    Raises:
        ConfigError: no checkpoint there, too big, not JSON, or not a checkpoint (naming the file).
    """
    path = Path(folder)
    if path.is_dir():
        path = path / FILE_NAME
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise ConfigError(f"{path}: {size} bytes is more than a checkpoint may hold ({MAX_BYTES})")
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no checkpoint to resume (run an episode with --transcript DIR first)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    return EpisodeState.from_dict(raw, str(path))
