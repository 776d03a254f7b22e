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

import pydantic
import pytest

from engine import paths
from engine.errors import ConfigError, GraphError
from engine.loader import check_graph, graph_files, graph_json_schema, load_graph
from engine.schema import GraphFile, Page
from engine.yamlsrc import Problem, YamlError, load_yaml, problems_from_validation_error, read_yaml

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
    with caplog.at_level(logging.INFO, logger="engine.loader"):
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
        ("a: !python/object 1\n", 1, 4, "could not determine a constructor"),
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


def _validation_problems(text: str, model: type = GraphFile) -> list[str]:
    source = read_yaml("x.yaml", text=text)
    with pytest.raises(pydantic.ValidationError) as info:
        model.model_validate(source.data)
    return [str(p) for p in problems_from_validation_error(info.value, "x.yaml", source.locator, fields=["color"])]


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
