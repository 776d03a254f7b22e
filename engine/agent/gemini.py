"""The Gemini provider: one agent turn through google-genai's generateContent with native function calling.

Tools are declared with JSON Schema parameters (``parameters_json_schema``) and automatic function calling is
disabled, so the model only proposes calls and the loop executes them. Each attempt is bounded twice (the client's
HttpOptions timeout and a hard wait on a worker thread); 429 and 5xx answers are retried with the ``model`` policy's
attempts and waits, inside the caller's ``timeout``. The API key is redacted from every message, log line and raw
response.

Configuration (``GeminiProvider.from_env``): GEMINI_API_KEY (required), ENGINE_AGENT_MODEL (default
gemini-2.5-flash), ENGINE_AGENT_BASE_URL (optional endpoint; tests point it at a local server).
"""

from __future__ import annotations

import base64
import concurrent.futures
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tenacity

from engine.agent.models import Call, Message, ModelTurn, ToolDecl, Usage
from engine.errors import ModelError
from engine.policies import Policy, load_policies

log = logging.getLogger(__name__)

DEFAULT_MODEL = "gemini-2.5-flash"
RETRIED_REASONS = frozenset({"rate_limited", "server_error"})
_REFUSALS = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"})
_GRACE_S = 1.0  # the outer bound leaves the client's own timeout a moment to fire first


