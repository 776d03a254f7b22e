"""Vision verifier: ask a Gemini model what a frame shows, and trust the answer only when it checks out.

The model is the last resort for frames no template explains. It gets the frame (JPEG, at most
engine.llm.images' size and bytes) and the closed lists of candidate pages and popups and must answer structured
JSON (page, popup, blocking_element, ocr_text, suggested_action, confidence, tap) under a response schema. An
answer that is malformed, names a page or popup not in the candidates, suggests an action outside
engine.core.results.SUGGESTED_ACTIONS, or is less confident than ``min_confidence`` raises VisionError: callers never
act on it. The call goes through the engine's one google-genai client (engine.llm.GeminiClient: one deadline for
the whole call however the server trickles, a bound on the answer's size, the API's error codes), is never
retried here (retries belong to the policy), and answers are cached by a hash of the frame in a small LRU. The
API key never reaches a log, an error or a transcript (engine.core.redact).

The prompt names the game of the graph in use (``VisionClient(game=graph.game)``), never a fixed one; a ``tap``
is in frame pixels (mapped back from the image's when the frame was downscaled).

Configuration: GEMINI_API_KEY (required), the model (ENGINE_VISION_MODEL, else engine.llm.config.model_name:
ENGINE_AGENT_MODEL or the ``model`` policy's), ENGINE_VISION_BASE_URL (optional endpoint), ENGINE_VISION_TIMEOUT
(seconds, default 20).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import threading
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from engine.config.policies import load_policies
from engine.core.errors import ModelError, VisionError
from engine.core.results import SUGGESTED_ACTIONS, Evidence
from engine.llm import GeminiClient, model_image, model_name

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 20.0
MAX_SIDE = 1280
"""Vision sees frames up to this size unscaled (the taps it names are then frame pixels as they are)."""

PROMPT = """You are looking at a screenshot of {game}.
Say which screen (page) it shows and which popup covers it, choosing ONLY from these lists.
Pages: {pages}
Popups: {popups}
Answer null for page or popup when none of the listed ones is shown.
blocking_element: a short description of whatever covers the screen, or null.
tap: when something not in the lists covers the screen, the [x, y] pixel that closes it, else null.
ocr_text: the most prominent text you can read, or null.
suggested_action: one of {actions}.
confidence: 0 to 1, how sure you are of page and popup."""


def display_name(game: str) -> str:
    """A readable name for a graph's ``game`` field: ``tower_defense`` and ``tower-defense`` become
    ``Tower Defense``, ``tower`` becomes ``Tower``; a name with capitals or spaces is kept as written."""
    words = re.sub(r"[_\-\s]+", " ", game).strip()
    return words.title() if words.islower() else words


@dataclass(frozen=True)
class VisionAnswer:
    page: str | None
    popup: str | None
    blocking_element: str | None
    ocr_text: str | None
    suggested_action: str
    confidence: float
    latency_ms: float = 0.0
    cached: bool = False
    tap: tuple[int, int] | None = None
    """Where to tap to close a blocking element none of the lists names (the graph may learn it:
    engine.learning.learner)."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def evidence(self) -> Evidence:
        return Evidence(
            "vision",
            self.page or self.popup or "unknown",
            self.page is not None or self.popup is not None,
            self.confidence,
            latency_ms=self.latency_ms,
            text=self.ocr_text,
        )


def _schema():
    from google.genai import types

    nullable = {"nullable": True}
    return types.Schema(
        type="OBJECT",
        properties={
            "page": types.Schema(type="STRING", **nullable),
            "popup": types.Schema(type="STRING", **nullable),
            "blocking_element": types.Schema(type="STRING", **nullable),
            "ocr_text": types.Schema(type="STRING", **nullable),
            "tap": types.Schema(type="ARRAY", items=types.Schema(type="INTEGER"), **nullable),
            "suggested_action": types.Schema(type="STRING", enum=list(SUGGESTED_ACTIONS)),
            "confidence": types.Schema(type="NUMBER"),
        },
        required=["page", "popup", "suggested_action", "confidence"],
    )


