"""Reading untrusted YAML under limits: bytes checked, nesting and alias expansion bounded, into plain data.

A configuration file may be hostile or just broken: a "billion laughs" file of nested aliases, 10,000 levels of
brackets, NUL bytes, a UTF-16 or Latin-1 file, a file of many megabytes. PyYAML's own loaders recurse per nesting
level and expand every alias, so this module drives the parser's event stream itself: it composes the node tree
iteratively with a depth bound, then builds plain data with a bound on what aliases (and ``<<`` merges) may add.
Every refusal is an ``Issue`` with a 1-based line and column, and refusing costs no more than the limit allows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from yaml.events import (
    AliasEvent,
    CollectionStartEvent,
    DocumentEndEvent,
    MappingEndEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

LocPath = tuple[str | int, ...]
"""A location in the data: mapping keys and sequence indexes from the document root."""

_YAML_TAG = "tag:yaml.org,2002:"
_MERGE_TAG = _YAML_TAG + "merge"
_COLLECTION_TAGS = {SequenceNode: _YAML_TAG + "seq", MappingNode: _YAML_TAG + "map"}
_SCALAR_TAGS = {_YAML_TAG + t for t in ("str", "int", "float", "bool", "null", "timestamp")}
_NON_PRINTABLE = re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_LIBYAML_WORDING = {"mapping values are not allowed in this context": "mapping values are not allowed here"}
"""libyaml's messages, reworded as PyYAML's pure-Python parser says them (one wording whichever parser runs)."""
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Limits:
    """What one file may cost: its size, its nesting depth, and the nodes its aliases may add when expanded."""

    max_bytes: int = 1 << 20
    max_depth: int = 64
    max_alias_nodes: int = 50_000


LIMITS = Limits()


class Issue(NamedTuple):
    line: int | None
    col: int | None
    message: str


@dataclass
class Parsed:
    """Plain data, where each node starts, the source of surprising plain scalars, and the issues found."""

    data: Any = None
    marks: dict[LocPath, tuple[int, int]] = field(default_factory=dict)
    raw: dict[LocPath, str] = field(default_factory=dict)
    """Unquoted scalars YAML did not read as text (``YES`` -> True, ``1.10`` -> 1.1), for "quote it" hints."""
    issues: list[Issue] = field(default_factory=list)


class _Abort(Exception):
    def __init__(self, issue: Issue) -> None:
        super().__init__(issue.message)
        self.issue = issue


def _size(n: int) -> str:
    return f"{n / (1 << 20):.1f} MB" if n >= 1 << 20 else f"{n / 1024:.0f} KB"


def _line_col(text: str | bytes, index: int) -> tuple[int, int]:
    newline = "\n" if isinstance(text, str) else b"\n"
    return text.count(newline, 0, index) + 1, index - (text.rfind(newline, 0, index) + 1) + 1


def read_text(path: Path, limits: Limits = LIMITS) -> tuple[str | None, Issue | None]:
    """The file's text, or why it cannot be YAML: too big, unreadable, NUL bytes, not UTF-8, control characters."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(limits.max_bytes + 1)
    except OSError as exc:
        return None, Issue(None, None, f"cannot read the file: {exc.strerror or exc}")
    if len(raw) > limits.max_bytes:
        total = path.stat().st_size
        return None, Issue(None, None, f"file is too large ({_size(total)}); the limit is {_size(limits.max_bytes)}")
    return decode(raw)


def decode(raw: bytes) -> tuple[str | None, Issue | None]:
    """UTF-8 text (a BOM is allowed) with no NUL or control characters, else the first bad byte's position."""
    nul = raw.find(b"\x00")
    if nul >= 0:
        hint = "; is it UTF-16? save it as UTF-8" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in raw[:4] else ""
        return None, Issue(*_line_col(raw, nul), f"NUL byte (0x00) in the file{hint}")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        message = f"not UTF-8: byte 0x{raw[exc.start]:02x} cannot be decoded; save the file as UTF-8"
        return None, Issue(*_line_col(raw, exc.start), message)
    return text, check_printable(text)


def check_printable(text: str) -> Issue | None:
    bad = _NON_PRINTABLE.search(text)
    if bad is None:
        return None
    return Issue(*_line_col(text, bad.start()), f"control character U+{ord(bad.group()):04X} is not allowed in YAML")


def _issue(exc: yaml.YAMLError, text: str) -> Issue:
    if isinstance(exc, yaml.reader.ReaderError):
        return Issue(*_line_col(text, exc.position), f"YAML syntax error: {exc.reason}")
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    problem = _LIBYAML_WORDING.get(problem, problem).replace("did not find expected", "expected")
    context = getattr(exc, "context", None)
    message = f"YAML syntax error: {problem}" + (f" ({context})" if context else "")
    return Issue(mark.line + 1, mark.column + 1, message) if mark is not None else Issue(None, None, message)


def _at(mark: Any, message: str) -> Issue:
    return Issue(mark.line + 1, mark.column + 1, message)


def _show_tag(tag: str) -> str:
    return "!!" + tag[len(_YAML_TAG) :] if tag.startswith(_YAML_TAG) else tag


