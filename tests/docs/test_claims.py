"""A benchmark page's claim markers become, at build time, a heading, a table from the JSON of a run and the
command that reproduces it (scripts/docs_claims.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def hooks(load_script):
    return load_script("docs_hooks")


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
