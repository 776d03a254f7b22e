"""The schedule's tests run against both backends: SQLite (a file in the test's folder) and PostgreSQL (a database
of its own in the run's throwaway cluster, tests/postgres.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "s.sqlite3")
    return request.getfixturevalue("postgres").new_database()
