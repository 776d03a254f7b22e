"""tests/speed.py's checks assert as before and, with SPEED_RECORD set, leave one line each (failing ones too), which
scripts/timing-spread.py turns into the largest share of each bound that runs used (issue 49)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tests.speed import RECORD_ENV, at_least, within

ROOT = Path(__file__).resolve().parents[2]


def _spread():
    spec = importlib.util.spec_from_file_location("timing_spread", ROOT / "scripts" / "timing-spread.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_checks_assert_and_record_each_value_with_its_bound(tmp_path, monkeypatch):
    record = tmp_path / "speed.jsonl"
    monkeypatch.setenv(RECORD_ENV, str(record))
    within(0.5, 2.0, "a wall (s)")
    at_least(12.0, 3.0, "png / raw")
    with pytest.raises(AssertionError, match="a wall"):
        within(2.5, 2.0, "a wall (s)")
    rows = [json.loads(line) for line in record.read_text().splitlines()]
    assert [(r["what"], r["value"], r["bound"]) for r in rows] == [("a wall (s)", 0.5, 2.0), ("png / raw", 12.0, 3.0),
                                                                    ("a wall (s)", 2.5, 2.0)]
    assert all(r["test"].endswith("test_checks_assert_and_record_each_value_with_its_bound") for r in rows)
    used = _spread().used_of_bounds([record])
    assert {k.split("::")[-1]: v for k, v in used.items()} == {"a wall (s)": 1.25, "png / raw": 0.25}


def test_without_the_variable_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv(RECORD_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    within(0.1, 1.0, "quiet")
    assert list(tmp_path.iterdir()) == []
