"""An installed copy is self-contained: the graphs, tasks and policies ship inside the package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_an_installed_copy_finds_its_data_without_the_source_tree(tmp_path):
    target = tmp_path / "site"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(ROOT)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}

    def run(*args):
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, cwd=elsewhere,
                              env=env)

    where = run("-c", "import engine, pages, policies; print(engine.__file__); print(pages.__file__)")
    assert where.returncode == 0, where.stderr
    assert all(line.startswith(str(target)) for line in where.stdout.split()), where.stdout
    validate = run("-m", "engine", "validate")
    assert validate.returncode == 0, validate.stderr
    assert validate.stdout.startswith("ok: 54 pages")
    tasks = run("-m", "engine", "tasks", "--json")
    assert "login" in [t["name"] for t in json.loads(tasks.stdout)]
    goto = run("-m", "engine", "goto", "page_reward", "--json")
    assert goto.returncode == 0, goto.stderr
    assert json.loads(goto.stdout)["data"]["observed"] == "page_reward"
