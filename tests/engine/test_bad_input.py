"""The shared bad-input corpus (tests/data/bad_input/<area>/<case>/case.yaml, format in its README.md): every case
runs in a child process under an address-space limit and a time bound, and must exit with its code, name its
file:line and message, stay under its peak RSS, and never print a traceback.

Command cases (``argv``) run a few at a time (the machine has 2 cores); MCP cases (``mcp``) all go through one
``python -m engine serve`` child under the same limit, each call checked for its status, and the server's stderr
for tracebacks at the end. Every area folder found is picked up, whoever added it.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from tests.speed import within

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "bad_input"

ADDRESS_SPACE_MB = 1536
"""RLIMIT_AS of every child. Measured peaks of virtual memory (VmPeak): `validate` 536 MB, `observe` of one frame
690 MB, `goto` on the embedded simulator 900 MB (numpy, OpenCV, onnxruntime and their thread pools reserve far more
than they touch). 1.5 GB leaves room for those, and is still less than decoding a 20000x20000 image needs."""
PARALLEL = 3
"""Command cases run at once: the children mostly wait (imports, I/O), and 3 keeps 2 cores busy."""
DEFAULT_TIME_S = 20.0
DEFAULT_MEMORY_MB = 600.0

# What both children do: run `python -m engine ARGV` and, however it ends, write their own peak RSS (KB) to a file.
# VmHWM is the process's own peak since exec; getrusage's ru_maxrss would also count the pytest it was forked from.
_RUN_AND_REPORT = """\
try:
    runpy.run_module("engine", run_name="__main__", alter_sys=True)
finally:
    peak = next((line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")), None)
    with open(rss_file, "w") as out:
        out.write(peak or str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
"""

# The command child.
CHILD = """\
import resource, runpy, sys
rss_file, sys.argv = sys.argv[1], ["engine", *sys.argv[2:]]
""" + _RUN_AND_REPORT

# The MCP server child: the same, with its stderr in a file the harness reads at the end.
SERVER = """\
import os, resource, runpy, sys
rss_file, err_file, sys.argv = sys.argv[1], sys.argv[2], ["engine", *sys.argv[3:]]
os.dup2(os.open(err_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), 2)
""" + _RUN_AND_REPORT


def limit_address_space() -> None:
    """preexec_fn of every child: the address-space bound."""
    limit = ADDRESS_SPACE_MB * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if (not k.startswith("ENGINE_") or k == "ENGINE_HOME") and k != "GEMINI_API_KEY"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("ADBUTILS_ADB_PATH", "/bin/false")
    env["ENGINE_SERIAL"] = "sim"  # the built-in simulator, never a device a scan finds (engine.faces.pick)
    return env


def load_cases() -> tuple[list[tuple[str, Path, dict]], list[tuple[str, Path, dict]]]:
    """(command cases, MCP cases), each as (id ``area/name``, folder, case.yaml)."""
    commands, mcp = [], []
    for path in sorted(CORPUS.glob("*/*/case.yaml")):
        case = yaml.safe_load(path.read_text()) or {}
        entry = (f"{path.parent.parent.name}/{path.parent.name}", path.parent, case)
        (mcp if "mcp" in case else commands).append(entry)
    return commands, mcp


COMMAND_CASES, MCP_CASES = load_cases()


def write_png(path: Path, width: int, height: int) -> None:
    """A valid 1-bit greyscale PNG of any size, streamed: 20000x20000 is 50 KB on disk, 1.2 GB decoded as BGR."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    row = b"\0" * (1 + (width + 7) // 8)
    packer = zlib.compressobj(9)
    with open(path, "wb") as out:
        out.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)))
        body = b"".join([packer.compress(row) for _ in range(height)] + [packer.flush()])
        out.write(chunk(b"IDAT", body) + chunk(b"IEND", b""))


def generate(folder: Path, spec: dict) -> None:
    kind = spec.get("kind")
    if kind != "png":
        raise ValueError(f"generate: unknown kind {kind!r} (known: png)")
    write_png(folder / spec["name"], int(spec["width"]), int(spec["height"]))


