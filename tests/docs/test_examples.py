"""Every shell and YAML example of the documentation (docs/**/*.md and README.md) is collected here and run.

Sybil finds the fenced blocks (```sh, ```yaml, ```json); each is one test:

- sh: every `python -m engine ...` line is parsed by the engine's own parser (a renamed command or option fails
  here), then the block's commands run against the built-in simulator, in one process per block (a simulator
  session costs 1-2 s; the interpreter's start is paid once), in a scratch folder where `pages`, `tests` and
  `policies` are the checkout's. A line's `# exit N` comment is the exit code it must end with (default 0).
- yaml: loaded by the engine's safe reader and validated by the pydantic model of the file it is part of (told by
  its keys: a graph file, tasks, goals, schedule, policies, devices, notifications).
- json: parsed.

A block that cannot run here says why, on the line before it: ``<!-- example: not run "a real emulator" -->``. Its
engine command lines are still parsed; the test is then skipped with that reason, so `-ra` lists every one.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
MARKER = re.compile(r'<!--\s*example:\s*not run\s+"([^"]+)"\s*-->\s*$')
ENGINE = ("python", "-m", "engine")
LINKED = ("pages", "tests", "policies")
"""What a scratch folder takes from the checkout (relative paths in the examples point into these)."""


def _collect() -> list[tuple[str, Example]]:
    sybil = Sybil(parsers=[CodeBlockParser(language=language) for language in ("sh", "yaml", "json")])
    found = []
    for path in DOCUMENTS:
        document = sybil.parse(path)
        for example in document.examples():
            found.append((f"{path.relative_to(ROOT)}:{example.line}", example))
    return found


EXAMPLES = _collect()


def _language(example: Example) -> str:
    return example.document.text[example.start:example.end].lstrip().removeprefix("```").split("\n", 1)[0].strip()


def _not_run_reason(example: Example) -> str | None:
    before = example.document.text[:example.start].rstrip()
    last = before.rsplit("\n", 1)[-1].strip()
    match = MARKER.search(last)
    return match.group(1) if match else None


# ------------------------------------------------------------------------------------------------------ sh


def _logical_lines(text: str) -> list[str]:
    """Lines with backslash continuations joined; blank and comment-only lines dropped."""
    lines, pending = [], ""
    for raw in text.splitlines():
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        line = pending + raw
        pending = ""
        if line.strip() and not line.lstrip().startswith("#"):
            lines.append(line)
    return lines


def _split_comment(line: str) -> tuple[str, str]:
    """(code, comment) of a shell line: a `#` after whitespace and outside quotes starts the comment."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i], line[i + 1:]
    return line, ""


def _commands(text: str) -> list[dict[str, Any]]:
    """Each simple command of a block: its words, the file its stdout is sent to, its expected exit code and
    whether it runs in the background or feeds a pipe (then it is not run as written)."""
    commands = []
    for line in _logical_lines(text):
        code, comment = _split_comment(line)
        code = re.sub(r"<([\w.-]+)>", r"\1", code)  # a placeholder such as episodes/<id> is one word
        expected = int(m.group(1)) if (m := re.search(r"\bexit (\d+)\b", comment)) else 0
        try:
            lexer = shlex.shlex(code, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            lexer.commenters = ""
            tokens = list(lexer)
        except ValueError:  # not shell we can read (a heredoc's body): only a not-run block may hold it
            commands.append({"words": [code.strip()], "unreadable": True})
            continue
        current: list[str] = []
        parts: list[tuple[list[str], str]] = []
        for token in tokens:
            if token in ("&&", ";", "||", "&", "|"):
                parts.append((current, token))
                current = []
            else:
                current.append(token)
        parts.append((current, ""))
        for words, separator in parts:
            if not words:
                continue
            stdout = None
            if ">" in words[:-1]:
                at = words.index(">")
                stdout, words = words[at + 1], words[:at]
            commands.append({"words": words, "stdout": stdout, "expected": expected,
                             "background": separator in ("&", "|")})
    return commands


def _engine_argv(words: list[str]) -> list[str] | None:
    """The arguments after `python -m engine` (or `alas-engine`), None for any other command."""
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):  # VAR=value before the command
        words = words[1:]
    if tuple(words[:3]) == ENGINE:
        return words[3:]
    if words[:1] == ["alas-engine"]:
        return words[1:]
    return None


def _parse(argv: list[str]) -> None:
    """The engine's own parser accepts `argv` (nothing runs); its one-line error fails the example."""
    from engine.__main__ import build_parser

    try:
        build_parser().parse_args(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):
            pytest.fail(f"`python -m engine {shlex.join(argv)}` does not parse (exit {exc.code}); see stderr")


