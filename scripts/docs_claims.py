"""The claims of the benchmark pages, generated at build time from the JSON every benchmark run writes.

A benchmark page states each claim with a marker, an HTML comment (so GitHub and editors show nothing of it):

    <!-- claim verify: the expected page is verified in at most 0.75 of the naive verify's time (asserted)
    test: test_bench_verify.py::test_bench_verify_expected_page
    figures: verify_over_naive verify_over_naive_95_low verify_over_naive_95_high verify_p50_ms naive_verify_p50_ms
    -->

`test` is a test of benchmarks/ as pytest names it (file::function, with its parameters in brackets); `figures` are
names that test recorded (the ``figures`` fixture, pytest-benchmark's ``extra_info`` and ``median_ms``:
docs_hooks.run_rows). Both may hold the wildcards `*` and `?` (`test_health[*]`, `*_page_recall`), for parametrised
tests and for figures named after a seed drawn from the clock. `command` overrides the command that reproduces the
claim (by default pytest on that test). The build replaces the marker with a heading anchored `claim-<id>`, the
table of those figures from the newest run that has them (a run on the building machine, else the committed
reference runs), the run and commit they came from, and the command.

A page, or a section, that keeps a dated measurement (an investigation's table, naming its commit and date) says
so with ``<!-- dated record -->``, or ``<!-- dated record: verify.md -->`` naming the page whose claims are current;
the build shows it as a note. tests/docs/test_claims.py holds every marker to the committed reference runs.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable

CLAIM = re.compile(r"^<!--\s*claim\s+([a-z0-9-]+):\s*(.+?)\n(.*?)-->[ \t]*$", re.M | re.S)
DATED = re.compile(r"^<!--\s*dated record(?::\s*(\S+?))?\s*-->[ \t]*$", re.M)
KEYS = ("test", "figures", "command")

Rows = dict[str, dict[str, dict]]
"""One run's figures for one benchmark file: {nodeid: {figure: {"value", "unit", "kind"}}}."""


@lru_cache(maxsize=None)
def _wildcard(pattern: str) -> re.Pattern:
    """`*` any run of characters, `?` one; everything else, brackets included (pytest's parameters), as written."""
    return re.compile("".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern))


def fits(name: str, pattern: str) -> bool:
    return _wildcard(pattern).fullmatch(name) is not None


@dataclass(frozen=True)
class Claim:
    id: str
    title: str
    test: str  # "test_bench_verify.py::test_bench_verify_expected_page", wildcards allowed
    figures: tuple[str, ...]
    command: str

    @property
    def file(self) -> str:
        return self.test.split("::", 1)[0]

    def nodes(self, rows: Rows) -> list[str]:
        return sorted(node for node in rows if fits(node, f"benchmarks/{self.test}"))

    def matches(self, rows: Rows, pattern: str) -> list[tuple[str, str]]:
        """(node, figure) pairs of `rows` that `pattern` names, in the order of the nodes, then of the names."""
        return [(node, name) for node in self.nodes(rows) for name in sorted(rows[node])
                if fits(name, pattern)]


def claims(markdown: str) -> list[Claim]:
    """The claims a page's Markdown states, in order; a malformed marker raises ValueError naming it."""
    found = []
    for match in CLAIM.finditer(markdown):
        ident, title, body = match.group(1), match.group(2).strip(), match.group(3)
        fields = {}
        for line in body.strip().splitlines():
            key, sep, value = line.partition(":")
            if not sep or key.strip() not in KEYS:
                raise ValueError(f"claim {ident}: {line!r} is not one of {', '.join(KEYS)}")
            fields[key.strip()] = value.strip()
        if not fields.get("test") or not fields.get("figures"):
            raise ValueError(f"claim {ident}: it needs a test and its figures")
        found.append(Claim(ident, title, fields["test"], tuple(fields["figures"].split()),
                           fields.get("command") or default_command(fields["test"])))
    return found


def default_command(test: str) -> str:
    """pytest on the claim's test: a parametrised test's every case when its parameters are a wildcard."""
    node = test if not re.search(r"[*?]", test) else test.split("[", 1)[0]
    return f"python -m pytest {shlex.quote('benchmarks/' + node)} -p no:cacheprovider"


def shown(value: object) -> str:
    if isinstance(value, float):
        text = f"{value:.0f}" if abs(value) >= 10000 else f"{value:.4g}"
    else:
        text = str(value)
    return text.replace("|", "\\|")


def table(claim: Claim, rows: Rows) -> list[str]:
    """The claim's figures in `rows` as a Markdown table, test by test (a column more, the test, when it names
    several), each test's figures in the claim's order; a figure no test of `rows` has says so."""
    nodes = claim.nodes(rows)
    several = len(nodes) > 1
    lines = ["| test | figure | value | kind |" if several else "| figure | value | kind |",
             "|---|---|---:|---|" if several else "|---|---:|---|"]
    for node in nodes:
        names = [name for pattern in claim.figures for name in sorted(rows[node]) if fits(name, pattern)]
        for name in dict.fromkeys(names):  # named before, by name or by another wildcard: once
            figure = rows[node][name]
            cells = [f"`{name}`", f"{shown(figure.get('value'))} {figure.get('unit') or ''}".strip(),
                     str(figure.get("kind") or "")]
            if several:
                cells.insert(0, f"`{node.split('::', 1)[1]}`")
            lines.append("| " + " | ".join(cells) + " |")
    for pattern in claim.figures:
        if not claim.matches(rows, pattern):
            lines.append(("| | " if several else "| ") + f"`{pattern}` | not in this run | |")
    return lines


def expand(markdown: str, newest: Callable[[Claim], tuple[str, Rows] | None], page_title: Callable[[str], str]) -> str:
    """`markdown` with each claim marker replaced by its heading, table, source and command, and each dated-record
    marker by its note. `newest(claim)` gives the newest run that has the claim's test: a sentence naming that run
    and its commit, and the run's figures for the claim's file; None when no run has it."""
    def claim_block(match: re.Match) -> str:
        claim = claims(match.group(0))[0]
        found = newest(claim)
        lines = [f"### {claim.title} {{#claim-{claim.id}}}", ""]
        if found is None:
            lines.append(f"No run has written the figures of `benchmarks/{claim.test}`, on the machine that built "
                         "this page or in the committed reference runs: run the command below and build again.")
        else:
            source, rows = found
            lines += [f"{source}:", ""] + table(claim, rows)
        lines += ["", "The command that reproduces it:", "", "```sh", claim.command, "```"]
        return "\n".join(lines)

    def dated_block(match: re.Match) -> str:
        current = match.group(1)
        where = (f"the current claims, generated at every build from the last run, are on "
                 f"[{page_title(current)}]({current})" if current else
                 "the current claim is the generated table of this page")
        return ("!!! note \"A dated record, not the current claim\"\n"
                "    Figures measured once, at the commit and date the text names where it names them, and kept as "
                f"they were written: the record of an investigation or of a long form, not regenerated; {where}.")

    return DATED.sub(dated_block, CLAIM.sub(claim_block, markdown))


def unknown_figures(claim: Claim, rows: Iterable[Rows]) -> list[str]:
    """The claim's test or figure patterns that none of `rows` (each one run's figures) has."""
    runs = [r for r in rows if claim.nodes(r)]
    if not runs:
        return [claim.test]
    return [p for p in claim.figures if not any(claim.matches(r, p) for r in runs)]
