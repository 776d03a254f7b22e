"""The Gemini provider: one agent turn through generateContent with forced native function calling.

Tools are declared by their JSON Schema (``parametersJsonSchema``), and every request forces function calling:
``toolConfig.functionCallingConfig`` has mode ANY and names the allowed functions, so the service answers with a
call to a declared tool, never prose. Automatic function calling is off: the model only proposes, the loop
executes. The call itself goes through engine.llm's GeminiClient (one deadline for the whole call, a bound on the
response's size, the documented error codes, 429/500/503/504 retried under the ``model`` policy with Retry-After
honoured); the API key is redacted everywhere (engine.core.redact).

Configuration (``GeminiProvider.from_env``): GEMINI_API_KEY (required), the model (engine.llm.config.model_name:
ENGINE_AGENT_MODEL, else the ``model`` policy's), ENGINE_AGENT_BASE_URL (optional endpoint; tests point it at a
local server).
"""

from __future__ import annotations

import base64
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.agent.models import Call, Message, ModelTurn, ToolDecl, Usage
from engine.config.policies import Policies, Policy, load_policies
from engine.core.errors import ModelError
from engine.core.redact import scrub
from engine.llm import GeminiClient, api_key, model_name

log = logging.getLogger(__name__)

BASE_URL_ENV = "ENGINE_AGENT_BASE_URL"
_REFUSALS = frozenset({"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"})


class GeminiProvider:
    """A Provider backed by Gemini (google-genai through engine.llm.GeminiClient).

    Args:
        api_key: the Gemini API key (never logged nor put in an error).
        model: the model name (default: engine.llm.config.model_name of `policies`).
        base_url: another endpoint than Google's (a local server in tests).
        policy: the retry policy of 429/500/503/504 (default: the ``model`` policy of `policies`).
        sleep: replaces time.sleep between retries (tests pass a recorder so they never wait).
        policies: the policies in use (default: policies/default.yaml).
        max_response_bytes: the largest answer accepted (default: engine.llm's).
    """

    name = "gemini"

    def __init__(self, api_key: str, model: str | None = None, base_url: str | None = None,
                 policy: Policy | None = None, sleep: Callable[[float], None] = time.sleep, *,
                 policies: Policies | None = None, max_response_bytes: int | None = None) -> None:
        policies = policies if policies is not None else load_policies()
        extra = {"max_response_bytes": max_response_bytes} if max_response_bytes else {}
        self._client = GeminiClient(api_key, base_url=base_url, **extra)
        self.model = model or model_name(policies)
        self.base_url = base_url
        self.policy = policy if policy is not None else policies.get("model")
        self._sleep = sleep
        self._types = self._client.types

    def __repr__(self) -> str:
        return f"GeminiProvider(model={self.model!r}, base_url={self.base_url!r})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, model: str | None = None,
                 **kwargs: Any) -> GeminiProvider | None:
        """A provider configured from the environment, or None when GEMINI_API_KEY is not set.

        `model` beats ENGINE_AGENT_MODEL, which beats the ``model`` policy's; other keyword arguments go to the
        constructor.
        """
        env = os.environ if env is None else env
        key = api_key(env)
        if not key:
            return None
        policies = kwargs.pop("policies", None) or load_policies()
        return cls(key, model=model or model_name(policies, env), base_url=env.get(BASE_URL_ENV) or None,
                   policies=policies, **kwargs)

    def close(self) -> None:
        self._client.close()

    def generate(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolDecl], *, timeout: float
    ) -> ModelTurn:
        """The model's next turn, all within `timeout` seconds (retries and waits included).

        Raises:
            ModelError: with the reason of engine.llm (timeout, oversized, the API code's reason ...), or
                malformed / refused for an answer that cannot be used.
        """
        contents = [self._content(m) for m in messages]
        response = self._client.generate(self.model, contents, self._config(system, tools), timeout=timeout,
                                         policy=self.policy, sleep=self._sleep)
        return self._turn(response)

    # --- request ------------------------------------------------------------------------------------------------

    def _content(self, message: Message) -> Any:
        types = self._types
        parts = []
        if message.text is not None and message.role != "tool":
            parts.append(types.Part(text=message.text))
        if message.image:
            parts.append(types.Part.from_bytes(data=message.image, mime_type=message.image_type))
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

    def _config(self, system: str, tools: Sequence[ToolDecl]) -> Any:
        types = self._types
        declared = tool_config = None
        if tools:
            declared = [types.Tool(function_declarations=[
                types.FunctionDeclaration(name=t.name, description=t.description, parameters_json_schema=t.parameters)
                for t in tools])]
            tool_config = types.ToolConfig(function_calling_config=types.FunctionCallingConfig(
                mode=types.FunctionCallingConfigMode.ANY, allowed_function_names=[t.name for t in tools]))
        return types.GenerateContentConfig(
            system_instruction=system or None,
            tools=declared,
            tool_config=tool_config,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )

    # --- response -----------------------------------------------------------------------------------------------

    def _turn(self, response: Any) -> ModelTurn:
        try:
            raw = response.model_dump(mode="json", exclude_none=True, exclude={"sdk_http_response"})
        except Exception as exc:  # noqa: BLE001
            raise ModelError(f"the model's answer cannot be read: {type(exc).__name__}", reason="malformed",
                             model=self.model) from None
        raw = scrub(raw)
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
        texts = [scrub(p.text) for p in parts if p.text and not p.thought]  # a key echoed back
        calls = tuple(self._call(p.function_call, p.thought_signature) for p in parts if p.function_call is not None)
        return ModelTurn(text="".join(texts) if texts else None, calls=calls,
                         usage=self._usage(response.usage_metadata), raw=raw)

    def _call(self, fc: Any, signature: bytes | None) -> Call:
        if not fc.name:
            raise ModelError("the model called a function without a name", reason="malformed", model=self.model)
        args = scrub(dict(fc.args)) if fc.args is not None else {}
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
