"""The one google-genai client, shared by the agent (engine.agent.gemini) and vision (verifiers.vision).

- client: GeminiClient, a generateContent call bounded as a whole (one deadline, however the server trickles)
  and in size, with the transient codes retried under a policy.
- errors: what each documented API error code means, and whether to try again.
- config: the model name (ENGINE_AGENT_MODEL, else the ``model`` policy), the key and the endpoint.
- images: a frame as the model sees it, downscaled and bounded in bytes.
"""

from engine.llm.client import MAX_RESPONSE_BYTES, GeminiClient
from engine.llm.config import api_key, model_name
from engine.llm.errors import CONFIGURATION_REASONS, RETRIED_REASONS, STOPPING_REASONS
from engine.llm.images import ModelImage, model_image

__all__ = ["CONFIGURATION_REASONS", "MAX_RESPONSE_BYTES", "RETRIED_REASONS", "STOPPING_REASONS", "GeminiClient",
           "ModelImage", "api_key", "model_image", "model_name"]
