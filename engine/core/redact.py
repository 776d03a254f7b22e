"""Redaction: the one rule for what never leaves the process, used by logs, transcripts, results and stdout.

A secret is any of:

- the value of an environment variable in SECRET_ENV_VARS (GEMINI_API_KEY, GOOGLE_API_KEY, ENGINE_MCP_TOKEN),
  wherever it appears;
- a value registered with :func:`add_secret` (an API key given in code, which no environment variable holds);
- a string shaped like a Google credential: an API key (``AIza`` and 35 more key characters) or an OAuth access
  token (``ya29.``), and the credential after ``Bearer``; the password in a URL (``scheme://user:PASSWORD@``);
- anything stored under a key that names a secret (``api_key``, ``token``, ``Authorization``, ...).

Each is replaced by ``[redacted]``. :func:`scrub` keeps the shape of what it is given (dicts, lists and tuples
stay what they are; only strings change); :func:`redact` also makes the value JSON-ready, for the transcript.
:class:`RedactingStream` applies the same rule to a text stream; the CLI puts stderr (its logs, progress and error
lines) behind one, and prints its results through :func:`redact_text`.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np

REDACTED = "[redacted]"
SECRET_ENV_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "ENGINE_MCP_TOKEN")
"""Environment variables whose values are never written, whatever key they hide under."""
MIN_SECRET_CHARS = 4
"""Shorter values are not treated as secrets (blanking every "a" would hide everything and protect nothing)."""

# "key" alone is a key press (KeyAction.key: back); a key with a qualifier (api_key, gemini-key) is a secret.
_SECRET_KEY = re.compile(
    r"(?i)(^|[_\-.])(api|access|secret|private|gemini|google)?[_\-]?key$|apikey|token$|secret|passw(or)?d|"
    r"credential|authori[sz]ation|cookie"
)
_SHAPED = re.compile(r"AIza[0-9A-Za-z_\-]{30,}|ya29\.[0-9A-Za-z_\-.]{10,}|(?<=Bearer )[0-9A-Za-z_\-.=+/]{8,}")

# the password of a URL (postgresql://user:PASSWORD@host/db, mailto://user:PASSWORD@...), whoever printed it
# A scheme starts where no scheme character stands before it and is at most 32 long: without both, a long run of
# letters is tried from each of its characters, and a megabyte of them took minutes (quadratic backtracking).
_URL_PASSWORD = re.compile(r"(?<![A-Za-z0-9+.\-])([A-Za-z][A-Za-z0-9+.\-]{0,31}://[^:/@\s]{0,256}:)[^@\s/]+@")

_registered: set[str] = set()
_registered_lock = threading.Lock()


def add_secret(value: str | None) -> None:
    """Treat `value` as a secret from now on (an API key handed to a client in code rather than by environment)."""
    if value and len(value) >= MIN_SECRET_CHARS:
        with _registered_lock:
            _registered.add(value)


def known_secrets() -> tuple[str, ...]:
    """Every literal secret known now: the registered ones and the secret environment variables' values."""
    found = {v for v in (os.environ.get(name) for name in SECRET_ENV_VARS) if v and len(v) >= MIN_SECRET_CHARS}
    with _registered_lock:
        found |= _registered
    return tuple(sorted(found, key=len, reverse=True))  # longest first: a secret inside another goes whole


def is_secret_key(key: str) -> bool:
    """Whether a field called `key` holds something that must not be written (``api_key``, ``token`` ...)."""
    return key.lower() != "key" and bool(_SECRET_KEY.search(key))


def redact_text(text: str, known: Sequence[str] | None = None) -> str:
    """`text` with every secret (literal or credential-shaped) replaced by ``[redacted]``."""
    for secret in known_secrets() if known is None else known:
        if secret in text:
            text = text.replace(secret, REDACTED)
    text = _SHAPED.sub(REDACTED, text)
    return _URL_PASSWORD.sub(rf"\1{REDACTED}@", text) if "://" in text else text


def scrub(value: Any, *, known: Sequence[str] | None = None) -> Any:
    """`value` with its secrets redacted, keeping its shape (mappings become dicts; other objects are kept)."""
    return _scrub(value, known_secrets() if known is None else tuple(known))


def _scrub(value: Any, known: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return redact_text(value, known)
    if isinstance(value, Mapping):
        return {k: (REDACTED if isinstance(k, str) and is_secret_key(k) and v is not None else _scrub(v, known))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, known) for v in value]
    if isinstance(value, tuple):
        return tuple(_scrub(v, known) for v in value)
    return value


def redact(value: Any, *, secrets: Sequence[str] | None = None) -> Any:
    """`value` made JSON-ready with every secret replaced by ``[redacted]``.

    Args:
        value: any mix of mappings, sequences, dataclasses, records with ``to_dict()``, arrays and scalars.
        secrets: literal strings to blank out wherever they occur; default: :func:`known_secrets`.
    """
    known = known_secrets() if secrets is None else tuple(secrets)
    return _redact(value, known)


def _redact(value: Any, known: tuple[str, ...]) -> Any:
    if isinstance(value, str):
        return redact_text(value, known)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, enum.Enum):
        return _redact(value.value, known)
    if isinstance(value, Mapping):
        return {str(k): (REDACTED if is_secret_key(str(k)) and v is not None else _redact(v, known))
                for k, v in value.items()}
    if isinstance(value, np.ndarray):
        # Frames belong in error bundles, not in the ledger: a line stays a line.
        return {"ndarray": list(value.shape), "dtype": str(value.dtype)}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (bytes, bytearray)):
        return {"bytes": len(value)}
    if isinstance(value, Path):
        return str(value)
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return _redact(to_dict(), known)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _redact(dataclasses.asdict(value), known)
    model_dump = getattr(value, "model_dump", None)
    if callable(model_dump):
        return _redact(model_dump(mode="json"), known)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_redact(v, known) for v in value]
    return _redact(str(value), known)


class RedactingStream:
    """A text stream whose every write is redacted first: the CLI puts stderr (logs, progress, error lines) behind
    one, so nothing a command or library prints there can leak a secret. Everything else goes to `inner`."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        self.inner.write(redact_text(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
