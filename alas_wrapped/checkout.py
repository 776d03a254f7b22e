"""A user's AzurLaneAutoScript: where it lives, the Python it runs under, the instance and language to use, and the
tasks it declares (read as data by alas_wrapped.catalog; ALAS is never imported into the engine).

An ALAS checkout has ``alas.py`` (the ``AzurLaneAutoScript`` class whose methods are the tasks) and
``module/config/argument/task.yaml``. The interpreter is the one ALAS runs under (its ``toolkit/python.exe`` on
Windows, a venv elsewhere): ALAS pins its own Python and packages, so the engine only ever starts it as another
process, and asks it first (alas_wrapped.interpreter) whether it can run this ALAS at all: once, before the first run,
inside that run's bound. Listing the tasks reads files only and never waits on that interpreter.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from alas_wrapped.catalog import DEFAULT_INSTANCE, TASK_FILE, AlasTask, language, read_catalog
from engine.core.errors import ConfigError

PREFIX = "alas:"
LOGIN_LIKE = re.compile(r"(?i)login|restart|^start$|^goto_?main$")
"""Tasks that run ALAS's blocking login loop (`handle_app_login`, a `while 1` of up to 300 s): never a tool."""
LOGIN_TASK = "login"
"""Our own bounded login task, which the refusal of ALAS's login-like tasks points to."""


@dataclass
class Checkout:
    """An ALAS checkout, the interpreter that runs it, the instance (config/<name>.json) and the listing language."""

    root: Path
    python: str | None
    """The interpreter named or found, or None; ``interpreter()`` checks it (once) before anything runs ALAS."""
    config: str = DEFAULT_INSTANCE
    lang: str = "en-US"
    entries: list[AlasTask] = field(default_factory=list)
    """Every task, settings group and tool of task.yaml (``tasks`` are the ones alas_run may run)."""
    python_version: str | None = None
    probe_timeout: float | None = None

    @classmethod
    def open(cls, root: str | Path, python: str | None = None, config: str | None = None,
             lang: str | None = None, *, probe_timeout: float | None = None, defer_python: bool = False) -> Checkout:
        """Check the checkout and its instance, read its tasks, and (unless `defer_python`) check its interpreter.

        Args:
            defer_python: leave the interpreter unchecked until something runs one of ALAS's tasks
                (``interpreter()``); listing them reads ALAS's files only, so it never waits on ALAS's Python.

        Raises:
            ConfigError: no such folder, not an ALAS checkout, no such instance or a broken one, an unknown
                language, an interpreter that cannot run this ALAS (each named, with what to do).
        """
        folder = Path(root).expanduser()
        if not folder.is_dir():
            raise ConfigError(f"--alas {root}: no such folder")
        missing = [str(p) for p in (Path("alas.py"), TASK_FILE) if not (folder / p).is_file()]
        if missing:
            raise ConfigError(f"--alas {root}: not an ALAS checkout (no {', '.join(missing)})")
        folder = folder.resolve()
        name = config or DEFAULT_INSTANCE
        if not re.fullmatch(r"[\w-]{1,64}", name) or name == "template":
            raise ConfigError(f"--alas-config {name!r}: an instance name is letters, digits, '_' or '-' (the name "
                              "of its config/<name>.json), and not ALAS's template")
        lang = language(lang)
        entries = read_catalog(folder, name, lang)
        checkout = cls(folder, python or _default_python(folder), name, lang, entries, probe_timeout=probe_timeout)
        if not defer_python:
            checkout.interpreter()
        return checkout

    def interpreter(self, timeout: float | None = None) -> str:
        """The interpreter that runs this ALAS, checked on first use (its version, and that it imports ALAS); a pass
        is kept for the process (alas_wrapped.interpreter.verdict_key), so only the first run pays for the probe.

        Args:
            timeout: the probe's bound (default: `probe_timeout`, else PROBE_TIMEOUT_S); alas_run passes what is
                left of its own bound.

        Raises:
            ProbeTimeout: the probe did not answer within the bound (a slow machine: no verdict).
            ConfigError: none named or found, or one that cannot run this ALAS; asked again on every call until it
                passes, so a fixed venv is seen without a restart.
        """
        from alas_wrapped.interpreter import PROBE_TIMEOUT_S, check_python

        if self.python_version is not None and self.python:
            return self.python
        if not self.python:
            raise ConfigError(f"--alas {self.root}: say which Python runs ALAS (--alas-python or $ALAS_PYTHON: its "
                              "venv's python, or toolkit/python.exe on Windows)")
        bound = timeout if timeout is not None else self.probe_timeout or PROBE_TIMEOUT_S
        self.python_version = check_python(self.root, self.python, worker_env(), bound)
        return self.python

    @classmethod
    def from_environment(cls, env: dict[str, str] | None = None) -> Checkout | None:
        """The checkout named by ALAS_DIR (with ALAS_PYTHON, ALAS_CONFIG, ALAS_LANG), or None when ALAS_DIR is
        unset."""
        env = dict(os.environ) if env is None else env
        if not env.get("ALAS_DIR"):
            return None
        return cls.open(env["ALAS_DIR"], env.get("ALAS_PYTHON") or None, env.get("ALAS_CONFIG") or None,
                        env.get("ALAS_LANG") or None)

    @property
    def tasks(self) -> list[AlasTask]:
        """The tasks alas_run runs: the ones ALAS's scheduler runs, but its login loop."""
        return [t for t in self.entries if t.scheduled and not LOGIN_LIKE.search(t.name)]

    def task(self, name: str) -> AlasTask | None:
        return next((t for t in self.entries if t.name == name), None)

    def refusal(self, name: str) -> str | None:
        """Why task `name` (without the prefix) is never run as a tool, or None when it may be."""
        entry = self.task(name)
        tool = PREFIX + name
        if LOGIN_LIKE.search(name):
            return (f"{tool} runs ALAS's blocking login loop (a `while 1` of up to 300 s), which is never a tool: "
                    f"use our bounded `{LOGIN_TASK}` task instead")
        if entry is None or entry.scheduled:
            return None
        if entry.page == "tool":
            return (f"{tool} ({entry.title}) needs a human: it is on the Tools page of ALAS's GUI, which a person "
                    "starts and stops by hand (ALAS's scheduler never runs it); start it from ALAS's GUI")
        return f"{tool} ({entry.title}) is a group of settings that ALAS's tasks share, not a task"

    def to_dict(self) -> dict[str, object]:
        return {"root": str(self.root), "python": self.python, "python_version": self.python_version,
                "config": self.config, "lang": self.lang, "tasks": len(self.tasks)}


def worker_env() -> dict[str, str]:
    """Our environment without its secrets (API keys are none of ALAS's business), for whatever runs ALAS's Python;
    rich (ALAS's log) writes lines up to 200 characters wide into a pipe instead of wrapping them at 80."""
    from engine.core.redact import is_secret_key

    env = {k: v for k, v in os.environ.items() if not is_secret_key(k)}
    env.update(PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8", COLUMNS="200")
    return env


def _default_python(root: Path) -> str | None:
    """ALAS's own interpreter where its installer puts one, else None (the user must say)."""
    for candidate in (root / "toolkit" / "bin" / "python", root / "toolkit" / "python.exe",
                      root / ".venv" / "bin" / "python", root / "venv" / "bin" / "python"):
        if candidate.is_file():
            return str(candidate)
    return None
