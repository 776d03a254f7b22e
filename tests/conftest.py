"""Fixtures shared by every test: where the read-only real game data lives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

# adbutils spawns a real `adb start-server` on 5037 when it cannot connect; tests never want that.
os.environ.setdefault("ADBUTILS_ADB_PATH", "/bin/false")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not (SHARED / "alas" / "graph.json").exists():
        pytest.skip("../shared (real ALAS data) is not beside the project")
    return SHARED


@pytest.fixture(scope="session")
def alas_graph_json(shared_dir: Path) -> dict:
    import json

    return json.loads((shared_dir / "alas" / "graph.json").read_text())
