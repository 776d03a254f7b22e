"""YAML with source positions: parse a file into plain data plus a Locator that answers "which line is this?".

Every configuration error the engine reports names ``file:line:col``. PyYAML's ``safe_load`` throws the marks away
(and silently keeps the last of two duplicate keys), so this module composes the node tree itself, builds plain
Python data from it, and remembers where each node starts. ``problems_from_validation_error`` then turns a pydantic
``ValidationError`` into human ``Problem`` records pointing at the offending key.

Error handling, in one place: ``read_yaml`` never raises for a bad file, it returns the problems it found (syntax
errors, duplicate keys, unknown tags) beside whatever data it could build, so a caller checking many files can report
everything at once; ``load_yaml`` is the strict form and raises ``YamlError`` (a ``ConfigError``) when there is any.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Literal

import pydantic
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from engine.errors import YamlError
from engine.results import closest

LocPath = tuple[str | int, ...]
"""A location in the data: mapping keys and sequence indexes from the document root."""

_MERGE_TAG = "tag:yaml.org,2002:merge"


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


def _mark(node: Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Builder:
    """Turns a composed node tree into plain data, recording marks and duplicate keys."""

    def __init__(self, loader: yaml.SafeLoader, locator: Locator, problems: list[Problem]) -> None:
        self.loader = loader
        self.locator = locator
        self.problems = problems
        self._active: set[int] = set()  # node ids on the current path, to stop recursive aliases

    def build(self, node: Node, path: LocPath, mark: tuple[int, int] | None = None) -> Any:
        self.locator.marks[path] = mark or _mark(node)
        if id(node) in self._active:
            self.problems.append(self.locator.problem(path, "recursive YAML alias"))
            return None
        if isinstance(node, ScalarNode):
            try:
                return self.loader.construct_object(node, deep=True)
            except yaml.MarkedYAMLError as exc:
                self.problems.append(_problem_from_yaml_error(self.locator.file, exc))
                return None
        self._active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return [self.build(item, path + (i,)) for i, item in enumerate(node.value)]
            if isinstance(node, MappingNode):
                return self._mapping(node, path)
        finally:
            self._active.discard(id(node))
        return None  # pragma: no cover - composer only makes the three kinds

    def _mapping(self, node: MappingNode, path: LocPath) -> dict[Any, Any]:
        explicit = sum(1 for key, _ in node.value if key.tag != _MERGE_TAG)
        try:
            # `<<: *anchor` merges: PyYAML puts merged pairs first, explicit keys after (explicit ones win).
            self.loader.flatten_mapping(node)
        except yaml.MarkedYAMLError as exc:
            self.problems.append(_problem_from_yaml_error(self.locator.file, exc))
        merged_count = len(node.value) - explicit
        result: dict[Any, Any] = {}
        first_seen: dict[Any, tuple[int, int]] = {}
        for index, (key_node, value_node) in enumerate(node.value):
            key = self.build(key_node, path + ("<key>",)) if not isinstance(key_node, ScalarNode) else None
            if isinstance(key_node, ScalarNode):
                try:
                    key = self.loader.construct_object(key_node, deep=True)
                except yaml.MarkedYAMLError as exc:
                    self.problems.append(_problem_from_yaml_error(self.locator.file, exc))
                    continue
            try:
                hash(key)
            except TypeError:
                line, col = _mark(key_node)
                self.problems.append(Problem(self.locator.file, line, col, "a mapping key must be a plain value"))
                continue
            key_mark = _mark(key_node)
            is_merged = index < merged_count
            if key in first_seen and not is_merged:
                line, col = key_mark
                first_line, first_col = first_seen[key]
                self.problems.append(
                    Problem(
                        self.locator.file,
                        line,
                        col,
                        f"duplicate key {key!r} (first at line {first_line}, col {first_col})",
                    )
                )
                continue
            if not is_merged:
                first_seen[key] = key_mark
            # A merged pair points into the anchored mapping; an explicit key written later overrides it.
            result[key] = self.build(value_node, path + (key,), key_mark)
        return result


def _problem_from_yaml_error(file: str, exc: yaml.YAMLError) -> Problem:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    message = f"YAML syntax error: {problem}" + (f" ({context})" if context else "")
    if mark is None:
        return Problem(file, None, None, message)
    return Problem(file, mark.line + 1, mark.column + 1, message)


def read_yaml(path: str | Path, *, text: str | None = None, name: str | None = None) -> YamlSource:
    """Parse one YAML document, collecting problems instead of raising.

    Args:
        path: the file to read (also the name problems carry, unless `name` is given).
        text: the file's contents, when the caller already has them.
        name: the file name to put in problems (for example a path relative to the project).

    Returns:
        A YamlSource; ``data`` is None for an empty file or one whose syntax is broken.
    """
    file = name if name is not None else str(path)
    locator = Locator(file)
    problems: list[Problem] = []
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            return YamlSource(None, locator, [Problem(file, None, None, f"cannot read the file: {exc}")])
    loader = yaml.SafeLoader(text)
    try:
        root = loader.get_single_node()
    except yaml.YAMLError as exc:
        return YamlSource(None, locator, [_problem_from_yaml_error(file, exc)])
    finally:
        loader.dispose()
    if root is None:
        locator.marks[()] = (1, 1)
        return YamlSource(None, locator, problems)
    data = _Builder(loader, locator, problems).build(root, ())
    locator.data = data
    return YamlSource(data, locator, problems)


def load_yaml(path: str | Path) -> tuple[Any, Locator]:
    """Parse one YAML file strictly: its data and Locator, or ``YamlError`` listing every problem.

    Raises:
        YamlError: on syntax errors, duplicate mapping keys, unknown tags or an unreadable file.
    """
    source = read_yaml(path)
    if source.problems:
        raise YamlError(source.problems)
    return source.data, source.locator


# --------------------------------------------------------------------------------------------------- pydantic


_UNION_BRANCH_PREFIXES = ("tuple[", "list[", "dict[", "str", "int", "float", "bool", "function-")


def _is_branch_tag(elem: str) -> bool:
    return elem.startswith(_UNION_BRANCH_PREFIXES)


@dataclass
class _Resolved:
    path: LocPath
    value: Any
    present: bool
    dropped: list[str]
    wrong_union: LocPath | None
    """Where this error left the union branch the input takes (a per-server mapping given a plain value...)."""
    unions: set[LocPath]
    """Union nodes this error passed through on the branch the input takes."""


def _resolve(loc: tuple[str | int, ...], data: Any, missing: bool) -> _Resolved:
    """Walk a pydantic `loc` along the data, dropping union tags that are not keys in it."""
    node, path, dropped, present = data, [], [], True
    wrong_union: LocPath | None = None
    unions: set[LocPath] = set()
    for i, elem in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, dict) and isinstance(elem, str) and node.get("type") == elem:
            dropped.append(str(elem))  # discriminated-union tag, e.g. "template" in (..., 0, "template", "area")
            continue
        if isinstance(node, dict) and elem in node:
            path.append(elem)
            node = node[elem]
            continue
        if isinstance(node, list) and isinstance(elem, int) and 0 <= elem < len(node):
            path.append(elem)
            node = node[elem]
            continue
        if isinstance(elem, str) and _is_branch_tag(elem):
            dropped.append(elem)
            # Per-server values are `Union[T, dict[str, T]]`: only the branch matching the input's shape matters.
            if elem.startswith("dict[") != isinstance(node, dict):
                wrong_union = wrong_union or tuple(path)
            else:
                unions.add(tuple(path))
            continue
        if last and missing and isinstance(elem, str):
            path.append(elem)
            present = False
            node = None
            continue
        if isinstance(elem, int):
            dropped.append(f"#{elem}")
            present = False
            continue
        dropped.append(str(elem))
    return _Resolved(tuple(path), node, present, dropped, wrong_union, unions)


def _show(value: Any) -> str:
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (dict, list)):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    if value is None:
        return "nothing"
    return repr(value)


def _shape_hint(dropped: list[str]) -> str | None:
    for tag in reversed(dropped):
        start = tag.rfind("tuple[")
        if start >= 0:
            inner = tag[start + len("tuple[") :].split("]", 1)[0]
            count = inner.count(",") + 1
            kind = "numbers" if "int" in inner or "float" in inner else "items"
            return f"a list of {count} {kind}"
    return None


def _union_kind(path: LocPath) -> str:
    keys = [p for p in path if isinstance(p, str)]
    last = keys[-1] if keys else ""
    if last in ("signatures", "of", "loading_signatures"):
        return "signature"
    if last in ("action", "dismiss"):
        return "action"
    return last or "value"


_EXPECTED = {
    **dict.fromkeys(("float_parsing", "float_type"), "a number"),
    **dict.fromkeys(("int_parsing", "int_type", "int_from_float"), "a whole number"),
    **dict.fromkeys(("bool_parsing", "bool_type"), "true or false"),
    "string_type": "text",
    **dict.fromkeys(("dict_type", "model_type", "model_attributes_type"), "a mapping of fields"),
}
"""pydantic error types whose message is just "expected <this>, got <the value>"."""

_COMPARISONS = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}
"""pydantic's bound-check error types and the operator each one failed."""