DRIVER = textwrap.dedent("""
    import contextlib, json, sys
    from engine.__main__ import main
    results = []
    for argv, stdout in json.loads(sys.argv[1]):
        with contextlib.ExitStack() as stack:
            if stdout:
                stack.enter_context(contextlib.redirect_stdout(stack.enter_context(open(stdout, "w"))))
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
        results.append(code)
        sys.stdout.flush()
    print("EXAMPLE-EXIT-CODES " + json.dumps(results))
""")


def _run_sh(example: Example, scratch: Path) -> None:
    commands = _commands(example.parsed)
    runs = []
    for command in commands:
        argv = _engine_argv(command["words"])
        if argv is not None:
            _parse(argv)
            runs.append((argv, command))
    reason = _not_run_reason(example)
    if reason:
        pytest.skip(f"not run: {reason} (its engine command lines parse)")
    others = [" ".join(c["words"]) for c in commands if _engine_argv(c["words"]) is None or c.get("background")]
    assert not others, (f"commands this test cannot run as written: {others}; mark the block "
                        '<!-- example: not run "why" --> on the line before it')
    for name in LINKED:
        if not (scratch / name).exists():
            (scratch / name).symlink_to(ROOT / name)
    payload = json.dumps([(argv, command["stdout"]) for argv, command in runs])
    done = subprocess.run([sys.executable, "-c", DRIVER, payload], cwd=scratch, capture_output=True, text=True,
                          timeout=120, env=_environment(scratch))
    marker = [line for line in done.stdout.splitlines() if line.startswith("EXAMPLE-EXIT-CODES ")]
    assert marker, f"the example's commands did not finish:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    codes = json.loads(marker[-1].split(" ", 1)[1])
    wanted = [command["expected"] for _, command in runs]
    assert codes == wanted, (f"exit codes {codes}, the example says {wanted}, for "
                             f"{[shlex.join(argv) for argv, _ in runs]}:\n{done.stderr[-3000:]}")


def _environment(scratch: Path) -> dict[str, str]:
    import os

    env = dict(os.environ)
    env["ENGINE_HOME"] = str(scratch / "engine-home")  # nothing of the user's home is read or written
    env["ENGINE_SERIAL"] = "sim"  # the built-in simulator, never a device another test's simulator looks like
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    for name in ("ENGINE_GRAPH", "ENGINE_ASSETS", "ENGINE_SCENARIO", "ENGINE_TRANSCRIPT_DIR", "ENGINE_SERVER"):
        env.pop(name, None)
    return env


# ------------------------------------------------------------------------------------------------------ yaml


def _yaml_model(data: dict[str, Any]) -> tuple[str, Any]:
    """The file model a YAML example belongs to, told by its top-level keys."""
    from engine.config.devicefile import DevicesFile
    from engine.config.goals import GoalFile
    from engine.config.policies import PolicyFile
    from engine.config.schedule import ScheduleFile
    from engine.config.schema import GraphFile
    from engine.config.tasks import TaskFile
    from engine.schedule.notify import NotifyFile

    keys = set(data)
    if keys <= {"policies", "learning"}:
        return "policies", PolicyFile
    if "devices" in keys:
        return "devices", DevicesFile
    if "channels" in keys:
        return "notifications", NotifyFile
    if keys & {"resets", "start_task", "retry"}:
        return "schedule", ScheduleFile
    if "goals" in keys:
        return "goals", GoalFile
    if "tasks" in keys:
        return "tasks", TaskFile
    return "graph", GraphFile


def _check_yaml(example: Example) -> None:
    from pydantic import TypeAdapter

    from engine.config.schema import Signature
    from engine.config.yamlsafe import parse

    reason = _not_run_reason(example)
    if reason:
        pytest.skip(f"not checked: {reason}")
    parsed = parse(str(example.parsed))  # Sybil's Lexeme is a str subclass libyaml refuses
    assert not parsed.issues, [f"{i.line}:{i.col}: {i.message}" for i in parsed.issues]
    data = parsed.data
    assert isinstance(data, dict), "a YAML example is a file's mapping"
    signatures = data.pop("signatures", None)  # the studio's snippet: a signature to paste into a page or popup
    if signatures is not None:
        TypeAdapter(list[Signature]).validate_python(signatures)
    _, model = _yaml_model(data)
    model.model_validate(data)


# ------------------------------------------------------------------------------------------------------ the test


@pytest.mark.parametrize("where, example", EXAMPLES, ids=[where for where, _ in EXAMPLES])
def test_example(where: str, example: Example, tmp_path: Path) -> None:
    language = _language(example)
    if language == "sh":
        _run_sh(example, tmp_path)
    elif language == "yaml":
        _check_yaml(example)
    else:
        json.loads(example.parsed)


def test_examples_are_collected_from_every_page_that_has_them():
    """A guard against a collector that silently finds nothing (a parser change, a moved docs folder)."""
    pages = {where.rsplit(":", 1)[0] for where, _ in EXAMPLES}
    assert {"README.md", "docs/getting-started.md", "docs/graph/yaml.md", "docs/guide/schedule.md"} <= pages
    assert len(EXAMPLES) >= 30
