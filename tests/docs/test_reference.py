"""The reference pages are generated from the code (scripts/docs_reference.py), and the code describes everything
they list: every command and option has help, every YAML field and MCP argument a description, every status word a
meaning. A new option or field without one fails here, with its name."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def reference():
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "scripts" / "docs_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_command_and_option_has_help(reference):
    assert reference.missing_cli_help() == []


def test_every_yaml_field_has_a_description(reference):
    assert reference.missing_yaml_descriptions() == []


def test_every_mcp_argument_has_a_description(reference):
    assert reference.missing_mcp_descriptions() == []


def test_every_status_word_has_a_meaning(reference):
    assert reference.missing_status_meanings() == []


def test_the_pages_list_every_command_tool_and_file(reference):
    from engine.runtime.toolspecs import SPECS

    cli = reference.cli_page()
    for words, _, _ in reference.cli_commands():
        assert f"## `{' '.join(words) or 'python -m engine'}`" in cli
    mcp = reference.mcp_page()
    assert all(f"`{name}`" in mcp for name in SPECS)
    yaml = reference.yaml_page()
    assert all(f"## {title}" in yaml for title, *_ in reference.yaml_schemas())
