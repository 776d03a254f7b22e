"""The one google-genai client of the engine: a generateContent call with one deadline and one size bound.

google-genai's own timeout (HttpOptions.timeout) bounds each read of the socket, not the call: a server that
trickles a byte every half second keeps a call alive for ever. So every call here runs on the client's async API
(``client.aio``) inside ``asyncio.wait_for`` on a private event loop (one daemon thread per GeminiClient): when
the deadline passes the coroutine is cancelled, httpx closes the connection, and the caller has its answer at
the deadline, whatever the server does. Nothing keeps reading past it.

Every response is bounded too. The client's transport (HttpOptions.async_client_args ``transport``: httpx's public
extension point, which also keeps google-genai on httpx when aiohttp is installed) refuses a response whose
Content-Length is over ``max_response_bytes`` before its body is read, and counts the bytes of one without it as
they arrive, refusing it at the bound (ModelError reason ``oversized``).

Failures are classified by the API's documented codes (engine.llm.errors). With a `policy` (the ``model`` policy),
429, 500, 503 and 504 are tried again with the policy's backoff, or the wait the service asked for when longer
(Retry-After), all inside the caller's timeout; everything else raises at once. The API key is registered with
engine.core.redact, so it never reaches a log line, an error, a transcript or stdout.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import tenacity

from engine.core.errors import ModelError, ResponseTooLarge
from engine.core.redact import add_secret, redact_text
from engine.llm.errors import RETRIED_REASONS, api_failure

log = logging.getLogger(__name__)

MAX_RESPONSE_BYTES = 1024 * 1024
"""The largest response accepted (a function call answer is a few kilobytes; a thought signature adds some)."""
GRACE_S = 0.5
"""How long past the deadline the caller waits for the loop to deliver the cancellation (never the server)."""
CLOSE_S = 1.0


class GeminiClient:
    """A google-genai client whose every call is bounded in time and size.

    Args:
        api_key: the Gemini API key (registered as a secret; never logged nor put in an error).
        base_url: another endpoint than Google's (a local server in tests).
        max_response_bytes: the largest response accepted.
    """

    def __init__(self, api_key: str, *, base_url: str | None = None,
                 max_response_bytes: int = MAX_RESPONSE_BYTES) -> None:
        from google import genai
        from google.genai import types

        if not api_key:
            raise ModelError("no API key for the model (set GEMINI_API_KEY)", reason="not_configured")
        add_secret(api_key)
        self.base_url = base_url
        self.max_response_bytes = int(max_response_bytes)
        self.types = types
        self._transport = capped_transport(self.max_response_bytes)
        options = types.HttpOptions(base_url=base_url, retry_options=types.HttpRetryOptions(attempts=1),
                                    async_client_args={"transport": self._transport})
        self._client = genai.Client(api_key=api_key, http_options=options)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"GeminiClient(base_url={self.base_url!r})"

    # ------------------------------------------------------------------------------------------------ calls

    def generate(self, model: str, contents: Any, config: Any, *, timeout: float, policy: Any = None,
                 sleep: Callable[[float], None] = time.sleep) -> Any:
        """The GenerateContentResponse of one generateContent call, within `timeout` seconds in all.

        Args:
            model: the model name.
            contents, config: what google-genai's generate_content takes (config: GenerateContentConfig).
            timeout: the bound of the whole call, retries and waits included.
            policy: an engine.config.policies.Policy whose attempts and wait retry the transient codes (None: one try).
            sleep: the pause between tries (tests pass a recorder).

        Raises:
            ModelError: reason timeout, oversized, malformed, unavailable, or the code's reason (engine.llm.errors).
        """
        deadline = time.monotonic() + timeout
        if policy is None or policy.attempts <= 1:
            return self._attempt(model, contents, config, deadline)
        base = policy.wait_strategy()

        def wait(state: tenacity.RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome is not None else None
            asked = exc.context.get("retry_after") if isinstance(exc, ModelError) else None
            return max(base(state), float(asked or 0.0))

        retrying = policy.retrying(sleep=sleep, timeout=timeout).copy(
            wait=wait, retry=tenacity.retry_if_exception(_transient))
        try:
            return retrying(self._attempt, model, contents, config, deadline)
        except ModelError as exc:
            asked = exc.context.get("retry_after")
            left = deadline - time.monotonic()
            if asked and exc.reason in RETRIED_REASONS and asked > left:
                exc.message = f"{exc.message} (it asked to wait {asked:g} s; {max(0.0, left):.1f} s were left)"
                exc.args = (exc.message,)
            raise

    def close(self) -> None:
        """Close the connections and stop the private event loop (the client cannot be used afterwards)."""
        with self._lock:
            loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None:
            return
        # The SDK closes its own client from 1.39 on; the connections are our transport's, so it is closed too
        # (on older releases it is the only thing that closes them).
        closers = [c for c in (getattr(self._client.aio, "aclose", None), self._transport.aclose) if c is not None]
        for aclose in closers:
            try:
                asyncio.run_coroutine_threadsafe(aclose(), loop).result(CLOSE_S)
            except Exception:  # noqa: BLE001 - closing is best effort; the loop stops either way
                log.debug("closing the model client's connections failed", exc_info=True)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(CLOSE_S)
        if not loop.is_running():
            loop.close()

    # ------------------------------------------------------------------------------------------------ internals

    def _attempt(self, model: str, contents: Any, config: Any, deadline: float) -> Any:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ModelError("no time left for another model call", reason="timeout", model=model)
        types = self.types
        per_read = types.HttpOptions(timeout=max(1, int(left * 1000)), retry_options=types.HttpRetryOptions(attempts=1))
        config = config.model_copy(update={"http_options": per_read})
        future = asyncio.run_coroutine_threadsafe(self._bounded(model, contents, config, left), self._running_loop())
        try:
            return future.result(timeout=left + GRACE_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            failure = _timeout(model, left)
        except ModelError:
            raise
        except Exception as exc:  # noqa: BLE001 - every client failure becomes one ModelError
            failure = self._failure(exc, model)
        raise failure  # outside the handler: the client's exception (which may quote the request) is not chained

    async def _bounded(self, model: str, contents: Any, config: Any, left: float) -> Any:
        call = self._client.aio.models.generate_content(model=model, contents=contents, config=config)
        try:
            return await asyncio.wait_for(call, timeout=left)
        except asyncio.TimeoutError:
            raise _timeout(model, left) from None

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="gemini-client", daemon=True)
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def _failure(self, exc: Exception, model: str) -> ModelError:
        from google.genai import errors as genai_errors

        name = type(exc).__name__
        if isinstance(exc, genai_errors.APIError):
            return api_failure(exc, model=model)
        if isinstance(exc, ResponseTooLarge):
            return ModelError(f"the model's answer was refused: {exc}", reason="oversized", model=model,
                              size=exc.size, limit=exc.limit)
        if "timeout" in name.lower() or isinstance(exc, TimeoutError):
            return ModelError(f"the model call timed out ({name})", reason="timeout", model=model)
        text = redact_text(str(exc))[:300]
        if isinstance(exc, (ValueError, TypeError, KeyError)):  # JSON and pydantic errors: an unreadable answer
            return ModelError(f"the model's answer cannot be read: {name}: {text}", reason="malformed", model=model)
        where = self.base_url or "the Gemini API"
        return ModelError(f"cannot reach the model service ({where}): {name}: {text}", reason="unavailable",
                          model=model, hint="check the network and ENGINE_AGENT_BASE_URL")


def _transient(exc: BaseException) -> bool:
    return isinstance(exc, ModelError) and exc.reason in RETRIED_REASONS


def _timeout(model: str, seconds: float) -> ModelError:
    return ModelError(f"the model did not answer within {seconds:.1f} s", reason="timeout", model=model)


def capped_transport(limit: int) -> Any:
    """An async HTTP transport that refuses responses over `limit` bytes (ResponseTooLarge), declared or counted.

    It is built on httpx when installed, else on httpx2 (the fork google-genai 3 may use instead): google-genai picks
    its HTTP backend from the transport's package, so the client and the transport always match."""
    try:
        import httpx as http
    except ImportError:
        import httpx2 as http  # type: ignore[no-redef]

    class Counted(http.AsyncByteStream):
        def __init__(self, stream: Any) -> None:
            self.stream = stream

        async def __aiter__(self) -> Any:
            seen = 0
            async for chunk in self.stream:
                seen += len(chunk)
                if seen > limit:
                    raise ResponseTooLarge(seen, limit, declared=False)
                yield chunk

        async def aclose(self) -> None:
            await self.stream.aclose()

    class Capped(http.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = http.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            response = await self.inner.handle_async_request(request)
            declared = response.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                await response.aclose()
                raise ResponseTooLarge(int(declared), limit, declared=True)
            return http.Response(response.status_code, headers=response.headers, stream=Counted(response.stream),
                                 extensions=response.extensions)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return Capped()