def prepare(case_dir: Path, case: dict, scratch: Path) -> tuple[Path, Path]:
    """A fresh copy of the case folder (and its generated file) and an empty scratch folder."""
    copy = scratch / "case"
    shutil.copytree(case_dir, copy)
    if case.get("generate"):
        generate(copy, case["generate"])
    tmp = scratch / "tmp"
    tmp.mkdir()
    return copy, tmp


def expand(value: str, copy: Path, tmp: Path) -> str:
    return str(value).replace("{case}", str(copy)).replace("{tmp}", str(tmp))


def run_case(case_dir: Path, case: dict, slack: float = 0.0) -> dict:
    """Run one command case within its time_s plus `slack` (the machine's start-up cost, measured in this run);
    what the harness asserts on."""
    with tempfile.TemporaryDirectory(prefix="bad_input_") as scratch:
        copy, tmp = prepare(case_dir, case, Path(scratch))
        argv = [expand(arg, copy, tmp) for arg in case["argv"]]
        rss_file = Path(scratch) / "rss"
        started = time.monotonic()
        try:
            proc = subprocess.run([sys.executable, "-c", CHILD, str(rss_file), *argv], cwd=ROOT, env=child_env(),
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
                                  timeout=float(case.get("time_s", DEFAULT_TIME_S)) + slack,
                                  preexec_fn=limit_address_space)
        except subprocess.TimeoutExpired as exc:
            return {"timeout": True, "elapsed": time.monotonic() - started, "output": str(exc.stderr or "")}
        elapsed = time.monotonic() - started
        rss_kb = int(rss_file.read_text()) if rss_file.exists() else None
    return {"timeout": False, "elapsed": elapsed, "code": proc.returncode, "stdout": proc.stdout,
            "stderr": proc.stderr, "rss_mb": None if rss_kb is None else rss_kb / 1024}


@pytest.fixture(scope="module")
def command_runs(request) -> dict[str, dict]:
    """Run every selected command case, PARALLEL at a time, once for the module."""
    selected = {item.callspec.params["case_id"] for item in request.session.items
                if item.originalname == "test_command_case" and hasattr(item, "callspec")}
    todo = [(cid, folder, case) for cid, folder, case in COMMAND_CASES if cid in selected]
    slack = START_UP_FACTOR * start_up_seconds()
    with ThreadPoolExecutor(PARALLEL) as pool:
        runs = pool.map(lambda entry: (entry[0], {**run_case(entry[1], entry[2], slack), "slack": slack}), todo)
        return dict(runs)


START_UP_FACTOR = 2.0
"""A case's bound is its time_s plus this many times what starting a child and validating a small graph costs on
this machine now (a case's own work is bounded by time_s; starting Python and importing the engine takes 1-2 s on a
quiet machine and 7-9 s with the machine's cores oversubscribed, which no time_s should have to guess)."""


def start_up_seconds() -> float:
    """Wall seconds of the slowest of PARALLEL children run at once, as the cases are, each validating the small
    generic graph: the start-up cost the cases' bounds are measured on top of."""
    argv = [sys.executable, "-c", CHILD, os.devnull, "validate", str(ROOT / "tests/data/graphs/good")]

    def one(_: int) -> float:
        started = time.monotonic()
        subprocess.run(argv, cwd=ROOT, env=child_env(), stdin=subprocess.DEVNULL, capture_output=True, timeout=300)
        return time.monotonic() - started

    with ThreadPoolExecutor(PARALLEL) as pool:
        return max(pool.map(one, range(PARALLEL)))


def check_output(case_id: str, case: dict, text: str) -> None:
    assert "Traceback" not in text, f"{case_id}: a traceback:\n{text[-2000:]}"
    if case.get("where"):
        assert case["where"] in text, f"{case_id}: {case['where']!r} not in the output:\n{text[-1500:]}"
    if case.get("message"):
        assert case["message"].lower() in text.lower(), f"{case_id}: {case['message']!r} not in:\n{text[-1500:]}"
        if case.get("once"):
            count = text.lower().count(case["message"].lower())
            assert count == 1, f"{case_id}: {case['message']!r} said {count} times:\n{text[-1500:]}"
    for part in case.get("absent", []):
        assert part.lower() not in text.lower(), f"{case_id}: {part!r} in the output:\n{text[-1500:]}"


