"""The documentation site builds in strict mode (no broken link or anchor, no page outside the nav), fetches
nothing from the internet, and the README stays a landing whose test command is the one CI runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_the_site_builds_in_strict_mode_and_loads_nothing_from_the_internet(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's notice about its end of life, not a warning
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-f",
                           str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-4000:]
    pages = list((tmp_path / "site").rglob("*.html"))
    assert len(pages) > 40
    for reference in ("reference/cli", "reference/yaml", "reference/mcp", "reference/statuses"):
        assert (tmp_path / "site" / reference / "index.html").exists(), reference
    remote = re.compile(r'<(?:script|link|img)[^>]+(?:src|href)="(?:https?:)?//', re.I)
    fetched = {str(p.relative_to(tmp_path)) for p in pages if remote.search(p.read_text(errors="replace"))}
    assert fetched == set(), f"pages that would load something from the internet: {sorted(fetched)[:5]}"


def test_the_readme_is_a_landing_of_at_most_150_lines():
    assert len(README.read_text().splitlines()) <= 150


def test_the_readme_links_only_to_files_that_exist():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text())
    local = [link for link in links if not re.match(r"[a-z]+:", link)]
    assert local, "the README sends its reader into docs/"
    assert [link for link in local if not (ROOT / link).exists()] == []


def test_ci_runs_exactly_the_readme_test_command():
    """The second Quickstart line is what .ci/run runs, so the command a user copies is the one CI proves."""
    block = re.search(r"## Quickstart.*?```sh\n(.*?)```", README.read_text(), re.S)
    assert block, "the README's Quickstart has its sh block"
    install, test = block.group(1).strip().splitlines()
    assert install == "python -m pip install -c constraints.txt . && python -m engine goto page_commission"
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("python -m pip")]
    assert ci == [test]
    assert test in (ROOT / "docs" / "getting-started.md").read_text().splitlines()  # the site's copy, the same


def test_every_benchmark_page_shows_measured_figures_on_a_fresh_clone(tmp_path, load_script):
    """With no run on the building machine (a fresh clone: benchmarks/results/ is not committed), each benchmark
    page's figures come from the committed reference run; a run on the machine comes first."""
    hooks = load_script("docs_hooks")
    run = json.loads(hooks.REFERENCE.read_text())
    nodes = [node for node, values in run["figures"].items() if values] + list(run["benchmarks"])
    measured = {node.split("::")[0][len("benchmarks/"):] for node in nodes}  # figures, and pytest-benchmark's rows
    pages = {page.name: re.search(r"benchmarks/(test_\w+\.py)", page.read_text())
             for page in sorted((ROOT / "docs" / "benchmarks").glob("*.md"))}
    shown = {name: hooks.last_run_figures(found.group(1), results=tmp_path / "none")
             for name, found in pages.items() if found and found.group(1) in measured}
    assert len(shown) >= 16, sorted(shown)
    assert all("committed reference run" in text and "| `" in text for text in shown.values()), shown
    mine = tmp_path / "results"
    mine.mkdir()
    run = json.loads(hooks.REFERENCE.read_text())
    run["run"] = "mine"
    (mine / "9999-mine.json").write_text(json.dumps(run))
    test_file = next(node.split("::")[0][len("benchmarks/"):] for node in run["figures"])
    assert "Run `mine`" in hooks.last_run_figures(test_file, results=mine)
