"""What an ALAS checkout declares and what a user's instance of it says, read as data (ALAS is never imported here).

ALAS's own files, as its ``module/config/config_updater.py`` reads them:

- ``module/config/argument/task.yaml``: menu groups, each ``Group: {menu, page, tasks: {Task: [setting groups]}}``.
  A task whose setting groups include ``Scheduler`` is one ALAS's scheduler runs (``AzurLaneAutoScript.loop`` picks
  it by its ``Scheduler.NextRun``); the rest are settings shared by tasks (``Alas``, ``General``, ``OpsiGeneral``)
  or the tools of its GUI's Tools page (``Daemon``...), which a person starts by hand.
- ``module/config/argument/args.json``: every setting's type and default (``Scheduler.Enable`` is a ``lock`` for
  the tasks ALAS always runs: its value there wins over the user's).
- ``module/config/i18n/<lang>.json``: ``Task.<Task>.{name, help}`` and ``Menu.<Group>.name``, in the four
  languages of its ``module/config/utils.py`` ``LANGUAGES``.
- ``config/<instance>.json``: the user's settings, which ALAS makes from ``config/template.json`` (its GUI's "add
  instance"); ``alas`` is the instance ``python alas.py`` and a fresh GUI use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.core.errors import ConfigError
from engine.core.results import did_you_mean

TASK_FILE = Path("module/config/argument/task.yaml")
ARGS_FILE = Path("module/config/argument/args.json")
I18N_DIR = Path("module/config/i18n")
CONFIG_DIR = Path("config")
LANGUAGES = ("en-US", "zh-CN", "ja-JP", "zh-TW")
"""ALAS's GUI languages (module/config/utils.py LANGUAGES); en-US is the listing's default."""
DEFAULT_INSTANCE = "alas"
"""The instance ALAS uses when none is named (``AzurLaneAutoScript(config_name='alas')``, ``alas_instance()``)."""
MAX_FILE = 4 * 1024 * 1024
"""Largest configuration file read (ALAS's own are under 250 kB)."""
SHAPE = "ALAS's layout `Group: {menu: ..., page: ..., tasks: {Task: [setting groups]}}`"


@dataclass(frozen=True)
class AlasTask:
    """One task (or settings group, or GUI tool) of task.yaml, in the user's language, with the instance's state."""

    name: str
    """ALAS's name (Commission); the tool is ``alas:<name>``."""
    menu: str
    """Its task.yaml group (Reward)."""
    page: str
    """The GUI page of its group: ``setting`` (tasks and their settings) or ``tool`` (the Tools page)."""
    groups: tuple[str, ...]
    title: str
    """ALAS's own name for it in the chosen language."""
    help: str
    menu_title: str
    enabled: bool | None = None
    """``<Task>.Scheduler.Enable`` in the instance (None: not a scheduler task)."""
    next_run: str | None = None
    """``<Task>.Scheduler.NextRun`` in the instance, as ALAS writes it (``2020-01-01 00:00:00``)."""

    @property
    def scheduled(self) -> bool:
        """Whether ALAS's scheduler runs it (its setting groups include Scheduler)."""
        return "Scheduler" in self.groups

    @property
    def description(self) -> str:
        text = self.title + (f" - {self.help}" if self.help else "")
        return f"ALAS: {text} ({self.menu_title})"


def read_catalog(root: Path, instance: str, lang: str) -> list[AlasTask]:
    """Every entry of the checkout's task.yaml, named in `lang`, with the state instance `instance` gives it.

    Raises:
        ConfigError: a file missing, unreadable or not in ALAS's shape (each named, with its line where known).
    """
    entries = read_task_file(root)
    words = _load_json(root / I18N_DIR / f"{lang}.json")
    args = _load_json(root / ARGS_FILE) if (root / ARGS_FILE).is_file() else {}
    config = read_instance(root, instance)
    tasks = []
    for menu, page, name, groups in entries:
        state = _scheduler(config, args, name) if "Scheduler" in groups else {}
        tasks.append(AlasTask(name, menu, page, groups, title=_word(words, "Task", name, "name") or name,
                              help=_word(words, "Task", name, "help"),
                              menu_title=_word(words, "Menu", menu, "name") or menu,
                              enabled=_bool(state.get("Enable")) if state else None,
                              next_run=str(state["NextRun"]) if state.get("NextRun") is not None else None))
    return tasks


def read_task_file(root: Path) -> list[tuple[str, str, str, tuple[str, ...]]]:
    """``(menu group, page, task, setting groups)`` for every task of task.yaml, in its order. The file is read as
    untrusted YAML (engine.config.yamlsafe: size, nesting and aliases bounded)."""
    from engine.config.yamlsafe import parse, read_text

    path = root / TASK_FILE
    text, issue = read_text(path)
    parsed = parse(text) if text is not None else None
    issue = issue or (parsed.issues[0] if parsed is not None and parsed.issues else None)
    if issue is not None:
        raise ConfigError(issue.message, file=str(path), line=issue.line, col=issue.col)
    assert parsed is not None
    if not isinstance(parsed.data, dict) or not parsed.data:
        raise ConfigError(f"expected {SHAPE}", file=str(path))
    out = []
    for menu, group in parsed.data.items():
        line = parsed.marks.get((menu,), (None,))[0]
        if not isinstance(group, dict) or not isinstance(group.get("tasks"), dict):
            raise ConfigError(f"{menu!s}: expected {SHAPE} (is this an older or a modified ALAS?)", file=str(path),
                              line=line)
        for name, groups in group["tasks"].items():
            if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
                raise ConfigError(f"{menu}.tasks.{name}: expected a list of setting groups", file=str(path),
                                  line=parsed.marks.get((menu, "tasks", name), (line,))[0])
            out.append((str(menu), str(group.get("page") or "setting"), str(name), tuple(groups)))
    return out


def read_instance(root: Path, instance: str) -> dict[str, Any]:
    """The user's ``config/<instance>.json`` (a mapping of task to setting groups).

    Raises:
        ConfigError: no such instance (with the ones there are), or a file that is not such a JSON object.
    """
    path = root / CONFIG_DIR / f"{instance}.json"
    if not path.is_file():
        present = instances(root)
        hint, _ = did_you_mean(instance, present)
        raise ConfigError(f"--alas-config {instance}: no config/{instance}.json in {root}{hint or ''}; ALAS makes "
                          f"an instance from config/template.json when you add one in its GUI (or copy that file)"
                          + (f"; instances here: {', '.join(present)}" if present and not hint else ""))
    data = _load_json(path)
    if not isinstance(data, dict):
        raise ConfigError(f"expected a JSON object of tasks (as ALAS writes it), not {type(data).__name__}",
                          file=str(path))
    return data


def instances(root: Path) -> list[str]:
    """The instances of a checkout, as ALAS's ``alas_instance()`` finds them (every config/*.json but template)."""
    folder = root / CONFIG_DIR
    names = [p.stem for p in folder.glob("*.json") if "." not in p.stem] if folder.is_dir() else []
    return sorted(n for n in names if n != "template")


def language(lang: str | None) -> str:
    """One of ALAS's LANGUAGES (any case), en-US when none is given.

    Raises:
        ConfigError: a language ALAS does not ship.
    """
    if not lang:
        return LANGUAGES[0]
    found = next((x for x in LANGUAGES if x.lower() == lang.strip().lower()), None)
    if found is None:
        hint, _ = did_you_mean(lang, LANGUAGES)
        raise ConfigError(f"--alas-lang {lang}: ALAS speaks {', '.join(LANGUAGES)}{hint}")
    return found


def _scheduler(config: dict[str, Any], args: dict[str, Any], task: str) -> dict[str, Any]:
    """``<task>.Scheduler`` as ALAS's config_update sees it: the instance's value, else args.json's default; a
    ``lock`` setting always takes args.json's value."""
    own = _get(config, task, "Scheduler") or {}
    spec = _get(args, task, "Scheduler") or {}
    out = {}
    for key in ("Enable", "NextRun"):
        arg = spec.get(key) if isinstance(spec.get(key), dict) else {}
        value = own.get(key) if isinstance(own, dict) else None
        if value is None or value == "" or arg.get("type") == "lock":
            value = arg.get("value", value)
        out[key] = value
    return out


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _word(words: Any, section: str, key: str, field: str) -> str:
    value = _get(words, section, key, field)
    return " ".join(value.split()) if isinstance(value, str) else ""


def _bool(value: Any) -> bool:
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def _load_json(path: Path) -> Any:
    """A JSON file of at most MAX_FILE bytes (ConfigError naming the file and line otherwise)."""
    try:
        if path.stat().st_size > MAX_FILE:
            raise ConfigError(f"larger than {MAX_FILE // 1024 // 1024} MB", file=str(path))
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError("no such file (is this an ALAS checkout?)", file=str(path)) from None
    except (OSError, ValueError, RecursionError) as exc:
        message = getattr(exc, "msg", None) or str(exc)
        raise ConfigError(f"cannot read it: {message}", file=str(path), line=getattr(exc, "lineno", None),
                          col=getattr(exc, "colno", None)) from None