def _redactor(secret: str) -> Callable[[Any], Any]:
    def redact(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(secret, "***") if secret else value
        if isinstance(value, dict):
            return {redact(k): redact(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [redact(v) for v in value]
        return value

    return redact


class GeminiProvider:
    """A Provider backed by Gemini (google-genai).

    Args:
        api_key: the Gemini API key (never logged nor put in an error).
        model: the model name.
        base_url: another endpoint than Google's (a local fake in tests).
        policy: retry policy of 429/5xx (default: the ``model`` policy of policies/default.yaml).
        sleep: replaces time.sleep between retries (tests pass a recorder so they never wait).
    """

    name = "gemini"

    def __init__(
        self,
        api_key: str,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        policy: Policy | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        from google import genai
        from google.genai import types

        if not api_key:
            raise ModelError("no API key for the agent's model (set GEMINI_API_KEY)", reason="not_configured")
        self._redact = _redactor(api_key)
        self.model = model
        self.base_url = base_url
        self.policy = policy if policy is not None else load_policies().get("model")
        self._sleep = sleep
        self._types = types
        options = types.HttpOptions(base_url=base_url, retry_options=types.HttpRetryOptions(attempts=1))
        self._client = genai.Client(api_key=api_key, http_options=options)
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=2, thread_name_prefix="agent-model")

    def __repr__(self) -> str:
        return f"GeminiProvider(model={self.model!r}, base_url={self.base_url!r})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, model: str | None = None,
                 **kwargs: Any) -> GeminiProvider | None:
        """A provider configured from the environment, or None when GEMINI_API_KEY is not set.

        `model` beats ENGINE_AGENT_MODEL, which beats the default; other keyword arguments go to the constructor.
        """
        env = os.environ if env is None else env
        key = env.get("GEMINI_API_KEY")
        if not key:
            return None
        return cls(key, model=model or env.get("ENGINE_AGENT_MODEL") or DEFAULT_MODEL,
                   base_url=env.get("ENGINE_AGENT_BASE_URL") or None, **kwargs)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def generate(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolDecl], *, timeout: float
    ) -> ModelTurn:
        """The model's next turn; 429/5xx are retried under the policy, all within `timeout` seconds.

        Raises:
            ModelError: reason timeout, rate_limited, server_error (after the retries), malformed or refused.
        """
        contents = [self._content(m) for m in messages]
        deadline = time.monotonic() + timeout
        retrying = self.policy.retrying(sleep=self._sleep, timeout=timeout).copy(
            retry=tenacity.retry_if_exception(self._retried))
        response = retrying(self._attempt, system, contents, tools, deadline)
        return self._turn(response)

    def _retried(self, exc: BaseException) -> bool:
        return isinstance(exc, ModelError) and exc.reason in RETRIED_REASONS and self.policy.retries(exc)

    # --- request ------------------------------------------------------------------------------------------------

    def _content(self, message: Message) -> Any:
        types = self._types
        parts = []
        if message.text is not None and message.role != "tool":
            parts.append(types.Part(text=message.text))
        if message.image:
            parts.append(types.Part.from_bytes(data=message.image, mime_type="image/png"))
        parts += [types.Part(function_call=types.FunctionCall(name=c.name, args=c.arguments, id=c.id),
                             thought_signature=base64.b64decode(c.signature) if c.signature else None)
                  for c in message.calls]
        parts += [types.Part(function_response=types.FunctionResponse(name=r.name, response=r.response, id=r.id))
                  for r in message.results]
        if message.text is not None and message.role == "tool":
            parts.append(types.Part(text=message.text))  # a note after the results (e.g. a percept summary)
        if not parts:
            parts.append(types.Part(text=""))
        return types.Content(role="model" if message.role == "model" else "user", parts=parts)

    def _config(self, system: str, tools: Sequence[ToolDecl], attempt_s: float) -> Any:
        types = self._types
        declared = [types.Tool(function_declarations=[
            types.FunctionDeclaration(name=t.name, description=t.description, parameters_json_schema=t.parameters)
            for t in tools
        ])] if tools else None
        return types.GenerateContentConfig(
            system_instruction=system or None,
            tools=declared,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
            http_options=types.HttpOptions(timeout=max(1, int(attempt_s * 1000)),
                                           retry_options=types.HttpRetryOptions(attempts=1)),
        )

    def _attempt(self, system: str, contents: list, tools: Sequence[ToolDecl], deadline: float) -> Any:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ModelError("no time left for another model call", reason="timeout", model=self.model)
        future = self._pool.submit(self._client.models.generate_content, model=self.model, contents=contents,
                                   config=self._config(system, tools, left))
        try:
            return future.result(timeout=left + _GRACE_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            failure = ModelError(f"the model did not answer within {left:.1f} s", reason="timeout", model=self.model)
        except Exception as exc:  # noqa: BLE001 (every client failure becomes one ModelError)
            failure = self._error(exc)
        raise failure  # outside the handler, so the client's exception (which may quote the key) is not chained

    def _error(self, exc: Exception) -> ModelError:
        from google.genai import errors as genai_errors

        name = type(exc).__name__
        text = str(self._redact(str(exc)))[:300]
        if isinstance(exc, genai_errors.APIError):
            code = int(exc.code or 0)
            reason = "rate_limited" if code == 429 else "server_error" if code >= 500 else "refused"
            return ModelError(f"the model service answered {code}: {text}", reason=reason, model=self.model,
                              code=code)
        if "timeout" in name.lower() or isinstance(exc, TimeoutError):
            return ModelError(f"the model call timed out ({name})", reason="timeout", model=self.model)
        if isinstance(exc, (ValueError, TypeError, KeyError)):  # JSONDecodeError and unparsable payloads
            return ModelError(f"the model's answer cannot be read: {name}: {text}", reason="malformed",
                              model=self.model)
        return ModelError(f"the model call failed: {name}: {text}", reason="server_error", model=self.model)

    # --- response -----------------------------------------------------------------------------------------------

    def _turn(self, response: Any) -> ModelTurn:
        try:
            raw = response.model_dump(mode="json", exclude_none=True, exclude={"sdk_http_response"})
        except Exception as exc:  # noqa: BLE001
            raise ModelError(f"the model's answer cannot be read: {type(exc).__name__}", reason="malformed",
                             model=self.model) from None
        raw = self._redact(raw)
        candidates = response.candidates or []
        if not candidates:
            block = getattr(response.prompt_feedback, "block_reason", None)
            if block is not None:
                raise ModelError(f"the model refused the prompt ({block})", reason="refused", model=self.model)
            raise ModelError("the model's answer has no candidate", reason="malformed", model=self.model)
        candidate = candidates[0]
        parts = candidate.content.parts if candidate.content is not None else None
        finish = str(getattr(candidate.finish_reason, "value", candidate.finish_reason) or "")
        if not parts:
            if finish in _REFUSALS:
                raise ModelError(f"the model refused to answer ({finish})", reason="refused", model=self.model)
            raise ModelError(f"the model's answer is empty (finish reason {finish or 'none'})", reason="malformed",
                             model=self.model)
        texts = [self._redact(p.text) for p in parts if p.text and not p.thought]  # a key echoed back
        calls = tuple(self._call(p.function_call, p.thought_signature) for p in parts if p.function_call is not None)
        return ModelTurn(text="".join(texts) if texts else None, calls=calls,
                         usage=self._usage(response.usage_metadata), raw=raw)

    def _call(self, fc: Any, signature: bytes | None) -> Call:
        if not fc.name:
            raise ModelError("the model called a function without a name", reason="malformed", model=self.model)
        args = self._redact(dict(fc.args)) if fc.args is not None else {}
        try:
            json.dumps(args)
        except (TypeError, ValueError):
            raise ModelError(f"the arguments of {fc.name!r} are not JSON", reason="malformed",
                             model=self.model) from None
        return Call(fc.name, dict(args), fc.id, base64.b64encode(signature).decode() if signature else None)

    @staticmethod
    def _usage(meta: Any) -> Usage:
        if meta is None:
            return Usage()
        output = (meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)
        return Usage(input_tokens=meta.prompt_token_count or 0, output_tokens=output)
