"""MkDocs hooks (mkdocs.yml `hooks:`): the reference pages are generated from the code at every build.

scripts/docs_reference.py writes them (CLI, YAML files, MCP tools, status words); they exist only in the built site,
never in docs/, so a change of a parser's help or a model's description shows at the next build and nothing
hand-written can drift from the code.

Each benchmark page's claims (scripts/docs_claims.py: a marker per claim) become tables, and the page ends with
every figure of the last run of its benchmark, read from the JSON every run writes (benchmarks/results/<run>.json,
benchmarks/conftest.py: the ``figures`` fixture's and pytest-benchmark's ``extra_info``) on the machine that builds
the site, else from the committed reference runs (benchmarks/reference-run*.json), never copied by hand.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.docs")

HERE = Path(__file__).resolve().parent

def _script(name: str) -> Any:
    """A module of scripts/ loaded by path (MkDocs loads this hook file alone, not as a package)."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


claims = _script("docs_claims")


def on_files(files: Files, config: Any) -> Files:
    reference = _script("docs_reference")
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


def runs(results: Path = RESULTS, reference: Path = REFERENCE) -> Iterator[tuple[Path, dict, bool]]:
    """Every readable run, newest first: those of this machine (`results`), then the committed reference runs
    (path, run, whether it is a reference run)."""
    mine = sorted(results.glob("*.json"), reverse=True) if results.is_dir() else []
    references = sorted(reference.parent.glob(f"{reference.stem}*.json"))  # every reference-run*.json
    for path in mine + references:
        try:
            yield path, json.loads(path.read_text()), path in references
        except (OSError, ValueError):
            continue


def describe(path: Path, run: dict, is_reference: bool) -> str:
    """The run a table's figures came from: its name, commit, machine and load, and its file."""
    machine = run.get("machine") or {}
    load = machine.get("load_average_at_start")
    where = (f"the committed reference run `benchmarks/{path.name}` (a run here replaces it)" if is_reference
             else f"`benchmarks/results/{path.name}`")
    return (f"Run `{run.get('run', path.stem)}` (commit {run.get('commit')}, {machine.get('cpu')}, "
            f"{machine.get('cores')} cores, load {load[0] if load else '?'} at its start), from {where}")


def newest_rows(test_file: str, results: Path = RESULTS, reference: Path = REFERENCE,
                wanted: Callable[[dict], bool] = bool) -> tuple[str, dict[str, dict[str, dict]]] | None:
    """The newest run's figures for `test_file` (those `wanted` accepts), with the sentence naming that run."""
    for path, run, is_reference in runs(results, reference):
        rows = run_rows(run, f"benchmarks/{test_file}")
        if rows and wanted(rows):
            return describe(path, run, is_reference), rows
    return None


def last_run_figures(test_file: str, results: Path = RESULTS, reference: Path = REFERENCE) -> str:
    """Markdown: the figures the newest run of `test_file` wrote (run, commit, machine, then one row a figure): a
    run on this machine (`results`), else the committed reference run."""
    found = newest_rows(test_file, results, reference)
    if found is None:
        return (f"No run of `benchmarks/{test_file}` has written its figures on the machine that built this page, "
                "and the committed reference run has none: run the command at the top and build the site again.")
    source, figures = found
    lines = [f"{source}:", "", "| test | figure | value | kind |", "|---|---|---:|---|"]
    for node, values in figures.items():
        test = node.split("::", 1)[1]
        for name, figure in values.items():
            value = f"{claims.shown(figure.get('value'))} {figure.get('unit') or ''}".strip()
            lines.append(f"| `{test}` | `{name}` | {value} | {figure.get('kind')} |")
    return "\n".join(lines)


def run_rows(run: dict, prefix: str) -> dict[str, dict[str, dict]]:
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
            parts = value.items() if isinstance(value, dict) and value else [(None, value)]  # one level unfolded
            for part, inner in parts:
                if isinstance(inner, (dict, list)):
                    inner = json.dumps(inner, separators=(", ", ": "), default=str)
                    inner = inner if len(inner) <= 90 else inner[:87] + "..."
                into.setdefault(f"{name}.{part}" if part else name, {"value": inner, "unit": "", "kind": "recorded"})
        if stats.get("median_ms") is not None:
            into.setdefault("median_ms", {"value": stats["median_ms"], "unit": "ms", "kind": "absolute"})
    return rows


def newest_for(claim: Any) -> tuple[str, dict[str, dict[str, dict]]] | None:
    """The newest run that has the claim's test (docs_claims.expand)."""
    return newest_rows(claim.file, wanted=lambda rows: bool(claim.nodes(rows)))


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    if not page.file.src_uri.startswith("benchmarks/"):
        return markdown
    folder = Path(page.file.abs_src_path).parent

    def title(name: str) -> str:
        first = (folder / name).read_text().split("\n", 1)[0] if (folder / name).is_file() else name
        return first.lstrip("# ").strip()

    markdown = claims.expand(markdown, newest_for, title)
    found = re.search(r"benchmarks/(test_\w+\.py)", markdown)
    if not found or FIGURES_TITLE in markdown:
        return markdown
    return f"{markdown.rstrip()}\n\n{FIGURES_TITLE}\n\n{last_run_figures(found.group(1))}\n"
