"""Which model, which key, which endpoint: read from the environment and the policies, in one place.

The model name: ``ENGINE_AGENT_MODEL`` when set, else the ``model`` field of the ``model`` policy (the shipped
policies/default.yaml names one Google currently serves as stable; a policy file given with --policies may name
another). Vision may be pointed elsewhere with ENGINE_VISION_MODEL. The key is GEMINI_API_KEY; the endpoint
ENGINE_AGENT_BASE_URL (the agent) or ENGINE_VISION_BASE_URL (vision), for a local server or a proxy.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from engine.core.errors import ConfigError

KEY_ENV = "GEMINI_API_KEY"
MODEL_ENV = "ENGINE_AGENT_MODEL"
MODEL_POLICY = "model"
"""The policy whose ``model`` field names the default model (and whose attempts and waits retry its calls)."""


def api_key(env: Mapping[str, str] | None = None) -> str | None:
    """The Gemini API key of the environment, or None."""
    env = os.environ if env is None else env
    return env.get(KEY_ENV) or None


def model_name(policies: Any, env: Mapping[str, str] | None = None, *, override_env: str = MODEL_ENV) -> str:
    """The model to ask: `override_env` (then ENGINE_AGENT_MODEL) when set, else the ``model`` policy's model.

    Args:
        policies: engine.config.policies.Policies in use (the caller's: the shipped ones, or --policies merged in).

    Raises:
        ConfigError: no environment variable is set and the policies name no model.
    """
    env = os.environ if env is None else env
    for name in dict.fromkeys((override_env, MODEL_ENV)):
        if env.get(name):
            return env[name]
    named = getattr(policies.get(MODEL_POLICY), "model", None)
    if not named:
        raise ConfigError(f"no model is named: set {MODEL_ENV}, or `model` in the {MODEL_POLICY!r} policy")
    return named
