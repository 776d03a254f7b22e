"""The real AzurLaneAutoScript, on its own Python 3.7, driven by the engine against the simulator (marker `alas`).

Skipped unless ALAS_DIR (an ALAS checkout) and ALAS_PYTHON (the Python it runs under) are set; README.md, "Your
own ALAS tasks", says how to build both. The test lists ALAS's tasks through the CLI, then runs alas:Reward on the
simulator drawing ALAS's own assets (../shared/alas) from page_main, bounded by ALAS_REWARD_BOUND seconds (default
60), and checks that nothing ALAS started is left running. It uses an instance of its own, made from
config/template.json as ALAS's GUI makes one, with ADB screenshots and taps (the simulated phone runs no
uiautomator2 agent), and removes it afterwards: the user's own instances are not touched. Run it with
``-s`` to see the numbers it measures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.alas_wrapped.conftest import ROOT
from tests.speed import within

# tests/conftest.py moves the user's ALAS_* settings to ENGINE_TEST_REAL_*: only this module reads them.
REAL_DIR = os.environ.get("ENGINE_TEST_REAL_ALAS_DIR")
REAL_PYTHON = os.environ.get("ENGINE_TEST_REAL_ALAS_PYTHON")
pytestmark = [pytest.mark.alas, pytest.mark.skipif(not (REAL_DIR and REAL_PYTHON),
                                                   reason="set ALAS_DIR and ALAS_PYTHON to run the real ALAS")]
INSTANCE = "engine_alas_test"


@pytest.fixture
def alas() -> tuple[Path, str]:
    root = Path(REAL_DIR).resolve()
    path = root / "config" / f"{INSTANCE}.json"
    config = json.loads((root / "config" / "template.json").read_text(encoding="utf-8"))
    config["Alas"]["Emulator"].update(ScreenshotMethod="ADB", ControlMethod="ADB")
    path.write_text(json.dumps(config, indent=2, ensure_ascii=False), encoding="utf-8")
    yield root, REAL_PYTHON
    path.unlink(missing_ok=True)


def left_in(root: Path) -> list[str]:
    """Processes working in the checkout (the driver moves there, and whatever ALAS starts inherits it)."""
    out = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and Path(os.readlink(entry / "cwd")).resolve() == root:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                out.append(f"{entry.name}: {command[:200]}")
        except OSError:
            continue
    return out


def test_the_real_alas_lists_its_tasks_and_runs_reward_against_the_simulator(alas, shared_dir, tmp_path):
    from alas_wrapped.checkout import Checkout
    from alas_wrapped.provider import AlasProvider
    from alas_wrapped.worker import group_members
    from engine.runtime.session import open_session

    root, python = alas
    options = ["--alas", str(root), "--alas-python", python, "--alas-config", INSTANCE]
    listing = subprocess.run([sys.executable, "-m", "engine", "cli", "--list-tools", "--json", *options],
                             capture_output=True, text=True, timeout=180, cwd=ROOT)
    assert listing.returncode == 0, listing.stderr[-3000:]
    listed = [t["name"] for t in json.loads(listing.stdout)["data"]["tasks"] if t.get("kind") == "alas"]
    groups = yaml.safe_load((root / "module/config/argument/task.yaml").read_text(encoding="utf-8"))
    scheduled = [t for g in groups.values() for t, parts in g["tasks"].items() if "Scheduler" in parts]
    assert listed == [f"alas:{t}" for t in scheduled if t != "Restart"]

    bound = float(os.environ.get("ALAS_REWARD_BOUND", "60"))
    policies = tmp_path / "policies.yaml"
    policies.write_text(f"policies:\n  alas:Reward: {{timeout: {bound}, attempts: 1, wait: {{type: none}}, "
                        "retry_on: []}\n")
    checkout = Checkout.open(root, python, INSTANCE)
    session = open_session(assets=str(shared_dir / "alas"), server="en", policies_file=policies,
                           providers=[AlasProvider(checkout)], transcript_dir=tmp_path / "transcript")
    try:
        assert session.tools.alas_goto("page_main").ok
        started = time.monotonic()
        result = session.tools.alas_run("alas:Reward")
        elapsed = time.monotonic() - started
    finally:
        session.close()
    worker = result.data["worker"]
    print(f"\nreal ALAS at {root} on Python {checkout.python_version}: {len(listed)} tasks listed; alas:Reward -> "
          f"{result.status} ({result.text}) in {elapsed:.1f} s, exit {worker['exit_code']}, killed "
          f"{worker['killed']}, survivors {worker['survivors']}")
    assert result.status != "worker_failed" and result.data["observation"] is not None
    within(elapsed, bound + 10, "real alas:Reward run, wall (s)")
    assert worker["survivors"] == [] and not group_members(worker["pid"]) and not left_in(root)
