"""MkDocs hooks (mkdocs.yml `hooks:`): the reference pages are generated from the code at every build.

scripts/docs_reference.py writes them (CLI, YAML files, MCP tools, status words); they exist only in the built site,
never in docs/, so a change of a parser's help or a model's description shows at the next build and nothing
hand-written can drift from the code. docs/guide/capture.md and docs/benchmarks/capture.md belong to the capture
work: while they do not exist, a page saying so stands in for each, so the nav stays whole.
"""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.docs")

HERE = Path(__file__).resolve().parent

PLACEHOLDERS = {
    "guide/capture.md": "# Capture methods\n\nHow the engine takes screenshots from your emulator, and which method "
                        "it picks, is being written with the capture work; until then see "
                        "[Connect your emulator](connect.md).\n",
    "benchmarks/capture.md": "# Capture methods\n\nThe capture benchmark's page is being written with the capture "
                             "work; until then the screenshot figures are on [Devices](devices.md).\n",
}


def _reference() -> Any:
    spec = importlib.util.spec_from_file_location("docs_reference", HERE / "docs_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_files(files: Files, config: Any) -> Files:
    reference = _reference()
    for path, make in reference.PAGES.items():
        files.append(File.generated(config, path, content=make()))
    for path, text in PLACEHOLDERS.items():
        if files.get_file_from_path(path) is None:
            files.append(File.generated(config, path, content=text))
    return files