def _message(err: dict[str, Any], resolved: _Resolved) -> str:
    kind = err["type"]
    value = err.get("input")
    ctx = err.get("ctx") or {}
    field_name = resolved.path[-1] if resolved.path else None
    shape = _shape_hint(resolved.dropped)
    if kind == "extra_forbidden":
        return f"unknown field {field_name!r}"
    if kind == "missing":
        if resolved.dropped and resolved.dropped[-1].startswith("#"):
            return f"expected {shape or 'more items'}, got {_show(value)}"
        return f"missing field {field_name!r}"
    if kind == "union_tag_invalid":
        expected = str(ctx.get("expected_tags", "")).replace("'", "")
        return f"unknown {_union_kind(resolved.path)} type {ctx.get('tag')!r} (expected {expected})"
    if kind == "union_tag_not_found":
        return f"missing field 'type' of this {_union_kind(resolved.path)}"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {_show(value)}"
    if kind in ("list_type", "tuple_type"):
        return f"expected {shape or 'a list'}, got {_show(value)}"
    if kind == "string_pattern_mismatch":
        return f"{_show(value)} is not a valid name (letters, digits, '_', '.', '-'; not starting with a digit)"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected')}, got {_show(value)}"
    if kind in ("too_short", "too_long"):
        if shape:
            return f"expected {shape}, got {ctx.get('actual_length')}"
        bound = ctx.get("min_length") if kind == "too_short" else ctx.get("max_length")
        word = "at least" if kind == "too_short" else "at most"
        return f"needs {word} {bound} item(s), got {ctx.get('actual_length')}"
    if kind in _COMPARISONS:
        bound = next(iter(ctx.values()), "?")
        return f"must be {_COMPARISONS[kind]} {bound}, got {_show(value)}"
    if kind in ("value_error", "assertion_error"):
        msg = str(err.get("msg", ""))
        for prefix in ("Value error, ", "Assertion failed, "):
            if msg.startswith(prefix):
                msg = msg[len(prefix) :]
        return msg
    msg = str(err.get("msg", kind))
    return (msg[:1].lower() + msg[1:]) + (f", got {_show(value)}" if "input" in err else "")