class VisionClient:
    """A bounded, validating, caching Gemini client for frame classification."""

    def __init__(
        self,
        api_key: str,
        *,
        model: str | None = None,
        base_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        min_confidence: float = 0.6,
        cache_size: int = 32,
        game: str | None = None,
        policies: Any = None,
    ) -> None:
        try:
            self._client = GeminiClient(api_key, base_url=base_url)
        except ModelError as exc:
            raise VisionError(f"{exc.message} (vision)", reason=exc.reason) from None
        self.model = model or model_name(policies if policies is not None else load_policies())
        self.timeout_s = float(timeout_s)
        self.min_confidence = min_confidence
        self.game = game  # the graph's `game` (e.g. tower): the prompt names it by its display name
        self._types = self._client.types
        self._schema = _schema()
        self._cache: OrderedDict[tuple, VisionAnswer] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **kwargs: Any) -> VisionClient | None:
        """A client configured from the environment, or None when no key is set (vision is then unavailable)."""
        env = os.environ if env is None else env
        key = env.get("GEMINI_API_KEY")
        if not key:
            return None
        policies = kwargs.pop("policies", None)
        policies = policies if policies is not None else load_policies()
        return cls(
            key,
            model=model_name(policies, env, override_env="ENGINE_VISION_MODEL"),
            base_url=env.get("ENGINE_VISION_BASE_URL") or None,
            timeout_s=float(env.get("ENGINE_VISION_TIMEOUT") or DEFAULT_TIMEOUT_S),
            policies=policies,
            **kwargs,
        )

    def close(self) -> None:
        self._client.close()

    def classify(
        self,
        frame: np.ndarray,
        pages: Sequence[str],
        popups: Sequence[str] = (),
        *,
        timeout_s: float | None = None,
    ) -> VisionAnswer:
        """What the model says `frame` shows, among `pages` and `popups`.

        Raises:
            VisionError: the call failed or timed out, or the answer is malformed, off-list or not confident.
        """
        start = time.perf_counter()
        key = (hashlib.blake2b(memoryview(np.ascontiguousarray(frame)), digest_size=16).digest(),
               tuple(pages), tuple(popups))
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                answer = self._cache[key]
                return VisionAnswer(**{**asdict(answer), "cached": True,
                                       "latency_ms": (time.perf_counter() - start) * 1000.0})
        try:
            image = model_image(frame, max_side=MAX_SIDE)
        except ValueError:
            raise VisionError("cannot encode the frame", reason="bad_frame") from None
        raw = self._call(image.data, pages, popups, timeout_s or self.timeout_s)
        answer = self._validate(raw, pages, popups, (time.perf_counter() - start) * 1000.0, image.scale)
        with self._lock:
            self._cache[key] = answer
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return answer

    def _call(self, image: bytes, pages: Sequence[str], popups: Sequence[str], timeout_s: float) -> str:
        types = self._types
        game = f"the mobile game {display_name(self.game)}" if self.game else "a mobile game"
        prompt = PROMPT.format(
            game=game, pages=", ".join(pages) or "(none)", popups=", ".join(popups) or "(none)",
            actions=", ".join(SUGGESTED_ACTIONS),
        )
        config = types.GenerateContentConfig(
            response_mime_type="application/json",
            response_schema=self._schema,
            temperature=0.0,
        )
        contents = [types.Part.from_bytes(data=image, mime_type="image/jpeg"), prompt]
        try:
            response = self._client.generate(self.model, contents, config, timeout=timeout_s)
        except ModelError as exc:
            reason = "timeout" if exc.reason == "timeout" else "call_failed"
            raise VisionError(f"the vision call failed: {exc.message}", reason=reason, model_error=exc.reason,
                              hint=exc.context.get("hint")) from None
        try:
            text = response.text
        except Exception as exc:
            raise VisionError(f"the vision answer has no text: {type(exc).__name__}", reason="malformed") from None
        if not text:
            raise VisionError("the vision answer is empty", reason="malformed")
        return text

    def _validate(self, text: str, pages: Sequence[str], popups: Sequence[str], latency_ms: float,
                  scale: float = 1.0) -> VisionAnswer:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            raise VisionError("the vision answer is not JSON", reason="malformed", answer=text[:200]) from None
        if not isinstance(data, dict):
            raise VisionError("the vision answer is not a JSON object", reason="malformed", answer=text[:200])
        page, popup = data.get("page"), data.get("popup")
        action, confidence = data.get("suggested_action"), data.get("confidence")
        for label, value in (("blocking_element", data.get("blocking_element")), ("ocr_text", data.get("ocr_text"))):
            if value is not None and not isinstance(value, str):
                raise VisionError(f"{label} is not text", reason="malformed")
        tap = data.get("tap")
        if tap is not None and (not isinstance(tap, list) or len(tap) != 2 or
                                not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 10_000
                                        for v in tap)):
            raise VisionError("tap is not an [x, y] pixel", reason="malformed")
        if page is not None and page not in pages:
            raise VisionError(f"the vision model named a page that is not a candidate: {str(page)[:60]!r}",
                              reason="off_list")
        if popup is not None and popup not in popups:
            raise VisionError(f"the vision model named a popup that is not a candidate: {str(popup)[:60]!r}",
                              reason="off_list")
        if action not in SUGGESTED_ACTIONS:
            raise VisionError(f"suggested_action {str(action)[:40]!r} is not one of {', '.join(SUGGESTED_ACTIONS)}",
                              reason="off_list")
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
            raise VisionError("confidence is not a number in [0, 1]", reason="malformed")
        if confidence < self.min_confidence:
            raise VisionError(f"the vision model is not confident enough ({confidence:.2f} < {self.min_confidence})",
                              reason="low_confidence", page=page, popup=popup)
        return VisionAnswer(
            page=page,
            popup=popup,
            blocking_element=data.get("blocking_element"),
            ocr_text=data.get("ocr_text"),
            suggested_action=action,
            confidence=float(confidence),
            latency_ms=latency_ms,
            tap=(round(tap[0] / scale), round(tap[1] / scale)) if tap is not None else None,
        )