def _unknown_tag(tag: str) -> str:
    return f"unknown YAML tag {_show_tag(tag)!r}: these files use plain YAML, remove the tag (or quote the value)"


class _Alias(Node):
    """A use of an anchor (``*name``): the anchored node, and where the alias is written."""

    id = "alias"


class _Composer:
    """The parser's events into a node tree, iteratively (no recursion), refusing nesting deeper than the limit."""

    def __init__(self, loader: Any, limits: Limits, issues: list[Issue]) -> None:
        self.loader, self.limits, self.issues = loader, limits, issues
        self.anchors: dict[str, Node] = {}
        self.count = 0

    def document(self) -> Node | None:
        loader = self.loader
        loader.get_event()  # stream start
        if loader.check_event(StreamEndEvent):
            return None
        loader.get_event()  # document start
        root = self._root()
        loader.get_event()  # document end
        if not loader.check_event(StreamEndEvent):
            raise _Abort(_at(loader.peek_event().start_mark, "expected a single document, but found another one"))
        return root

    def _root(self) -> Node | None:
        stack: list[Node] = []
        keys: list[Node | None] = []
        root: Node | None = None
        while not self.loader.check_event(DocumentEndEvent):
            event = self.loader.get_event()
            if isinstance(event, (SequenceEndEvent, MappingEndEvent)):
                stack.pop().end_mark = event.end_mark
                keys.pop()
                continue
            node = self._node(event, len(stack))
            if not stack:
                root = node
            elif isinstance(stack[-1], SequenceNode):
                stack[-1].value.append(node)
            elif keys[-1] is None:
                keys[-1] = node
            else:
                stack[-1].value.append((keys[-1], node))
                keys[-1] = None
            if isinstance(event, CollectionStartEvent):
                stack.append(node)
                keys.append(None)
        return root

    def _node(self, event: Any, depth: int) -> Node:
        if isinstance(event, AliasEvent):
            if event.anchor not in self.anchors:
                raise _Abort(_at(event.start_mark, f"unknown alias *{event.anchor} (no &{event.anchor} before it)"))
            return _Alias(None, self.anchors[event.anchor], event.start_mark, event.end_mark)
        self.count += 1
        if isinstance(event, ScalarEvent):
            tag = event.tag
            if tag in (None, "!"):
                tag = self.loader.resolve(ScalarNode, event.value, event.implicit)
            node: Node = ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
        else:
            if depth >= self.limits.max_depth:
                raise _Abort(_at(event.start_mark, f"nesting deeper than {self.limits.max_depth} levels"))
            kind = SequenceNode if isinstance(event, SequenceStartEvent) else MappingNode
            tag = event.tag
            if tag in (None, "!"):
                tag = self.loader.resolve(kind, None, event.implicit)
            if tag != _COLLECTION_TAGS[kind]:
                self.issues.append(_at(event.start_mark, _unknown_tag(tag)))
                tag = _COLLECTION_TAGS[kind]
            node = kind(tag, [], event.start_mark, None, flow_style=event.flow_style)
        if event.anchor is not None:
            self.anchors[event.anchor] = node
        return node


