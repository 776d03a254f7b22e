"""MkDocs hooks (mkdocs.yml `hooks:`): the reference pages are generated from the code at every build.

scripts/docs_reference.py writes them (CLI, YAML files, MCP tools, status words); they exist only in the built site,
never in docs/, so a change of a parser's help or a model's description shows at the next build and nothing
hand-written can drift from the code.

Each benchmark page ends with the figures of the last run of its benchmark on the machine that builds the site, read
from the JSON every run writes (benchmarks/results/<run>.json, benchmarks/conftest.py: the ``figures`` fixture's and
pytest-benchmark's ``extra_info``), else from the committed reference run (benchmarks/reference-run.json), never
copied by hand.
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
"""One whole run of the benchmarks (the CI forms) from a fresh clone, committed, so a site built anywhere shows
measured figures; a run on the building machine comes first (benchmarks/README.md: refreshing it). The README's
command writes two files (the benchmarks run beside the tests, then the timing ones alone): `reference-run*.json`
are all read."""
FIGURES_TITLE = "## Figures of the last run here"


def last_run_figures(test_file: str, results: Path = RESULTS, reference: Path = REFERENCE) -> str:
    """Markdown: the figures the newest run of `test_file` wrote (run, commit, machine, then one row a figure): a
    run on this machine (`results`), else the committed reference run."""
    runs = sorted(results.glob("*.json"), reverse=True) if results.is_dir() else []
    references = sorted(reference.parent.glob(f"{reference.stem}*.json"))  # the README's two pytest runs' files
    for path in runs + references:
        try:
            run = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        figures = _rows(run, f"benchmarks/{test_file}")
        if not figures:
            continue
        machine = run.get("machine") or {}
        load = machine.get("load_average_at_start")
        where = (f"the committed reference run `benchmarks/{path.name}` (a run here replaces it)" if path in references
                 else f"`benchmarks/results/{path.name}`")
        lines = [f"Run `{run.get('run', path.stem)}` (commit {run.get('commit')}, {machine.get('cpu')}, "
                 f"{machine.get('cores')} cores, load {load[0] if load else '?'} at its start), from {where}:", "",
                 "| test | figure | value | kind |", "|---|---|---:|---|"]
        for node, values in figures.items():
            test = node.split("::", 1)[1]
            for name, figure in values.items():
                value = figure.get("value")
                shown = (f"{value:.4g}" if isinstance(value, float) else str(value)).replace("|", "\\|")
                lines.append(f"| `{test}` | `{name}` | {shown} {figure.get('unit') or ''} | {figure.get('kind')} |")
        return "\n".join(lines)
    return (f"No run of `benchmarks/{test_file}` has written its figures on the machine that built this page, and "
            "the committed reference run has none: run the command at the top and build the site again.")


def _rows(run: dict, prefix: str) -> dict[str, dict[str, dict]]:
    """Each test's figures in `run` for the file `prefix`: the ``figures`` fixture's, then what a pytest-benchmark
    test recorded (its ``extra_info`` and its median time), as figure rows."""
    rows: dict[str, dict[str, dict]] = {}
    for node, values in (run.get("figures") or {}).items():
        if node.split("::")[0] == prefix and values:
            rows[node] = dict(values)
    for node, stats in (run.get("benchmarks") or {}).items():
        if node.split("::")[0] != prefix or not isinstance(stats, dict):
            continue
        into = rows.setdefault(node, {})
        for name, value in (stats.get("extra_info") or {}).items():
            parts = value.items() if isinstance(value, dict) else [(None, value)]  # one level of nesting unfolded
            for part, inner in parts:
                if isinstance(inner, (dict, list)):
                    inner = json.dumps(inner, separators=(", ", ": "), default=str)
                    inner = inner if len(inner) <= 90 else inner[:87] + "..."
                into.setdefault(f"{name}.{part}" if part else name, {"value": inner, "unit": "", "kind": "recorded"})
        if stats.get("median_ms") is not None:
            into.setdefault("median_ms", {"value": stats["median_ms"], "unit": "ms", "kind": "absolute"})
    return rows


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if not page.file.src_uri.startswith("benchmarks/") or FIGURES_TITLE in markdown:
        return markdown
    found = re.search(r"benchmarks/(test_\w+\.py)", markdown)
    if not found:
        return markdown
    return f"{markdown.rstrip()}\n\n{FIGURES_TITLE}\n\n{last_run_figures(found.group(1))}\n"
