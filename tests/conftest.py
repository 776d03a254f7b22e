"""Fixtures shared by every test: where the read-only real game data lives."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"

# adbutils spawns a real `adb start-server` on 5037 when it cannot connect; tests never want that.
os.environ.setdefault("ADBUTILS_ADB_PATH", "/bin/false")

# Nor does any test reach the user's own ADB server: unless a test names its own (Debian's adb on a port it
# picked, a fake server), the ADB server port is one nobody listens on, so a slip is a refused connection here,
# never a device of the user's or a server started on 5037.
from tests.ports import free_port  # noqa: E402 (after the environment it must not see changed)

os.environ["ANDROID_ADB_SERVER_PORT"] = str(free_port())

# Commands without --serial discover devices (engine.faces.pick); tests run side by side, each with its own
# simulators on ports a scan would find, so the whole suite drives the built-in simulator unless a test says
# otherwise (discovery's own tests unset this).
os.environ["ENGINE_SERIAL"] = "sim"

# The user's own ALAS settings (README, "Your own ALAS tasks") reach only the tests about the real ALAS (marker
# `alas`, tests/alas_wrapped/test_alas_real.py), which read them back from ENGINE_TEST_REAL_<NAME>: every other test,
# in process or in a subprocess, runs as if they were unset, so the suite passes with and without them (issue 44).
ALAS_SETTINGS = ("ALAS_DIR", "ALAS_PYTHON", "ALAS_CONFIG", "ALAS_LANG")
for _name in ALAS_SETTINGS:
    if _name in os.environ:
        os.environ["ENGINE_TEST_REAL_" + _name] = os.environ.pop(_name)

# The agent's home (learned skills, engine.agent.skills) is a fresh folder per test run, set before anything
# imports the engine, so no test, in process or in a subprocess, reads or writes the real one.
ENGINE_HOME = tempfile.mkdtemp(prefix="engine-home-")
os.environ["ENGINE_HOME"] = ENGINE_HOME
atexit.register(shutil.rmtree, ENGINE_HOME, ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    """Under `-n`, each test module runs whole on one worker, in order (pytest-xdist's loadfile): modules share a
    simulator, a studio or a browser through module-scoped fixtures, and some tests build on the state an earlier one
    of their module left. (Set here, not in addopts: pytest-benchmark turns itself off whenever a --dist is given.)"""
    if getattr(config.option, "dist", "no") == "load":
        config.option.dist = "loadfile"


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not (SHARED / "alas" / "graph.json").exists():
        pytest.skip("../shared (real ALAS data) is not beside the project")
    return SHARED


@pytest.fixture(scope="session")
def alas_graph_json(shared_dir: Path) -> dict:
    import json

    return json.loads((shared_dir / "alas" / "graph.json").read_text())


@pytest.fixture
def fake_gemini():
    """The local Gemini stand-in (tests/gemini_fake.py): the real google-genai client talks to it at `.url`."""
    from tests.gemini_fake import running

    with running() as server:
        yield server


@pytest.fixture
def scripted_gemini(fake_gemini):
    """The same stand-in, for tests that script replies (`.script`) rather than set one `.answer`."""
    return fake_gemini


@pytest.fixture(scope="session")
def far_page():
    """``far_page(graph, start)``: the page most hops from `start`, so a goto there takes a while."""
    from engine.navigation.routes import plan_route

    def farthest(graph, start: str) -> str:
        best, hops = None, 0
        for page in graph.page_names:
            try:
                n = len(plan_route(graph, start, page).hops)
            except Exception:
                continue
            if n > hops:
                best, hops = page, n
        assert best is not None and hops >= 3
        return best

    return farthest


def dismiss_point(graph, popup: str) -> list[int]:
    """Where `popup`'s first dismissal taps (engine.navigation.actuator's tap_point): what a model that reads the screen names."""
    from engine.navigation.actuator import Actuator

    return list(Actuator(None, graph).tap_point(graph.popup(popup).dismiss[0], None))


@pytest.fixture(scope="session")
def postgres():
    """One throwaway PostgreSQL cluster per test process (tests/postgres.py); each xdist worker starts its own."""
    from tests.postgres import Cluster, binaries

    if binaries() is None:
        if os.environ.get("CI"):
            pytest.fail("no PostgreSQL server: scripts/install-system-deps.sh installs Debian's postgresql")
        pytest.skip("no PostgreSQL server here (scripts/install-system-deps.sh installs it)")
    cluster = Cluster()
    yield cluster
    cluster.close()