@pytest.mark.parametrize("case_id", [cid for cid, _, _ in COMMAND_CASES])
def test_command_case(case_id: str, command_runs: dict[str, dict]) -> None:
    case = next(case for cid, _, case in COMMAND_CASES if cid == case_id)
    assert {"description", "argv", "exit"} <= set(case), f"{case_id}: case.yaml needs description, argv and exit"
    run = command_runs[case_id]
    assert not run["timeout"], (f"{case_id}: still running after {case.get('time_s', DEFAULT_TIME_S)} s + "
                                f"{run['slack']:.1f} s of start-up")
    output = run["stdout"] + run["stderr"]
    assert run["code"] == case["exit"], f"{case_id}: exit {run['code']}, expected {case['exit']}:\n{output[-1500:]}"
    check_output(case_id, case, output)
    assert run["rss_mb"] is not None, f"{case_id}: the child wrote no peak RSS (killed?):\n{output[-1500:]}"
    bound = float(case.get("memory_mb", DEFAULT_MEMORY_MB))
    assert run["rss_mb"] <= bound, f"{case_id}: peak RSS {run['rss_mb']:.0f} MB over {bound:.0f} MB"


# --------------------------------------------------------------------------------------------- MCP cases


class McpServer:
    """One ``python -m engine serve`` child under the address-space limit, driven by the SDK client."""

    def __init__(self, scratch: Path) -> None:
        from anyio.from_thread import start_blocking_portal
        from mcp import Client, StdioServerParameters

        self.rss_file, self.err_file = scratch / "rss", scratch / "stderr"
        # The SDK starts the child itself (no preexec_fn): the child sets its own limit before importing anything.
        code = f"import resource; resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE_MB << 20}, " \
               f"{ADDRESS_SPACE_MB << 20}))\n" + SERVER
        params = StdioServerParameters(command=sys.executable,
                                       args=["-c", code, str(self.rss_file), str(self.err_file), "serve"],
                                       cwd=str(ROOT), env=child_env())
        self._portal_cm = start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        self._client_cm = self.portal.wrap_async_context_manager(Client(params, read_timeout_seconds=60))
        try:
            self.client = self._client_cm.__enter__()
        except BaseException:
            self._portal_cm.__exit__(None, None, None)
            raise

    def call(self, tool: str, arguments: object):
        return self.portal.call(lambda: self.client.call_tool(tool, arguments))

    def close(self) -> None:
        try:
            self._client_cm.__exit__(None, None, None)
        finally:
            self._portal_cm.__exit__(None, None, None)


@pytest.fixture(scope="module")
def mcp_server(tmp_path_factory):
    server = McpServer(tmp_path_factory.mktemp("bad_input_mcp"))
    yield server
    server.close()
    deadline = time.monotonic() + 10
    while not server.rss_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # the child writes its peak RSS as it exits
    errors = server.err_file.read_text(errors="replace") if server.err_file.exists() else ""
    assert "Traceback" not in errors, f"the MCP server printed a traceback:\n{errors[-3000:]}"
    if server.rss_file.exists():
        assert int(server.rss_file.read_text()) / 1024 <= DEFAULT_MEMORY_MB


@pytest.mark.parametrize("case_id", [cid for cid, _, _ in MCP_CASES])
def test_mcp_case(case_id: str, mcp_server: McpServer) -> None:
    case = next(case for cid, _, case in MCP_CASES if cid == case_id)
    call = case["mcp"]
    started = time.monotonic()
    result = mcp_server.call(call["tool"], call.get("arguments", {}))
    elapsed = time.monotonic() - started
    body = result.structured_content
    assert body is not None, f"{case_id}: no structured result: {result.content}"
    assert json.loads(result.content[0].text) == body
    assert body["status"] == case["status"], f"{case_id}: status {body['status']!r}: {body['text']}"
    assert result.is_error is not case.get("ok", False)
    check_output(case_id, case, body["text"] + "\n" + json.dumps(body["data"].get("errors", [])))
    within(elapsed, float(case.get("time_s", DEFAULT_TIME_S)), "bad-input MCP call answered, wall (s)")
