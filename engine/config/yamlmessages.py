"""Pydantic validation errors as human problems: at the offending key, naming the field, with a fix hint.

``problems_from_validation_error`` walks each error's ``loc`` along the data that was validated (dropping the union
tags pydantic adds), picks the line of the key at fault from the file's ``yamlsrc.Locator``, and words the message
for a person editing YAML: ``unknown field 'color' (did you mean 'rgb'?)``, ``expected text, got True (YAML reads
the unquoted YES as true; quote it: "YES")``, ``rgb[0]: must be <= 255, got 300 (colour channels are 0..255)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin

import pydantic
from pydantic import BaseModel

from engine.config.yamlsrc import Locator, LocPath, Problem
from engine.core.results import closest

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
    tagged: int | None = None
    for i, elem in enumerate(loc):
        last = i == len(loc) - 1
        if isinstance(node, dict) and isinstance(elem, str) and node.get("type") == elem and id(node) != tagged:
            # Discriminated-union tag, e.g. "template" in (..., 0, "template", "area"); only once per node, so a
            # field named like the tag (`color` in a color signature) is still a field.
            dropped.append(str(elem))
            tagged = id(node)
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
    if last in ("steps", "do"):
        return "step"
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


_HINTS = {"rgb": "colour channels are 0..255", "color": "colour channels are 0..255"}
"""Fix hints for out-of-range values, by field name."""

_SYNONYMS = {"color": "rgb", "colour": "rgb", "rgb": "color", "region": "area", "box": "area", "image": "asset",
             "template": "asset", "target": "to", "goto": "to", "retries": "attempts", "tries": "attempts"}
"""Field names people write for another field, offered when spelling alone suggests nothing."""


def _field_words(path: LocPath) -> tuple[list[str], str]:
    """The keys naming the field an error is about and the indexes below them: (["color", "cn"], "[0]")."""
    indexes, words = "", []
    for part in reversed(path):
        if isinstance(part, int):
            if words:
                break
            indexes = f"[{part}]" + indexes
        else:
            words.insert(0, part)
    return words, indexes


def _label(path: LocPath) -> str:
    """The field an error is about, with the indexes below it: ``color.cn[0]``, ``timeout``."""
    words, indexes = _field_words(path)
    return ".".join(map(str, words or ["value"])) + indexes


def _field_of(path: LocPath) -> str | None:
    words, _ = _field_words(path)
    return str(words[0]) if words else None


def _quote_hint(value: Any, raw: str | None) -> str:
    """Why an unquoted scalar is not text (YAML 1.1 reads YES as true, ~ as null), and how to make it text."""
    if isinstance(value, str) or (value is None and not raw):
        return ""
    source = raw if raw is not None else str(value)
    if isinstance(value, bool):
        read_as = "true" if value else "false"
    else:
        read_as = "nothing (null)" if value is None else _show(value)
    return f' (YAML reads the unquoted {source} as {read_as}; quote it: "{source}")'


def _message(err: dict[str, Any], resolved: _Resolved, raw: str | None = None) -> str:
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
    if kind == "string_type":
        return f"expected text, got {_show(value)}{_quote_hint(value, raw)}"
    if kind in _EXPECTED:
        return f"expected {_EXPECTED[kind]}, got {_show(value)}"
    if kind in ("list_type", "tuple_type"):
        return f"expected {shape or 'a list'}, got {_show(value)}"
    return _value_message(kind, value, ctx, resolved, shape) or _pydantic_message(err)


def _value_message(kind: str, value: Any, ctx: dict[str, Any], resolved: _Resolved, shape: str | None) -> str | None:
    """Messages about a value of the right type that is still wrong (a bad name, out of range, too many items)."""
    if kind == "string_pattern_mismatch":
        return f"{_show(value)} is not a valid name (letters, digits, '_', '.', '-'; not starting with a digit)"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected')}, got {_show(value)}"
    if kind == "finite_number":
        return f"{_label(resolved.path)}: expected a finite number, got {_show(value)}"
    if kind in ("too_short", "too_long"):
        if shape:
            return f"expected {shape}, got {ctx.get('actual_length')}"
        bound = ctx.get("min_length") if kind == "too_short" else ctx.get("max_length")
        word = "at least" if kind == "too_short" else "at most"
        return f"needs {word} {bound} item(s), got {ctx.get('actual_length')}"
    if kind in _COMPARISONS:
        bound = next(iter(ctx.values()), "?")
        bound = f"{bound:g}" if isinstance(bound, float) else bound
        hint = _HINTS.get(_field_of(resolved.path) or "")
        return f"{_label(resolved.path)}: must be {_COMPARISONS[kind]} {bound}, got {_show(value)}" + (
            f" ({hint})" if hint else ""
        )
    return None


def _pydantic_message(err: dict[str, Any]) -> str:
    msg = str(err.get("msg", err["type"]))
    if err["type"] in ("value_error", "assertion_error"):
        for prefix in ("Value error, ", "Assertion failed, "):
            msg = msg.removeprefix(prefix)
        return msg
    return (msg[:1].lower() + msg[1:]) + (f", got {_show(err['input'])}" if "input" in err else "")


# --------------------------------------------------------------------------------------------------- suggestions


def _unwrap(tp: Any) -> Any:
    """`tp` without Annotated and without an optional None."""
    while True:
        if get_origin(tp) is Annotated:
            tp = get_args(tp)[0]
            continue
        args = [a for a in get_args(tp) if a is not type(None)] if get_origin(tp) is Union else None
        if args is not None and len(args) == 1:
            tp = args[0]
            continue
        return tp


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _step(tp: Any, elem: str | int) -> Any:
    """The type one pydantic `loc` element leads to from `tp` (None when it leads nowhere we can follow)."""
    tp = _unwrap(tp)
    if _is_model(tp):
        info = tp.model_fields.get(elem) if isinstance(elem, str) else None
        return info.annotation if info is not None else None
    origin, args = get_origin(tp), get_args(tp)
    if origin in (list, tuple) and isinstance(elem, int) and args:
        return args[0] if origin is list or args[-1] is Ellipsis else args[min(elem, len(args) - 1)]
    if origin is dict and isinstance(elem, str) and len(args) == 2:
        return args[1]
    if origin is Union:
        for arg in map(_unwrap, args):
            tag = arg.model_fields.get("type") if _is_model(arg) else None
            if tag is not None and elem in get_args(tag.annotation):
                return arg  # the discriminated branch
        return tp if isinstance(elem, str) and _is_branch_tag(elem) else None
    return None


def _fields_at(model: type[BaseModel], loc: tuple[str | int, ...]) -> list[str]:
    """Field names of the model an unknown key at `loc` sits in."""
    tp: Any = model
    for elem in loc[:-1]:
        tp = _step(tp, elem)
        if tp is None:
            return []
    tp = _unwrap(tp)
    return sorted(tp.model_fields) if _is_model(tp) else []


def _suggestion(name: str, known: list[str]) -> str:
    other = _SYNONYMS.get(name.lower())
    close = [other] if other in known else closest(name, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def problems_from_validation_error(
    exc: pydantic.ValidationError,
    file: str,
    locator: Locator,
    *,
    base: LocPath = (),
    fields: Iterable[str] = (),
    model: type[BaseModel] | None = None,
) -> list[Problem]:
    """Human Problems for a pydantic error, each pointing at the node its `loc` names.

    Args:
        exc: the error from ``Model.model_validate(data)``.
        file: the file name to report (usually ``locator.file``).
        locator: the Locator of the data that was validated.
        base: where the validated data sits in the file, when it was a sub-tree (``("pages", 3)``).
        fields: known field names, used to suggest a spelling for an unknown field.
        model: the model that was validated: an unknown field is then compared with the fields of the model it
            sits in (which beats `fields`).

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
        message = _message(err, resolved, locator.raw.get(tuple(base) + resolved.path))
        if err["type"] == "extra_forbidden" and resolved.path and isinstance(resolved.path[-1], str):
            here = _fields_at(model, tuple(err["loc"])) if model is not None else []
            message += _suggestion(str(resolved.path[-1]), here or known)
        if (resolved.path, message) in seen:
            continue
        seen.add((resolved.path, message))
        line, col = locator.locate(tuple(base) + resolved.path)
        problems.append(Problem(file, line, col, message))
    return problems
