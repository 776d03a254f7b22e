"""Whether an interpreter can run a given ALAS checkout, asked of the interpreter itself in bounded time.

ALAS pins its own Python: its requirements.txt is compiled for one version (``pip-compile with Python 3.7``) and its
deploy templates say "its version should be 3.7.6 64bit". The probe starts the interpreter once, in the checkout,
with a time bound: it prints its version and, when that is the one ALAS needs, imports ALAS's entry point
(``alas.py``: its config, logger and exception modules and the packages they import), as ``python alas.py``
would. What it prints decides; a probe that hangs is killed with its whole process group.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

from alas_wrapped.driver import marked
from engine.core.errors import ConfigError, ProbeTimeout

NEEDED = (3, 7)
"""The Python ALAS needs when its requirements.txt does not say (its deploy templates: 3.7.6 64bit)."""
PROBE_TIMEOUT_S = 30.0
"""Bound of the probe on its own. Importing the real ALAS took 0.75-1.28 s on a quiet 2-core machine and 3.5-4.1 s on
a busy one (issue 44), and longer where antivirus scans every .pyc: the probe never runs where a listing waits for it,
only inside alas_run's own bound (the lower of the two)."""
MARK = "ALAS_WRAPPED_PROBE"
PROBE = f"""
import json, os, sys
need = tuple(int(x) for x in sys.argv[1].split("."))
answer = {{"version": list(sys.version_info[:3]), "error": None}}
if tuple(sys.version_info[:2]) == need:
    sys.path.insert(0, os.getcwd())
    sys.argv[0] = os.path.join(os.getcwd(), "alas.py")
    try:
        import alas
        alas.AzurLaneAutoScript
    except BaseException as exc:
        answer["error"] = "%s: %s" % (type(exc).__name__, exc)
print("{MARK} " + json.dumps(answer), flush=True)
"""


_VERDICTS: dict[tuple, str] = {}
"""Interpreters that passed, for this process: verdict_key -> version."""


def checkout_commit(root: Path) -> str:
    """The commit the checkout's .git says it is at, read from its files (no git needed), or "" when not a git
    checkout (ALAS's installer makes one; a copied folder has none)."""
    git = root / ".git"
    try:
        head = (git / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
        if not head.startswith("ref:"):
            return head[:64]
        ref = head[4:].strip()
        if (git / ref).is_file():
            return (git / ref).read_text(encoding="utf-8", errors="replace").strip()[:64]
        packed = (git / "packed-refs").read_text(encoding="utf-8", errors="replace")
        found = re.search(rf"^([0-9a-f]{{40,64}}) {re.escape(ref)}$", packed, re.M)
        return found.group(1) if found else ref
    except OSError:
        return ""


def verdict_key(root: Path, python: str) -> tuple:
    """What a verdict holds for: the checkout's commit (and folder, and the Python its requirements.txt names) and the
    interpreter's real path and mtime (a new venv, an upgraded Python or an ALAS update asks again)."""
    real = os.path.realpath(python)
    try:
        mtime = os.stat(real).st_mtime_ns
    except OSError:
        mtime = -1
    return checkout_commit(root), str(root), needed_version(root), real, mtime


def known_verdict(root: Path, python: str) -> str | None:
    """The version a passed probe found for this checkout and interpreter in this process, or None."""
    return _VERDICTS.get(verdict_key(root, python))


def needed_version(root: Path) -> tuple[int, int]:
    """The Python version the checkout's requirements.txt was compiled for (its pip-compile header), else NEEDED."""
    try:
        with open(root / "requirements.txt", encoding="utf-8", errors="replace") as f:
            head = f.read(4096)
    except OSError:
        return NEEDED
    found = re.search(r"pip-compile with Python (\d+)\.(\d+)", head)
    return (int(found.group(1)), int(found.group(2))) if found else NEEDED


def check_python(root: Path, python: str, env: dict[str, str], timeout: float = PROBE_TIMEOUT_S) -> str:
    """The interpreter's version ("3.7.16") when it can run the checkout's ALAS. A pass is kept for the process
    (verdict_key): the probe costs once per checkout and interpreter; a failure is asked again next time, so a
    repaired venv is seen without a restart.

    Raises:
        ProbeTimeout: it did not answer within `timeout` (the process group is killed).
        ConfigError: it cannot be started, is not the Python ALAS needs, or cannot import ALAS (each said with what
            to do).
    """
    key = verdict_key(root, python)
    if key in _VERDICTS:
        return _VERDICTS[key]
    need = needed_version(root)
    want = ".".join(map(str, need))
    try:
        proc = subprocess.Popen([python, "-c", PROBE, want], cwd=root, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                start_new_session=True)
    except OSError as exc:
        raise ConfigError(f"--alas-python {python}: cannot start it ({exc.strerror or exc}); pass the Python ALAS "
                          f"runs under (Python {want}: its venv's python, or toolkit/python.exe on Windows)") from None
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise ProbeTimeout(f"--alas-python {python}: importing ALAS from {root} did not finish within "
                           f"{timeout:g} s") from None
    answer = marked(out.splitlines(), MARK)
    if answer is None:
        tail = " | ".join(out.strip().splitlines()[-3:])[:300]
        raise ConfigError(f"--alas-python {python}: not a Python that runs ALAS (exit {proc.returncode}"
                          + (f": {tail}" if tail else "") + ")")
    version = ".".join(map(str, answer.get("version") or []))
    if tuple((answer.get("version") or [])[:2]) != need:
        raise ConfigError(f"--alas-python {python} is Python {version}, but ALAS at {root} needs Python {want} "
                          "(its requirements.txt is compiled for it); pass ALAS's own interpreter")
    if answer.get("error"):
        raise ConfigError(f"--alas-python {python} (Python {version}) cannot import ALAS from {root}: "
                          f"{str(answer['error'])[:300]}; install ALAS's requirements.txt into it")
    _VERDICTS[key] = version
    return version


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # a process outside the group holds the pipe: leave it to the OS
        pass
