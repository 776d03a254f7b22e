"""Where a user's AzurLaneAutoScript lives and which tasks it declares, read as data (ALAS is never imported here).

An ALAS checkout has ``alas.py`` (the ``AzurLaneAutoScript`` class whose methods are the tasks),
``module/config/argument/task.yaml`` (every task and settings group: a task is one whose groups include
``Scheduler``), ``module/config/i18n/<lang>.json`` (each task's display name and help) and ``config/<name>.json``
(the user's settings). The interpreter is the one ALAS runs under (its ``toolkit/python.exe`` on Windows, a venv
elsewhere): ALAS pins its own Python and packages, so the engine only ever starts it as another process.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import ConfigError

PREFIX = "alas:"
TASK_FILE = Path("module/config/argument/task.yaml")
I18N_DIR = Path("module/config/i18n")
MAX_FILE = 4 * 1024 * 1024
"""Largest configuration file read (ALAS's own are under 200 kB)."""
LOGIN_LIKE = re.compile(r"(?i)login|restart|^start$|^goto_?main$")
"""Tasks that run ALAS's blocking login loop (`handle_app_login`, a `while 1` of up to 300 s): never a tool."""


@dataclass(frozen=True)
class AlasTask:
    name: str
    """ALAS's task name (Commission); the tool name is ``alas:<name>``."""
    description: str


@dataclass
class Checkout:
    """An ALAS checkout, the interpreter that runs it and the config name to use."""

    root: Path
    python: str
    config: str = "alas"
    tasks: list[AlasTask] = field(default_factory=list)

    @classmethod
    def open(cls, root: str | Path, python: str | None = None, config: str | None = None) -> Checkout:
        """Check the checkout and read its tasks.

        Raises:
            ConfigError: no such folder, not an ALAS checkout, no such interpreter or config (each named).
        """
        folder = Path(root).expanduser()
        if not folder.is_dir():
            raise ConfigError(f"--alas {root}: no such folder")
        missing = [str(p) for p in (Path("alas.py"), TASK_FILE) if not (folder / p).is_file()]
        if missing:
            raise ConfigError(f"--alas {root}: not an ALAS checkout (no {', '.join(missing)})")
        interpreter = python or _default_python(folder)
        if not interpreter or not _runnable(interpreter):
            raise ConfigError(f"--alas-python {interpreter or '(none)'}: no such interpreter; pass the Python ALAS "
                              "runs under (its venv's python, or toolkit/python.exe on Windows)")
        name = config or "alas"
        if not re.fullmatch(r"[\w.-]{1,64}", name):
            raise ConfigError(f"--alas-config {name!r}: a config name is letters, digits, '.', '_' or '-'")
        if not (folder / "config" / f"{name}.json").is_file():
            raise ConfigError(f"--alas-config {name}: no config/{name}.json in {folder}")
        return cls(folder.resolve(), interpreter, name, read_tasks(folder))

    @classmethod
    def from_environment(cls, env: dict[str, str] | None = None) -> Checkout | None:
        """The checkout named by ALAS_DIR (with ALAS_PYTHON, ALAS_CONFIG), or None when ALAS_DIR is unset."""
        env = dict(os.environ) if env is None else env
        if not env.get("ALAS_DIR"):
            return None
        return cls.open(env["ALAS_DIR"], env.get("ALAS_PYTHON") or None, env.get("ALAS_CONFIG") or None)

    def names(self) -> list[str]:
        return [PREFIX + t.name for t in self.tasks]

    def to_dict(self) -> dict[str, object]:
        runnable = sum(1 for t in self.tasks if not LOGIN_LIKE.search(t.name))
        return {"root": str(self.root), "python": self.python, "config": self.config, "tasks": runnable}


def read_tasks(root: Path) -> list[AlasTask]:
    """The tasks ALAS's task.yaml declares (groups that include Scheduler), described from its English i18n.
    The file is read as untrusted YAML (engine.yamlsafe: size, nesting and aliases bounded)."""
    from engine.yamlsafe import parse, read_text

    path = root / TASK_FILE
    text, issue = read_text(path)
    parsed = parse(text) if text is not None else None
    issue = issue or (parsed.issues[0] if parsed is not None and parsed.issues else None)
    if issue is not None:
        raise ConfigError(issue.message, file=str(path), line=issue.line, col=issue.col)
    groups = parsed.data
    if not isinstance(groups, dict):
        raise ConfigError("expected a mapping of task name to settings groups", file=str(path))
    help_text = _descriptions(root)
    tasks = []
    for name, parts in groups.items():
        if isinstance(name, str) and isinstance(parts, list) and "Scheduler" in parts:
            tasks.append(AlasTask(name, help_text.get(name) or f"ALAS task {name}"))
    return tasks


def _descriptions(root: Path) -> dict[str, str]:
    path = root / I18N_DIR / "en-US.json"
    if not path.is_file():
        return {}
    try:
        data = _load_json(path)
    except ConfigError:
        return {}  # descriptions are a nicety: a broken i18n file leaves the plain names
    out = {}
    for name, entry in (data.get("Task") or {}).items() if isinstance(data, dict) else ():
        if isinstance(entry, dict):
            text = " - ".join(str(entry[k]).strip() for k in ("name", "help") if str(entry.get(k) or "").strip())
            out[str(name)] = f"ALAS: {text}" if text else ""
    return out


def _load_json(path: Path) -> Any:
    try:
        if path.stat().st_size > MAX_FILE:
            raise ConfigError(f"larger than {MAX_FILE // 1024 // 1024} MB", file=str(path))
        return json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError) as exc:
        raise ConfigError(f"cannot read it: {exc}", file=str(path), line=getattr(exc, "lineno", None)) from None


def _default_python(root: Path) -> str | None:
    """ALAS's own interpreter where its installer puts one, else None (the user must say)."""
    for candidate in (root / "toolkit" / "bin" / "python", root / "toolkit" / "python.exe",
                      root / ".venv" / "bin" / "python", root / "venv" / "bin" / "python"):
        if candidate.is_file():
            return str(candidate)
    return None


def _runnable(python: str) -> bool:
    from shutil import which

    return Path(python).is_file() and os.access(python, os.X_OK) or which(python) is not None
