"""engine.llm's pure parts: a frame as the model sees it, and what the service's error codes and waits mean."""

from __future__ import annotations

import email.utils

import numpy as np
import pytest

from engine.llm.errors import CODES, RETRIED_REASONS, STOPPING_REASONS, meaning, retry_after
from engine.llm.images import MAX_BYTES, MAX_SIDE, model_image


class _Response:
    def __init__(self, **headers: str) -> None:
        self.headers = {k.lower().replace("_", "-"): v for k, v in headers.items()}


def test_a_large_frame_is_downscaled_and_bounded_in_bytes():
    frame = np.random.default_rng(1).integers(0, 256, (1440, 2560, 3), dtype=np.uint8)  # noise: JPEG's worst case
    image = model_image(frame)
    assert image.mime_type == "image/jpeg" and image.data.startswith(b"\xff\xd8")
    assert max(image.width, image.height) <= MAX_SIDE and len(image.data) <= MAX_BYTES
    assert image.width / image.height == pytest.approx(2560 / 1440, rel=0.01)
    assert image.scale == pytest.approx(image.width / 2560)
    tight = model_image(frame, max_bytes=20_000)
    assert len(tight.data) <= 20_000 and tight.width < image.width  # quality first, then the size, came down
    small = model_image(np.zeros((100, 200, 3), np.uint8))
    assert (small.width, small.height, small.scale) == (200, 100, 1.0)


@pytest.mark.parametrize("frame", [np.zeros((0, 0, 3), np.uint8), np.zeros((4,), np.uint8)])
def test_no_frame_is_a_clear_error(frame):
    with pytest.raises(ValueError):
        model_image(frame)


def test_the_documented_codes_split_into_retried_and_stopping():
    assert {c for c, m in CODES.items() if m.retried} == {429, 500, 503, 504}
    assert {CODES[c].reason for c in (400, 401, 403, 404)} <= STOPPING_REASONS
    assert not RETRIED_REASONS & STOPPING_REASONS
    assert meaning(418).reason == "bad_request" and not meaning(418).retried
    assert meaning(502).retried


def test_retry_after_reads_seconds_a_date_or_a_retry_info_detail():
    assert retry_after(_Response(retry_after="7")) == 7.0
    when = email.utils.formatdate(1_000_030.0, usegmt=True)
    assert retry_after(_Response(retry_after=when), now=1_000_000.0) == pytest.approx(30.0)
    details = {"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "37s"}]}}
    assert retry_after(_Response(), details) == 37.0
    assert retry_after(_Response(retry_after="soon")) is None and retry_after(None, {"error": {}}) is None