def _mark(node: Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


class _Builder:
    """A node tree into plain data, recording marks, duplicate keys and unknown tags; aliases expand under a bound."""

    def __init__(self, loader: Any, limits: Limits, composed: int, out: Parsed) -> None:
        self.loader, self.limits, self.out = loader, limits, out
        self.budget = composed + limits.max_alias_nodes
        self._active: set[int] = set()  # node ids on the current path, to stop recursive aliases
        self._alias: Any = None  # where the outermost alias being expanded is written

    def _expand(self, alias: _Alias, path: LocPath, depth: int, mark: tuple[int, int] | None) -> Any:
        outermost = self._alias is None
        self._alias = self._alias or alias.start_mark
        try:
            return self.build(alias.value, path, depth, mark or _mark(alias))
        finally:
            if outermost:
                self._alias = None

    def build(self, node: Node, path: LocPath, depth: int = 0, mark: tuple[int, int] | None = None) -> Any:
        if isinstance(node, _Alias):
            return self._expand(node, path, depth, mark)
        self.out.marks[path] = mark or _mark(node)
        self.budget -= 1
        if self.budget < 0:
            message = f'aliases expand to more than {self.limits.max_alias_nodes} extra nodes ("billion laughs"?)'
            raise _Abort(_at(self._alias or node.start_mark, message))
        if depth > self.limits.max_depth:
            message = f"nesting deeper than {self.limits.max_depth} levels once aliases are expanded"
            raise _Abort(_at(self._alias or node.start_mark, message))
        if isinstance(node, ScalarNode):
            return self._scalar(node, path)
        if id(node) in self._active:
            self.out.issues.append(Issue(*_mark(node), "recursive YAML alias (an anchor used inside itself)"))
            return None
        self._active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return [self.build(item, path + (i,), depth + 1) for i, item in enumerate(node.value)]
            return self._mapping(node, path, depth)
        finally:
            self._active.discard(id(node))

    def _scalar(self, node: ScalarNode, path: LocPath) -> Any:
        if node.tag not in _SCALAR_TAGS:
            self.out.issues.append(Issue(*_mark(node), _unknown_tag(node.tag)))
            return None
        try:
            value = self.loader.construct_object(node, deep=True)
        except yaml.MarkedYAMLError as exc:
            self.out.issues.append(_issue(exc, ""))
            return None
        if not node.style and not isinstance(value, str) and str(value) != node.value:  # libyaml says '' for plain
            self.out.raw[path] = node.value
        return value

    def _key(self, key_node: Node, path: LocPath, depth: int) -> tuple[bool, Any]:
        key_node = key_node.value if isinstance(key_node, _Alias) else key_node
        if isinstance(key_node, ScalarNode):
            key = self._scalar(key_node, path + ("<key>",))
        else:
            key = self.build(key_node, path + ("<key>",), depth + 1)
        try:
            hash(key)
        except TypeError:
            self.out.issues.append(Issue(*_mark(key_node), "a mapping key must be a plain value"))
            return False, None
        return True, key

    def _mapping(self, node: MappingNode, path: LocPath, depth: int) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                result.update(self._merged(value_node, path, depth))
        first_seen: dict[Any, tuple[int, int]] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                continue
            ok, key = self._key(key_node, path, depth)
            if not ok:
                continue
            key_mark = _mark(key_node)
            if key in first_seen:
                first = first_seen[key]
                self.out.issues.append(Issue(*key_mark, f"duplicate key {key!r} (first at line {first[0]}, col "
                                                        f"{first[1]})"))
                continue
            first_seen[key] = key_mark
            # An explicit key overrides one merged in with `<<: *anchor`.
            result[key] = self.build(value_node, path + (key,), depth + 1, key_mark)
        return result

    def _merged(self, value_node: Node, path: LocPath, depth: int) -> dict[Any, Any]:
        """`<<: *a` or `<<: [*a, *b]`: the merged mappings, earlier ones winning (as PyYAML merges)."""
        sources = value_node.value if isinstance(value_node, SequenceNode) else [value_node]
        merged: dict[Any, Any] = {}
        own = self.out.marks.get(path)
        for source in reversed(sources):
            if not isinstance(source.value if isinstance(source, _Alias) else source, MappingNode):
                self.out.issues.append(Issue(*_mark(source), "`<<` merges a mapping or a list of mappings"))
                continue
            built = self.build(source, path, depth + 1)
            merged.update(built if isinstance(built, dict) else {})
        if own is not None:
            self.out.marks[path] = own
        return merged


def parse(text: str, limits: Limits = LIMITS, loader: type | None = None) -> Parsed:
    """One YAML document as plain data with marks; never raises for bad YAML, the issues say what is wrong.

    ``loader`` is the parser: by default libyaml's when PyYAML has it, else PyYAML's own. libyaml refuses deep nesting
    by itself since PyYAML 6.0.4 (at 1000 levels, while scanning ahead, before the composer sees a 65th level); such a
    file is read again by the pure-Python parser, which the composer stops at ``limits.max_depth``, so deep nesting is
    refused with one sentence at one place whichever parser runs. That costs one more pass over at most ``max_bytes``.
    """
    loader = loader or _Loader
    out = _parse(text, limits, loader)
    if loader is not yaml.SafeLoader and any(issue.message == _PARSER_DEPTH for issue in out.issues):
        out = _parse(text, limits, yaml.SafeLoader)
    # A pure-Python parser with a limit of its own (none has one yet) is still refusing nesting: say it our way.
    deep = f"nesting deeper than {limits.max_depth} levels"
    out.issues = [Issue(i.line, i.col, deep) if i.message == _PARSER_DEPTH else i for i in out.issues]
    return out


_PARSER_DEPTH = "the parser's own nesting limit"
"""Marks the issue of a parser that refused deep nesting itself (see ``parse``); never shown to a user."""


def _refused_depth(exc: yaml.YAMLError) -> bool:
    """Whether the parser gave up on nesting depth (libyaml: "exceeded maximum nesting depth"), whatever the words."""
    words = f"{getattr(exc, 'problem', '')} {getattr(exc, 'context', '')}".lower()
    return any(word in words for word in ("deep", "depth", "nesting"))


def _parse(text: str, limits: Limits, loader_class: type) -> Parsed:
    out = Parsed()
    if len(text) > limits.max_bytes:
        out.issues.append(Issue(None, None, f"text is too large ({_size(len(text))}); the limit is "
                                            f"{_size(limits.max_bytes)}"))
        return out
    bad = check_printable(text)
    if bad is not None:
        out.issues.append(bad)
        return out
    loader = loader_class(text)
    try:
        composer = _Composer(loader, limits, out.issues)
        root = composer.document()
        if root is None:
            out.marks[()] = (1, 1)
            return out
        out.data = _Builder(loader, limits, composer.count, out).build(root, ())
    except _Abort as exc:
        out.data = None
        out.issues.append(exc.issue)
    except yaml.YAMLError as exc:
        out.data = None
        issue = _issue(exc, text)
        out.issues.append(issue._replace(message=_PARSER_DEPTH) if _refused_depth(exc) else issue)
    finally:
        loader.dispose()
    return out
