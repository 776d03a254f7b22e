"""The reference pages are generated from the code (scripts/docs_reference.py), and the code describes everything
they list: every command and option has help, every YAML field and MCP argument a description, every status word a
meaning. A new option or field without one fails here, with its name."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def reference(load_script):
    return load_script("docs_reference")


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
