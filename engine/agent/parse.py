"""Turn a model's answer into exactly one action, or say precisely why it cannot be used.

An answer is used only when it is exactly one function call to a declared tool whose arguments fit that tool's
JSON Schema. A model that answers in text may still give the call as JSON (``{"name": ..., "arguments": {...}}``);
anything else (prose, invalid JSON, two calls, an invented tool, a missing or mistyped argument) is an ``error``
action whose text goes back to the model as a parser-error percept. Nothing is executed on a guess.

The argument check covers the subset of JSON Schema the declarations use: object, required, properties,
additionalProperties false, type (integer, number, string, boolean, array, object, or a list of them), enum and
minItems.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.agent.models import Call, ModelTurn, ToolDecl
from engine.core.results import did_you_mean

MAX_RAW_CHARS = 300

_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,), "number": (int, float), "string": (str,), "boolean": (bool,), "array": (list,),
    "object": (dict,),
}


@dataclass(frozen=True)
class Action:
    """What the loop does with one answer.

    Attributes:
        kind: ``tool``, ``final``, ``blocked`` or ``error``.
        name: the tool called (empty for an error).
        arguments: its arguments.
        error: why the answer is unusable (``error`` only).
        raw: the start of the answer, for the transcript.
    """

    kind: str
    name: str = ""
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str = ""
    raw: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "error":
            out["error"] = self.error
        else:
            out.update(name=self.name, arguments=self.arguments)
        return out


def parse_turn(turn: ModelTurn, decls: Mapping[str, ToolDecl], *, final: str = "final",
               blocked: str = "blocked") -> Action:
    """The one action `turn` asks for, checked against `decls` (by name)."""
    calls = list(turn.calls)
    raw = _raw(turn)
    if not calls:
        call = _call_from_text(turn.text)
        if isinstance(call, str):
            return Action("error", error=call, raw=raw)
        calls = [call]
    if len(calls) > 1:
        names = ", ".join(c.name for c in calls)
        return Action("error", error=f"one function call per turn, got {len(calls)} ({names}); none was run",
                      raw=raw)
    call = calls[0]
    decl = decls.get(call.name)
    if decl is None:
        hint, _ = did_you_mean(call.name, decls)
        return Action("error", error=f"unknown tool {call.name!r}{hint or '; tools: ' + ', '.join(decls)}", raw=raw)
    problems = check_arguments(decl.parameters, call.arguments)
    if problems:
        return Action("error", error=f"{call.name}: " + "; ".join(problems), raw=raw)
    kind = "final" if call.name == final else "blocked" if call.name == blocked else "tool"
    return Action(kind, call.name, dict(call.arguments), raw=raw)


def check_arguments(schema: Mapping[str, Any], arguments: Any, where: str = "arguments") -> list[str]:
    """What is wrong with `arguments` under `schema` (empty when nothing is)."""
    wanted = schema.get("type")
    if wanted is not None and not _is_type(arguments, wanted):
        return [f"{where} must be {_type_words(wanted)}, got {_json_type(arguments)}"]
    if "enum" in schema and arguments not in schema["enum"]:
        hint, _ = did_you_mean(str(arguments), [str(v) for v in schema["enum"]])
        return [f"{where} {arguments!r} is not one of the allowed values{hint}"]
    problems: list[str] = []
    if isinstance(arguments, dict):
        properties = schema.get("properties", {})
        problems += [f"missing {where}.{key}" for key in schema.get("required", []) if key not in arguments]
        if schema.get("additionalProperties") is False:
            extra = sorted(set(arguments) - set(properties))
            problems += [f"unexpected {where}.{key}" for key in extra]
        for key, value in arguments.items():
            if key in properties:
                problems += check_arguments(properties[key], value, f"{where}.{key}")
    if isinstance(arguments, list):
        if len(arguments) < schema.get("minItems", 0):
            problems.append(f"{where} needs at least {schema['minItems']} item(s)")
        for i, item in enumerate(arguments):
            problems += check_arguments(schema.get("items", {}), item, f"{where}[{i}]")
    return problems


def _is_type(value: Any, wanted: str | list[str]) -> bool:
    for name in [wanted] if isinstance(wanted, str) else wanted:
        if isinstance(value, bool) and name in ("integer", "number"):
            continue
        if name == "integer" and isinstance(value, float) and value.is_integer():
            return True
        if isinstance(value, _TYPES.get(name, ())):
            return True
    return False


def _type_words(wanted: str | list[str]) -> str:
    return " or ".join([wanted] if isinstance(wanted, str) else wanted)


def _json_type(value: Any) -> str:
    for name in ("boolean", "integer", "number", "string", "array", "object"):
        if _is_type(value, name) and not (name == "integer" and isinstance(value, float)):
            return name
    return "null" if value is None else type(value).__name__


def _call_from_text(text: str | None) -> Call | str:
    """A call written as JSON text (some models do), or why the text is not one."""
    if text is None or not text.strip():
        return "no function call and no text: call exactly one tool"
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        return f"not a function call and not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return 'JSON text must be one call: {"name": TOOL, "arguments": {...}}'
    arguments = data.get("arguments", data.get("args", {}))
    if not isinstance(arguments, dict):
        return f"the arguments of {data['name']!r} are not an object"
    return Call(data["name"], arguments)


def _raw(turn: ModelTurn) -> str:
    if turn.calls:
        text = json.dumps([c.to_dict() for c in turn.calls], ensure_ascii=False, default=str)
    else:
        text = turn.text or ""
    return text[:MAX_RAW_CHARS]
