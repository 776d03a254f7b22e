"""Every benchmark page states its claims as markers the build fills from the JSON of a run
(scripts/docs_claims.py), or says it is a dated record; every figure a marker names is one the committed
reference runs have, so that a site built on a fresh clone shows each claim measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted(p for p in (ROOT / "docs" / "benchmarks").glob("*.md") if p.name != "index.md")
WITHOUT_REFERENCE = {"maafw": "maafw is an optional extra (.[bench]) that the reference run did not install"}
"""Claims whose benchmark the committed reference runs could not run, and why: their pages say so."""


@pytest.fixture(scope="module")
def hooks(load_script):
    return load_script("docs_hooks")


@pytest.fixture(scope="module")
def reference_rows(hooks):
    """Each committed reference run's figures, per benchmark file: [{nodeid: {figure: ...}}]."""
    runs = [json.loads(path.read_text()) for path in sorted(ROOT.glob("benchmarks/reference-run*.json"))]
    assert runs, "benchmarks/reference-run.json is committed"
    files = {node.split("::")[0] for run in runs for node in [*run.get("figures", {}), *run.get("benchmarks", {})]}
    return [hooks.run_rows(run, prefix) for run in runs for prefix in sorted(files)]


def test_every_benchmark_page_has_a_generated_claim_or_is_a_dated_record(hooks):
    bare = []
    for page in PAGES:
        text = page.read_text()
        dated = [m.group(1) for m in hooks.claims.DATED.finditer(text)]
        if not hooks.claims.claims(text) and not any(dated):  # a diagnosis page names where the claims are
            bare.append(page.name)
        for current in filter(None, dated):
            assert hooks.claims.claims((page.parent / current).read_text()), (page.name, current)
    assert bare == [], f"benchmark pages with no claim marker and no '<!-- dated record: PAGE.md -->': {bare}"


def test_every_claim_names_figures_the_reference_run_has(hooks, reference_rows):
    unknown, ids = {}, []
    for page in PAGES:
        for claim in hooks.claims.claims(page.read_text()):
            ids.append(claim.id)
            assert (ROOT / "benchmarks" / claim.file).is_file(), (page.name, claim.id, claim.file)
            assert claim.command.startswith(("python -m pytest", "python -m pip")), claim.command
            missing = hooks.claims.unknown_figures(claim, reference_rows)
            if claim.id in WITHOUT_REFERENCE:
                assert missing == [claim.test], f"{claim.id} is in the reference runs now: check its figures"
            elif missing:
                unknown[f"{page.name}#claim-{claim.id}"] = missing
    assert len(ids) == len(set(ids)), "claim ids are anchors: one of each on the whole site"
    assert unknown == {}, f"claims naming a test or figure no reference run has: {unknown}"


def test_a_claim_expands_to_its_anchor_table_source_and_command(hooks, tmp_path):
    page = ("# A page\n\n<!-- claim the-ratio: A ratio\ntest: test_x.py::test_y[*]\nfigures: *_ratio absent\n-->\n"
            "\n<!-- dated record: other.md -->\n")
    rows = {"benchmarks/test_x.py::test_y[a]": {"a_ratio": {"value": 0.51234, "unit": "x", "kind": "ratio"}},
            "benchmarks/test_x.py::test_y[b]": {"b_ratio": {"value": 20628.1, "unit": "ms", "kind": "ratio"}}}
    out = hooks.claims.expand(page, lambda claim: ("Run `r1` (commit abc)", rows), lambda name: "Other")
    assert "### A ratio {#claim-the-ratio}" in out
    assert "| `test_y[a]` | `a_ratio` | 0.5123 x | ratio |" in out and "20628 ms" in out
    assert "`absent` | not in this run" in out and "Run `r1` (commit abc):" in out
    assert "```sh\npython -m pytest benchmarks/test_x.py::test_y -p no:cacheprovider\n```" in out
    assert "[Other](other.md)" in out and "<!--" not in out
    out = hooks.claims.expand(page, lambda claim: None, lambda name: "Other")
    assert "No run has written the figures of `benchmarks/test_x.py::test_y[*]`" in out
    with pytest.raises(ValueError, match="claim bad"):
        hooks.claims.claims("<!-- claim bad: no test\nfigures: a\n-->\n")
