"""MkDocs hooks (mkdocs.yml `hooks:`): the reference pages are generated from the code at every build.

scripts/docs_reference.py writes them (CLI, YAML files, MCP tools, status words); they exist only in the built site,
never in docs/, so a change of a parser's help or a model's description shows at the next build and nothing
hand-written can drift from the code.

Each benchmark page ends with the figures of the last run of its benchmark on the machine that builds the site, read
from the JSON every run writes (benchmarks/results/<run>.json, benchmarks/conftest.py), never copied by hand.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.docs")

HERE = Path(__file__).resolve().parent

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
    return files


RESULTS = Path(os.environ.get("BENCH_RESULTS_DIR") or HERE.parent / "benchmarks" / "results")
REFERENCE = HERE.parent / "benchmarks" / "reference-run.json"
"""One whole run of `python -m pytest benchmarks` (the CI forms) from a fresh clone, committed, so a site built
anywhere shows measured figures; a run on the building machine comes first (benchmarks/README.md: refreshing it)."""
FIGURES_TITLE = "## Figures of the last run here"


def last_run_figures(test_file: str, results: Path = RESULTS, reference: Path = REFERENCE) -> str:
    """Markdown: the figures the newest run of `test_file` wrote (run, commit, machine, then one row a figure): a
    run on this machine (`results`), else the committed reference run."""
    runs = sorted(results.glob("*.json"), reverse=True) if results.is_dir() else []
    for path in runs + ([reference] if reference.is_file() else []):
        try:
            run = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        figures = {node: values for node, values in (run.get("figures") or {}).items()
                   if node.split("::")[0] == f"benchmarks/{test_file}" and values}
        if not figures:
            continue
        machine = run.get("machine") or {}
        load = machine.get("load_average_at_start")
        where = (f"the committed reference run `benchmarks/{path.name}` (a run here replaces it)" if path == reference
                 else f"`benchmarks/results/{path.name}`")
        lines = [f"Run `{run.get('run', path.stem)}` (commit {run.get('commit')}, {machine.get('cpu')}, "
                 f"{machine.get('cores')} cores, load {load[0] if load else '?'} at its start), from {where}:", "",
                 "| test | figure | value | kind |", "|---|---|---:|---|"]
        for node, values in figures.items():
            test = node.split("::", 1)[1]
            for name, figure in values.items():
                value = figure.get("value")
                shown = f"{value:.4g}" if isinstance(value, float) else str(value)
                lines.append(f"| `{test}` | `{name}` | {shown} {figure.get('unit') or ''} | {figure.get('kind')} |")
        return "\n".join(lines)
    return (f"No run of `benchmarks/{test_file}` has written its figures on the machine that built this page, and "
            "the committed reference run has none: run the command at the top and build the site again.")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if not page.file.src_uri.startswith("benchmarks/") or FIGURES_TITLE in markdown:
        return markdown
    found = re.search(r"benchmarks/(test_\w+\.py)", markdown)
    if not found:
        return markdown
    return f"{markdown.rstrip()}\n\n{FIGURES_TITLE}\n\n{last_run_figures(found.group(1))}\n"
