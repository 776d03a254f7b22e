"""What a failed model call means, by the Gemini API's documented error codes, and whether to try again.

The table follows the Gemini API's troubleshooting page (ai.google.dev/gemini-api/docs/troubleshooting, "Gemini API
backend service error codes"): 400 INVALID_ARGUMENT / FAILED_PRECONDITION, 403 PERMISSION_DENIED, 404 NOT_FOUND,
429 RESOURCE_EXHAUSTED, 500 INTERNAL, 503 UNAVAILABLE and 504 DEADLINE_EXCEEDED, plus 401 UNAUTHENTICATED of
Google's API error model. A bad key comes back from Gemini as 400 INVALID_ARGUMENT whose details carry the reason
API_KEY_INVALID; it is told as a key problem. 429, 500, 503 and 504 are transient (the page advises waiting and
retrying); every other code stops at once: retrying a bad request, a bad key or a model that is gone only spends
money. A 429 may say how long to wait: the Retry-After header, or a google.rpc.RetryInfo ``retryDelay`` in the
error's details; the caller honours the longer of that and its own backoff.

Every failure becomes one ModelError whose ``reason`` is a short word (REASONS) and whose context carries the
HTTP ``code``, the service's ``service_status`` and ``service_message`` (its own words, redacted and cut), a
``hint`` for the user and ``retry_after`` seconds when the service gave one.
"""

from __future__ import annotations

import email.utils
import re
import time
from dataclasses import dataclass
from typing import Any

from engine.core.errors import ModelError
from engine.core.redact import redact_text

MESSAGE_CHARS = 400
"""How much of the service's message an error keeps."""


@dataclass(frozen=True)
class Meaning:
    """One documented error code: the reason word, whether a retry may help, and what the user can do."""

    status: str
    reason: str
    retried: bool
    hint: str


MODEL_HINT = ("choose another model with --model or ENGINE_AGENT_MODEL (the default is the `model` policy's model "
              "in policies/default.yaml; Google lists the served ones at ai.google.dev/gemini-api/docs/models)")
KEY_HINT = "check GEMINI_API_KEY: the service did not accept it (keys are made at aistudio.google.com/apikey)"

CODES: dict[int, Meaning] = {
    400: Meaning("INVALID_ARGUMENT", "bad_request", False,
                 "the service refused the request; check the model name and ENGINE_AGENT_BASE_URL, and report it "
                 "if they are right (the engine built this request)"),
    401: Meaning("UNAUTHENTICATED", "unauthenticated", False, KEY_HINT),
    403: Meaning("PERMISSION_DENIED", "permission_denied", False,
                 "the key may not use this model: check GEMINI_API_KEY and its project's access, or " + MODEL_HINT),
    404: Meaning("NOT_FOUND", "not_found", False, "the model is not served (retired or misspelt): " + MODEL_HINT),
    429: Meaning("RESOURCE_EXHAUSTED", "rate_limited", True,
                 "the key's rate limit or quota is used up: wait, lower the pace, or raise the quota"),
    500: Meaning("INTERNAL", "server_error", True, "the service failed; it usually passes, try again later"),
    503: Meaning("UNAVAILABLE", "unavailable", True, "the service is overloaded or down; try again later"),
    504: Meaning("DEADLINE_EXCEEDED", "server_timeout", True,
                 "the service ran out of time; a larger `model` policy timeout may help"),
}
RETRIED_REASONS = frozenset(m.reason for m in CODES.values() if m.retried)
STOPPING_REASONS = frozenset({"bad_request", "unauthenticated", "permission_denied", "not_found", "not_configured"})
"""Reasons that no later turn can fix: the episode stops and the user is told what to change."""
CONFIGURATION_REASONS = frozenset({"unauthenticated", "permission_denied", "not_found", "not_configured"})
"""The user's configuration is at fault (key, model): the CLI exits 2, as for other bad input."""


def meaning(code: int) -> Meaning:
    """The documented meaning of HTTP `code` (an undocumented 4xx is a bad request, a 5xx a server error)."""
    if code in CODES:
        return CODES[code]
    if 400 <= code < 500:
        return Meaning(f"HTTP {code}", "bad_request", False, CODES[400].hint)
    return Meaning(f"HTTP {code}", "server_error", True, CODES[500].hint)


def api_failure(exc: Any, *, model: str) -> ModelError:
    """The ModelError for a google.genai.errors.APIError (duck-typed: ``code``, ``status``, ``message``,
    ``details``, ``response``)."""
    code = int(getattr(exc, "code", 0) or 0)
    found = meaning(code)
    details = getattr(exc, "details", None)
    reason, hint = found.reason, found.hint
    if "API_KEY_INVALID" in _reasons(details):
        reason, hint = "unauthenticated", KEY_HINT
    said = redact_text(str(getattr(exc, "message", None) or "")).strip()[:MESSAGE_CHARS]
    status = str(getattr(exc, "status", None) or found.status)
    wait = retry_after(getattr(exc, "response", None), details) if found.retried else None
    text = f"the model service answered {code} {status}" + (f": {said}" if said else "")
    return ModelError(text, reason=reason, model=model, code=code, service_status=status,
                      service_message=said or None, hint=hint, retry_after=wait)


def retry_after(response: Any, details: Any = None, *, now: float | None = None) -> float | None:
    """Seconds the service asks to wait: the Retry-After header (seconds or an HTTP date), else a
    google.rpc.RetryInfo ``retryDelay`` ("37s") in the error's details; None when it says nothing usable."""
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if value:
        value = str(value).strip()
        if re.fullmatch(r"\d+(\.\d+)?", value):
            return float(value)
        try:
            when = email.utils.parsedate_to_datetime(value).timestamp()
        except (TypeError, ValueError, IndexError, OverflowError):
            when = None
        if when is not None:
            return max(0.0, when - (time.time() if now is None else now))
    for item in _details(details):
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        match = re.fullmatch(r"(\d+(?:\.\d+)?)s", str(delay or ""))
        if match:
            return float(match.group(1))
    return None


def _details(body: Any) -> list[Any]:
    error = body.get("error", body) if isinstance(body, dict) else None
    items = error.get("details") if isinstance(error, dict) else None
    return items if isinstance(items, list) else []


def _reasons(body: Any) -> set[str]:
    return {str(item.get("reason")) for item in _details(body) if isinstance(item, dict) and item.get("reason")}
