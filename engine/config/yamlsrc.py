"""YAML with source positions: parse a file into plain data plus a Locator that answers "which line is this?".

Every configuration error the engine reports names ``file:line:col``. PyYAML's ``safe_load`` throws the marks away
(and silently keeps the last of two duplicate keys), so ``engine.config.yamlsafe`` composes the node tree itself, under
limits (size, nesting, alias expansion), builds plain Python data from it, and remembers where each node starts; this
is the one reader of graph, task and policy files. ``problems_from_validation_error`` then turns a pydantic
``ValidationError`` into human ``Problem`` records pointing at the offending key, naming the field, with a hint.

Error handling, in one place: ``read_yaml`` never raises for a bad file, it returns the problems it found (syntax
errors, duplicate keys, unknown tags, bytes that are not UTF-8) beside whatever data it could build, so a caller
checking many files can report everything at once; ``load_yaml`` is the strict form and raises ``YamlError`` (a
``ConfigError``) when there is any.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engine.config.yamlsafe import LIMITS, Limits, LocPath, parse, read_text
from engine.core.errors import YamlError

__all__ = ["LIMITS", "Limits", "LocPath", "Locator", "Problem", "YamlError", "YamlSource", "load_yaml", "read_yaml"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong (or suspicious) in a configuration file, at a 1-based line and column."""

    file: str
    line: int | None
    col: int | None
    message: str
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        where = ":".join(str(p) for p in (self.file, self.line, self.col) if p is not None)
        prefix = "warning: " if self.severity == "warning" else ""
        return f"{where}: {prefix}{self.message}"

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "col": self.col,
            "message": self.message,
            "severity": self.severity,
        }



@dataclass
class Locator:
    """Maps a location path to the (line, col) where it is written, falling back to the nearest ancestor.

    For a mapping entry the position is that of its key (``colour:`` is where a human looks for a bad field); for a
    sequence item it is the item's first character.
    """

    file: str
    data: Any = None
    marks: dict[LocPath, tuple[int, int]] = field(default_factory=dict)
    raw: dict[LocPath, str] = field(default_factory=dict)
    """The source text of unquoted scalars YAML did not read as text (``YES`` became True), by path."""

    def locate(self, path: Iterable[str | int]) -> tuple[int | None, int | None]:
        path = tuple(path)
        while True:
            if path in self.marks:
                return self.marks[path]
            if not path:
                return None, None
            path = path[:-1]

    def has(self, path: Iterable[str | int]) -> bool:
        return tuple(path) in self.marks

    def problem(
        self, path: Iterable[str | int], message: str, severity: Literal["error", "warning"] = "error"
    ) -> Problem:
        line, col = self.locate(path)
        return Problem(self.file, line, col, message, severity)


@dataclass
class YamlSource:
    """What ``read_yaml`` found: the data it could build, its locator, and the problems on the way."""

    data: Any
    locator: Locator
    problems: list[Problem]


def read_yaml(
    path: str | Path, *, text: str | None = None, name: str | None = None, limits: Limits = LIMITS
) -> YamlSource:
    """Parse one YAML document under `limits`, collecting problems instead of raising.

    Args:
        path: the file to read (also the name problems carry, unless `name` is given).
        text: the file's contents, when the caller already has them.
        name: the file name to put in problems (for example a path relative to the project).
        limits: the size, nesting and alias-expansion bounds (engine.config.yamlsafe.LIMITS by default).

    Returns:
        A YamlSource; ``data`` is None for an empty file or one that could not be read or parsed.
    """
    file = name if name is not None else str(path)
    locator = Locator(file)
    if text is None:
        text, issue = read_text(Path(path), limits)
        if issue is not None:
            return YamlSource(None, locator, [Problem(file, *issue)])
    parsed = parse(text, limits)
    locator.data, locator.marks, locator.raw = parsed.data, parsed.marks, parsed.raw
    return YamlSource(parsed.data, locator, [Problem(file, *issue) for issue in parsed.issues])


def load_yaml(path: str | Path) -> tuple[Any, Locator]:
    """Parse one YAML file strictly: its data and Locator, or ``YamlError`` listing every problem.

    Raises:
        YamlError: on syntax errors, duplicate mapping keys, unknown tags, an unreadable or oversized file.
    """
    source = read_yaml(path)
    if source.problems:
        raise YamlError(source.problems)
    return source.data, source.locator
