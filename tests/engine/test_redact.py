"""The one redactor: the same rule for logs, transcripts, results and stdout."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.core.redact import REDACTED, RedactingStream, add_secret, redact, redact_text, scrub
from engine.core.results import make_result
from engine.faces.cli import emit
from engine.runtime.transcript import Transcript
from tests.speed import within

ROOT = Path(__file__).resolve().parents[2]
SHAPED = "AIza" + "Sy" + "C" * 33
"""Shaped like a Google API key (AIza and 35 key characters); no environment variable holds it."""


def test_credential_shapes_env_values_and_registered_secrets_are_redacted(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "env-secret-value-42")
    add_secret("code-given-secret-77")
    text = (f"key {SHAPED}; token ya29.a0AfH6SMBx-abcdefghij; Authorization: Bearer abc.def-ghi_jkl; "
            "env env-secret-value-42 code code-given-secret-77; page_main stays")
    clean = redact_text(text)
    for secret in (SHAPED, "ya29.a0AfH6SMBx", "abc.def-ghi_jkl", "env-secret-value-42", "code-given-secret-77"):
        assert secret not in clean
    assert clean.count(REDACTED) == 5 and "page_main stays" in clean


def test_scrub_keeps_the_shape_and_redact_makes_it_json_ready():
    value = {"api_key": "x1", "key": "back", "notes": (f"a {SHAPED}", 3), "nested": [{"token": "t"}], "n": None}
    clean = scrub(value)
    assert clean == {"api_key": REDACTED, "key": "back", "notes": (f"a {REDACTED}", 3),
                     "nested": [{"token": REDACTED}], "n": None}
    assert redact(value)["notes"] == [f"a {REDACTED}", 3]


def test_results_and_stdout_are_redacted():
    result = make_result("agent", ok=False, status="blocked", text=f"saw {SHAPED}",
                         extra={"reasons": [f"the key is {SHAPED}"], "api_key": "k"})
    assert SHAPED not in json.dumps(result.to_dict()) and result.data["api_key"] == REDACTED
    for as_json in (True, False):
        out = io.StringIO()
        emit(result, as_json, out)
        assert SHAPED not in out.getvalue() and REDACTED in out.getvalue()


def test_transcript_lines_are_redacted(tmp_path):
    with Transcript(tmp_path / "t.jsonl") as transcript:
        transcript.record("x", note=f"leak {SHAPED}", headers={"Authorization": "Bearer zzzzzzzzzz"})
    text = (tmp_path / "t.jsonl").read_text()
    assert SHAPED not in text and "zzzzzzzzzz" not in text


def test_a_redacting_stream_redacts_log_lines_and_tracebacks():
    stream = io.StringIO()
    handler = logging.StreamHandler(RedactingStream(stream))
    logger = logging.getLogger("test_redact")
    logger.addHandler(handler)
    try:
        logger.warning("calling with %s", SHAPED)
        try:
            raise ValueError(f"bad key {SHAPED}")
        except ValueError:
            logger.exception("failed")
    finally:
        logger.removeHandler(handler)
    assert SHAPED not in stream.getvalue() and stream.getvalue().count(REDACTED) >= 2


def test_the_cli_redacts_what_it_prints_about_a_failure(tmp_path):
    """A command's error line on stderr goes through the redactor: here a page name shaped like a key."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "ENGINE_LOG_LEVEL": "DEBUG"}
    proc = subprocess.run([sys.executable, "-m", "engine", "route", "page_main", SHAPED], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert SHAPED not in proc.stdout + proc.stderr and REDACTED in proc.stderr


def test_the_password_of_a_url_is_redacted_wherever_it_is_printed():
    from engine.core.redact import redact_text

    text = redact_text("cannot reach postgresql://engine:s3cr%40t@db.lan:5432/fleet?sslmode=require; "
                       "http://127.0.0.1:8080/hook stays")
    assert "s3cr" not in text and "postgresql://engine:[redacted]@db.lan:5432/fleet?sslmode=require" in text
    assert "http://127.0.0.1:8080/hook stays" in text


@pytest.mark.parametrize("text", ["a" * 1_000_000, "a" * 500_000 + "://" + "b" * 500_000,
                                  ("ab://c:" + "d" * 1000) * 500, "x://" * 200_000])
def test_redacting_a_megabyte_costs_linear_time(text):
    """An oversized model answer or log line goes through redaction whole: the URL-password rule once backtracked
    quadratically on a long run of letters (minutes for a megabyte). CPU seconds, so load does not matter."""
    import time

    started = time.process_time()
    assert len(redact_text(text)) >= len(text) // 2
    within(time.process_time() - started, 1.0, "CPU seconds to redact a megabyte")
