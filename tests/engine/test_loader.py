"""The graph loader and yamlsrc: good graphs load, every bad example reports its problems at the annotated line.

Bad examples in tests/data/graphs/bad mark each expected problem on the line it must be reported on, with a
trailing comment ``# ERROR: <part of the message>`` (or ``WARNING:``); several may share a line. The test demands
exactly those: an unannotated error is a failure too.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml

from engine.config import yamlsafe
from engine.config.loader import check_graph, graph_files, graph_json_schema, load_graph
from engine.config.schema import GraphFile, Page
from engine.config.yamlmessages import problems_from_validation_error
from engine.config.yamlsrc import Problem, YamlError, load_yaml, read_yaml
from engine.core import paths
from engine.core.errors import ConfigError, GraphError
from tests.speed import within

DATA = Path(__file__).resolve().parents[1] / "data" / "graphs"
GOOD = DATA / "good"
BAD = DATA / "bad"
EXPECT = re.compile(r"(ERROR|WARNING): (.*?)(?=\s+(?:ERROR|WARNING): |$)")


def _expectations(case: Path) -> list[tuple[str, int, str, str]]:
    """(file, line, severity, message part) for every annotation in a bad example."""
    out = []
    files = [case] if case.is_file() else graph_files(case)
    folder = str(case if case.is_dir() else case.parent)
    for file in files:
        for number, text in enumerate(file.read_text().splitlines(), start=1):
            hash_at = text.find("# ERROR:") if "# ERROR:" in text else text.find("# WARNING:")
            if hash_at < 0:
                continue
            for severity, message in EXPECT.findall(text[hash_at + 2 :]):
                out.append((str(file), number, severity.lower(), message.strip().replace("{dir}", folder)))
    return out


BAD_CASES = sorted(p.name for p in BAD.iterdir())


@pytest.mark.parametrize("case", BAD_CASES)
def test_bad_example_reports_exactly_its_annotated_problems(case: str) -> None:
    path = BAD / case
    expected = _expectations(path)
    assert expected, f"{case} has no annotations"
    report = check_graph(path)
    unmatched = list(report.problems)
    for file, line, severity, part in expected:
        hits = [
            p for p in unmatched if (p.file, p.line, p.severity) == (file, line, severity) and part in p.message
        ]
        assert hits, f"expected {severity} at {file}:{line} containing {part!r}; got:\n" + "\n".join(
            map(str, report.problems)
        )
        unmatched.remove(hits[0])
    assert not unmatched, "unexpected problems:\n" + "\n".join(map(str, unmatched))
    assert report.ok == (not any(sev == "error" for _, _, sev, _ in expected))


def test_good_graph_loads_with_no_problems() -> None:
    report = check_graph(GOOD)
    assert report.problems == ()
    assert (report.pages, report.links, report.popups, report.buttons) == (6, 9, 2, 14)
    assert report.summary() == "ok: 6 pages, 9 links, 2 popups, 14 buttons (0 warnings)"
    graph = report.graph
    assert graph is not None and graph.game == "demo" and graph.start_page == "page_login"
    # files are merged: buttons from game.yaml, pages from pages.yaml, popups from popups.yaml
    assert graph.page("page_mail").controls[0].shows == "popup_reward"
    assert graph.settings(graph.page("page_settings"), graph.page("page_settings").links[0]).link_cost == 2


def test_load_graph_collapses_per_server_values() -> None:
    cn = load_graph(GOOD, server="cn")
    en = load_graph(GOOD, server="en")
    assert cn.button("MAIN_SHOP").area == (920, 300, 1080, 360) and cn.button("MAIN_SHOP").asset == "main/SHOP_CN"
    assert en.button("MAIN_SHOP").area == (900, 300, 1060, 360)
    assert cn.button("MAIN_MAIL").asset == "main/MAIL"
    with pytest.raises(ValueError, match="unknown server 'jp'"):
        load_graph(GOOD, server="jp")


def test_load_graph_raises_one_graph_error_listing_every_problem() -> None:
    with pytest.raises(GraphError) as info:
        load_graph(BAD / "wrong_type.yaml")
    error = info.value
    assert isinstance(error, ConfigError)
    assert len(error.problems) == len(_expectations(BAD / "wrong_type.yaml")) == 5
    assert error.file.endswith("wrong_type.yaml") and error.line == error.problems[0].line
    assert str(error).splitlines()[0] == str(error.problems[0])


def test_load_graph_logs_warnings_but_returns_the_graph(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="engine.config.loader"):
        graph = load_graph(BAD / "warnings.yaml")
    assert "page_lost" in graph.page_names
    assert any("page_lost" in r.getMessage() for r in caplog.records)
    assert any("4 warning(s)" in r.getMessage() for r in caplog.records)


def test_missing_graph_wide_field_names_the_folder(tmp_path: Path) -> None:
    (tmp_path / "pages.yaml").write_text("resolution: [1280, 720]\nservers: [en]\nfallback_server: en\n")
    report = check_graph(tmp_path)
    assert [(p.file, p.line, p.message) for p in report.errors] == [
        (str(tmp_path), None, "graph-wide field 'game' is not set in any file")
    ]


def test_fallback_server_must_be_declared(tmp_path: Path) -> None:
    (tmp_path / "g.yaml").write_text("game: g\nresolution: [1280, 720]\nservers: [en]\nfallback_server: cn\n")
    (error,) = check_graph(tmp_path).errors
    assert (error.line, error.message) == (4, "fallback server 'cn' is not one of the servers (en)")


def test_empty_or_missing_folder_is_one_clear_problem(tmp_path: Path) -> None:
    (error,) = check_graph(tmp_path).errors
    assert "no graph files" in error.message
    (error,) = check_graph(tmp_path / "nope").errors
    assert error.message == "no such graph folder or file"


def test_task_files_are_not_graph_files() -> None:
    names = [p.name for p in graph_files(BAD / "graph_wide_twice")]
    assert names == ["a.yaml", "b.yaml"]


def test_one_broken_item_does_not_cascade_into_dangling_references(tmp_path: Path) -> None:
    (tmp_path / "g.yaml").write_text(
        "game: g\nresolution: [1280, 720]\nservers: [en]\nfallback_server: en\n"
        "buttons:\n  - {name: A, area: [0, 0, 10, 10], asset: ui/A}\n"
        "pages:\n"
        "  - name: page_a\n    signatures: [{type: template, button: A}]\n"
        "    links: [{to: page_b, action: {type: key, key: back}}]\n"
        "  - name: page_b\n    loading: soon\n    links: [{to: page_a, action: {type: key, key: back}}]\n"
    )
    report = check_graph(tmp_path)
    assert [(p.line, p.message) for p in report.errors] == [(12, "expected a number, got 'soon'")]


# --------------------------------------------------------------------------------------------------- shipped


def _shipped() -> Path:
    folder = paths.builtin_graph_dir("azurlane")
    if not folder.is_dir() or not graph_files(folder):
        pytest.skip("pages/azurlane has no graph files yet")
    return folder


def test_shipped_azur_lane_graph_has_no_errors() -> None:
    report = check_graph(_shipped())
    assert report.errors == (), "\n".join(map(str, report.errors))
    assert report.pages >= 53 and report.links >= 127
    assert load_graph(server="en").server == "en"


# --------------------------------------------------------------------------------------------------- schema


def test_committed_schema_is_the_current_export() -> None:
    committed = json.loads(paths.schema_file().read_text())
    assert committed == graph_json_schema(), "run: python -m engine schema > pages/graph.schema.json"


def test_schema_accepts_good_files_and_rejects_bad_ones() -> None:
    import jsonschema

    schema = graph_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for file in [*graph_files(GOOD), *graph_files(_shipped())]:
        data, _ = load_yaml(file)
        assert not list(validator.iter_errors(data)), file
    for name in ("unknown_field.yaml", "missing_field.yaml", "wrong_type.yaml"):
        data, _ = load_yaml(BAD / name)
        assert list(validator.iter_errors(data)), name


# --------------------------------------------------------------------------------------------------- yamlsrc


def test_locator_points_at_keys_and_items_and_falls_back_to_ancestors(tmp_path: Path) -> None:
    file = tmp_path / "x.yaml"
    file.write_text("pages:\n  - name: a\n    links:\n      - to: b\n        action: {type: tap, button: B}\n")
    data, locator = load_yaml(file)
    assert data["pages"][0]["links"][0]["action"]["button"] == "B"
    assert locator.locate(("pages",)) == (1, 1)
    assert locator.locate(("pages", 0)) == (2, 5)
    assert locator.locate(("pages", 0, "links", 0, "action", "button")) == (5, 29)
    assert locator.locate(("pages", 0, "links", 0, "nope", 3)) == (4, 9)
    assert str(locator.problem(("pages", 0, "name"), "bad")) == f"{file}:2:5: bad"


def test_duplicate_keys_are_problems_but_merge_keys_are_not(tmp_path: Path) -> None:
    file = tmp_path / "x.yaml"
    file.write_text("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  x: 5\nm2: {a: 1, a: 2}\n")
    source = read_yaml(file)
    assert source.data["m"] == {"x": 5, "y": 2}
    assert [(p.line, p.col, p.message) for p in source.problems] == [
        (5, 12, "duplicate key 'a' (first at line 5, col 6)")
    ]
    with pytest.raises(YamlError) as info:
        load_yaml(file)
    assert isinstance(info.value, ConfigError) and info.value.line == 5


@pytest.mark.parametrize(
    "text, line, col, part",
    [
        ("a: [1, 2\nb: 3\n", 2, 2, "YAML syntax error: expected ',' or ']'"),
        ("a: !python/object 1\n", 1, 4, "unknown YAML tag '!python/object'"),
        ("a: 1\n---\nb: 2\n", 2, 1, "expected a single document"),
        ("a: &x [*x]\n", 1, 4, "recursive YAML alias"),
    ],
)
def test_yaml_errors_become_problems_with_positions(tmp_path: Path, text: str, line: int, col: int, part: str) -> None:
    file = tmp_path / "x.yaml"
    file.write_text(text)
    (problem,) = read_yaml(file).problems
    assert (problem.file, problem.line, problem.col) == (str(file), line, col)
    assert part in problem.message


def test_empty_file_is_none_without_problems(tmp_path: Path) -> None:
    file = tmp_path / "x.yaml"
    file.write_text("# nothing\n")
    source = read_yaml(file)
    assert source.data is None and source.problems == []


def _validation_problems(text: str, schema: type = GraphFile, **how: object) -> list[str]:
    source = read_yaml("x.yaml", text=text)
    with pytest.raises(pydantic.ValidationError) as info:
        schema.model_validate(source.data)
    how = how or {"fields": ["color"]}
    return [str(p) for p in problems_from_validation_error(info.value, "x.yaml", source.locator, **how)]


def test_validation_messages_are_human_and_drop_union_tags() -> None:
    assert _validation_problems("pages:\n  - name: p\n    signatures:\n      - {type: colr}\n") == [
        "x.yaml:4:9: unknown signature type 'colr' (expected color, template, ocr, any_of)"
    ]
    assert _validation_problems("pages:\n  - name: p\n    signatures:\n      - {area: [1, 2, 3, 4]}\n") == [
        "x.yaml:4:9: missing field 'type' of this signature"
    ]
    # a per-server mapping reports only the mapping branch, at the bad item
    assert _validation_problems("buttons:\n  - name: A\n    area: {en: [1, 2, 3, x]}\n") == [
        "x.yaml:3:26: expected a whole number, got 'x'"
    ]
    assert _validation_problems("buttons:\n  - name: A\n    area: abc\n") == [
        "x.yaml:3:5: expected a list of 4 numbers, got 'abc'"
    ]
    assert _validation_problems("name: 9p\nlinks: [{to: x, action: {type: tap}}]\n", Page) == [
        "x.yaml:1:1: '9p' is not a valid name (letters, digits, '_', '.', '-'; not starting with a digit)",
        "x.yaml:2:17: a tap needs exactly one of `button` or `point`",
    ]


def test_problem_string_marks_warnings() -> None:
    assert str(Problem("f.yaml", 3, 5, "hm", "warning")) == "f.yaml:3:5: warning: hm"
    assert str(Problem("f.yaml", None, None, "gone")) == "f.yaml: gone"


# --------------------------------------------------------------------------------------------------- limits


LAUGHS = "".join(
    ["x0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"]
    + [f"x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * 9)}]\n" for i in range(1, 10)]
    + ["game: *x9\n"]
)
MERGE_BOMB = "".join(
    ["m0: &m0 {a: 1, b: 2}\n"] + [f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], c{i}: {i}}}\n" for i in range(1, 40)]
)


@pytest.mark.parametrize(
    "text, line, part",
    [
        (LAUGHS, 5, "aliases expand to more than 50000 extra nodes"),
        (MERGE_BOMB, 14, "aliases expand to more than 50000 extra nodes"),
        ("game: " + "[" * 10_000 + "]" * 10_000 + "\n", 1, "nesting deeper than 64 levels"),
        ("".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v\n", 65, "nesting deeper than 64 levels"),
        ("a: &a [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n"
         "b: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[*a]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n", 2, "once aliases are expanded"),
    ],
    ids=["billion_laughs", "merge_bomb", "deep_flow", "deep_block", "deep_through_alias"],
)
@pytest.mark.parametrize("parser", ["libyaml", "pure-python"])
def test_hostile_yaml_is_refused_fast_and_small(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parser: str, text: str, line: int, part: str
) -> None:
    """Refused at the same line with the same one sentence by either parser PyYAML may run.

    libyaml (PyYAML >= 6.0.4) stops deep nesting itself while scanning ahead; the pure-Python parser does not: the
    user must not tell the difference.
    """
    if parser == "pure-python":
        monkeypatch.setattr(yamlsafe, "_Loader", yaml.SafeLoader)
    elif not hasattr(yaml, "CSafeLoader"):
        pytest.skip("this PyYAML was built without libyaml")
    file = tmp_path / "x.yaml"
    file.write_text(text)
    source, elapsed, _ = _measured(read_yaml, file, traced=False)  # timed without tracemalloc's overhead
    _, _, peak = _measured(read_yaml, file)
    (problem,) = source.problems
    assert source.data is None and problem.line == line and part in problem.message
    assert "YAML syntax error" not in problem.message  # the parser's own refusal is not shown beside ours
    within(elapsed, 1.0, "CPU seconds to refuse a hostile YAML file")
    assert peak < 100 * 2**20, f"{peak / 2**20:.0f} MB"


class _WordyDepthLoader(yaml.SafeLoader):
    """A parser that, like libyaml, scans ahead and refuses deep nesting itself, in words of its own."""

    def get_event(self) -> Any:
        depth = deepest = 0
        for char in self.buffer:
            depth += {"[": 1, "]": -1}.get(char, 0)
            deepest = max(deepest, depth)
        if deepest > 80:
            raise yaml.scanner.ScannerError("while reading a flow node", None, "too deep: the limit is 80",
                                            self.get_mark())
        return super().get_event()


def test_a_parser_that_refuses_depth_in_its_own_words_still_gives_our_one_refusal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "x.yaml"
    file.write_text("game:\n  list: " + "[" * 200 + "]" * 200 + "\n")
    expected = read_yaml(file).problems
    monkeypatch.setattr(yamlsafe, "_Loader", _WordyDepthLoader)
    (problem,) = read_yaml(file).problems
    assert [problem] == expected
    assert problem.line == 2 and "too deep" not in problem.message and "64" in problem.message


def _measured(fn: Any, *args: Any, traced: bool = True) -> tuple[Any, float, int]:
    """fn(*args), the CPU seconds it took, and the peak of memory it allocated (bytes; 0 untraced).

    CPU time of this process, not wall time: the bound is on the work a hostile file makes us do, which two other
    busy processes on the machine do not change (wall time under load measured 3-10x the quiet figure)."""
    import time
    import tracemalloc

    if traced:
        tracemalloc.start()
    try:
        started = time.process_time()
        result = fn(*args)
        return result, time.process_time() - started, tracemalloc.get_traced_memory()[1] if traced else 0
    finally:
        tracemalloc.stop()


def _many_buttons(count: int) -> str:
    rows = (f"  - {{name: B{i}, area: [0, 0, 10, 10], asset: ui/B{i}}}\n" for i in range(count))
    head = "game: g\nresolution: [1280, 720]\nservers: [en]\nfallback_server: en\nstart_page: page_a\nbuttons:\n"
    return head + "".join(rows) + "pages:\n  - {name: page_a, signatures: [{type: template, button: B0}]}\n"


def test_a_5_mb_graph_file_is_refused_at_once_and_a_large_one_loads_in_bounds(tmp_path: Path) -> None:
    big = tmp_path / "big" / "graph.yaml"
    big.parent.mkdir()
    big.write_text(_many_buttons(90_000))  # 5 MB: it used to take 29 s and 822 MB
    assert big.stat().st_size > 5_000_000
    report, elapsed, peak = _measured(check_graph, big.parent)
    (error,) = report.errors
    assert error.file == str(big) and error.message.startswith("file is too large (")
    assert error.message.endswith("the limit is 1.0 MB")
    within(elapsed, 1.0, "CPU seconds to refuse a 5 MB graph file")
    assert peak < 20 * 2**20, (elapsed, peak)

    large = tmp_path / "large" / "graph.yaml"
    large.parent.mkdir()
    large.write_text(_many_buttons(5_000))  # a large file under the limit is still checked in generous bounds
    assert 250_000 < large.stat().st_size < 2**20
    report, elapsed, peak = _measured(check_graph, large.parent)
    assert report.ok and report.buttons == 5_000
    within(elapsed, 60, "CPU seconds to check a large graph file")
    assert peak < 300 * 2**20, (elapsed, peak)


@pytest.mark.parametrize(
    "data, line, col, part",
    [
        (b"game: g\nname: a\x00b\n", 2, 8, "NUL byte (0x00)"),
        ("game: g\n".encode("utf-16"), 1, 4, "is it UTF-16? save it as UTF-8"),
        ("game: g\ndescription: caf\xe9\n".encode("latin-1"), 2, 17, "not UTF-8: byte 0xe9"),
        (b"game: g\nname: a\x07b\n", 2, 8, "control character U+0007"),
    ],
    ids=["nul", "utf16", "latin1", "bell"],
)
def test_bad_bytes_are_problems_with_a_line(tmp_path: Path, data: bytes, line: int, col: int, part: str) -> None:
    file = tmp_path / "x.yaml"
    file.write_bytes(data)
    (problem,) = read_yaml(file).problems
    assert (problem.line, problem.col) == (line, col) and part in problem.message


def test_a_utf8_byte_order_mark_is_fine(tmp_path: Path) -> None:
    file = tmp_path / "x.yaml"
    file.write_bytes("\ufeffgame: caf\xe9\n".encode())
    source = read_yaml(file)
    assert source.problems == [] and source.data == {"game": "caf\xe9"}


def test_unknown_tags_on_any_node_are_problems_and_merges_still_work(tmp_path: Path) -> None:
    source = read_yaml("x.yaml", text="a: !foo {x: 1}\nb: !!set {y}\nc: !!str 5\nd: &d {k: 1}\ne: {<<: *d, j: 2}\n")
    assert [(p.line, p.col, p.message.split(":")[0]) for p in source.problems] == [
        (1, 4, "unknown YAML tag '!foo'"),
        (2, 4, "unknown YAML tag '!!set'"),
    ]
    assert source.data["c"] == "5" and source.data["e"] == {"k": 1, "j": 2}
    assert source.locator.locate(("e", "j")) == (5, 13)


def test_unquoted_scalars_keep_their_source_for_hints() -> None:
    source = read_yaml("x.yaml", text="a: YES\nb: 'YES'\nc: 1.10\nd: 10\ne: ~\n")
    assert source.data == {"a": True, "b": "YES", "c": 1.1, "d": 10, "e": None}
    assert source.locator.raw == {("a",): "YES", ("c",): "1.10", ("e",): "~"}


@pytest.mark.parametrize(
    "text, expected",
    [
        # the field `color` of a color signature was "unknown field 0"; the hint comes from the model the field sits
        # in (a button does have a `color`)
        ("pages:\n  - name: p\n    signatures: [{type: color, area: [0, 0, 1, 1], color: [1, 2, 3]}]\n",
         "x.yaml:3:52: unknown field 'color' (did you mean 'rgb'?)"),
        ("buttons:\n  - {name: A, area: [0, 0, 1, 1], text: YES}\n",
         'x.yaml:2:35: expected text, got True (YAML reads the unquoted YES as true; quote it: "YES")'),
        ("buttons:\n  - {name: A, area: [0, 0, 1, 1], color: [0, 300, 0]}\n",
         "x.yaml:2:46: color[1]: must be <= 255, got 300 (colour channels are 0..255)"),
        ("pages:\n  - name: p\n    loading: .nan\n", "x.yaml:3:5: loading: expected a finite number, got nan"),
    ],
    ids=["color_is_rgb", "yes_is_true", "colour_range", "nan"],
)
def test_messages_name_the_field_and_hint_at_the_fix(text: str, expected: str) -> None:
    assert _validation_problems(text, model=GraphFile) == [expected]


# --------------------------------------------------------------------------------------------------- references


def _graph(tmp_path: Path, extra: str = "", page: str = "") -> Path:
    (tmp_path / "g.yaml").write_text(
        "game: g\nresolution: [1280, 720]\nservers: [en]\nfallback_server: en\nstart_page: page_a\n" + extra
        + "buttons: [{name: A, area: [0, 0, 10, 10], asset: ui/A}]\n"
        + "pages:\n  - name: page_a\n    signatures: [{type: template, button: A}]\n" + page
    )
    return tmp_path


def test_policy_names_are_checked_against_the_given_policies(tmp_path: Path) -> None:
    folder = _graph(tmp_path, "defaults: {policy: my_hop}\n",
                    "    links: [{to: page_a, action: {type: key, key: back}, policy: goto_hop}]\n")
    (error,) = check_graph(folder).errors
    assert (error.line, error.col) == (6, 12)
    assert error.message.startswith("defaults.policy names unknown policy 'my_hop'")
    assert check_graph(folder, policies=["my_hop", "goto_hop"]).ok
    (error,) = check_graph(folder, policies=["my_hop"]).errors
    assert (error.line, error.message.split(" (")[0]) == (11, "link policy names unknown policy 'goto_hop'")
    policy_file = tmp_path.parent / f"{tmp_path.name}-policies.yaml"  # beside the graph folder, not in it
    policy_file.write_text("policies:\n  my_hop: {attempts: 2, timeout: 5}\n")
    assert check_graph(folder, policies=policy_file).ok
    with pytest.raises(GraphError, match="unknown policy 'my_hop'"):
        load_graph(folder)
    assert load_graph(folder, policies=policy_file).defaults.policy == "my_hop"


def test_a_broken_policy_file_joins_the_report(tmp_path: Path) -> None:
    policy_file = tmp_path / "p.yaml"
    policy_file.write_text("policies:\n  tap: {attempts: 1, timeout: 1}\n  tap: {attempts: 2, timeout: 1}\n")
    (tmp_path / "g").mkdir()
    (error,) = check_graph(_graph(tmp_path / "g"), policies=policy_file).errors
    assert (error.file, error.line, error.message) == (str(policy_file), 3, "duplicate key 'tap' (first at line 2, col 3)")


def test_unknown_page_must_name_a_page(tmp_path: Path) -> None:
    (error,) = check_graph(_graph(tmp_path, "unknown_page: page_b\n")).errors
    assert (error.line, error.message) == (6, "unknown_page names an unknown page 'page_b' (did you mean 'page_a'?)")


def test_companion_files_are_checked_by_their_registered_check(tmp_path: Path) -> None:
    from engine.config import loader

    seen: list[tuple[list[Path], object]] = []

    def check(files: list[Path], graph: object) -> list[Problem]:
        seen.append((files, graph))
        return [Problem(str(files[0]), 1, 1, "not a goal")]

    folder = _graph(tmp_path)
    (folder / "goals.yaml").write_text("goals: []\n")
    assert check_graph(folder).ok  # not a graph file, and nothing checks goals yet
    loader.register_companion("goals*.yaml", check)
    try:
        report = check_graph(folder)
    finally:
        loader._COMPANIONS.pop("goals*.yaml")
    assert [p.message for p in report.errors] == ["not a goal"] and report.graph is None
    (files, graph), = seen
    assert files == [folder / "goals.yaml"] and graph is not None and graph.game == "g"
    assert load_graph(folder).game == "g"  # load_graph leaves companions to their own loaders


def test_check_graph_checks_the_task_files_beside_the_graph(tmp_path: Path) -> None:
    folder = _graph(tmp_path)
    (folder / "tasks.yaml").write_text(
        "tasks:\n  - name: t\n    description: d\n    steps: [{type: goto, page: page_b}]\n    success: [{page: page_a}]\n"
    )
    (error,) = check_graph(folder).errors
    assert (error.file, error.line, error.message) == (str(folder / "tasks.yaml"), 4, "task t: unknown page 'page_b'")