def problems_from_validation_error(
    exc: pydantic.ValidationError,
    file: str,
    locator: Locator,
    *,
    base: LocPath = (),
    fields: Iterable[str] = (),
) -> list[Problem]:
    """Human Problems for a pydantic error, each pointing at the node its `loc` names.

    Args:
        exc: the error from ``Model.model_validate(data)``.
        file: the file name to report (usually ``locator.file``).
        locator: the Locator of the data that was validated.
        base: where the validated data sits in the file, when it was a sub-tree (``("pages", 3)``).
        fields: known field names, used to suggest a spelling for an unknown field.

    Returns:
        Problems in the order pydantic reported them, with union-branch duplicates removed.
    """
    data = locator.data
    for key in base:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            data = None
            break
    candidates: list[tuple[_Resolved, dict[str, Any]]] = []
    for err in exc.errors(include_url=False):
        resolved = _resolve(tuple(err["loc"]), data, missing=err["type"] == "missing")
        candidates.append((resolved, err))
    # Drop errors from the union branch the input does not take, unless that would leave a location with none.
    taken = set().union(*(r.unions for r, _ in candidates if r.wrong_union is None))
    chosen = [(r, e) for r, e in candidates if r.wrong_union is None or r.wrong_union not in taken]
    known = sorted(set(fields))
    problems: list[Problem] = []
    seen: set[tuple[LocPath, str]] = set()
    for resolved, err in chosen:
        message = _message(err, resolved)
        if err["type"] == "extra_forbidden" and known and resolved.path and isinstance(resolved.path[-1], str):
            close = closest(str(resolved.path[-1]), known, n=1)
            if close:
                message += f" (did you mean {close[0]!r}?)"
        if (resolved.path, message) in seen:
            continue
        seen.add((resolved.path, message))
        line, col = locator.locate(tuple(base) + resolved.path)
        problems.append(Problem(file, line, col, message))
    return problems
