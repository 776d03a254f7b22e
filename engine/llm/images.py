"""A frame as a model sees it: JPEG, downscaled to a bounded size, never more than a set number of bytes.

The model gets an image small enough to be cheap and fast (its longest side at most ``max_side`` pixels) and
bounded in bytes (the JPEG quality steps down, then the size, until it fits). ``scale`` says how image pixels map
to frame pixels (image = frame x scale), so a caller can tell the model, or map a point the model names back.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MAX_SIDE = 1024
"""The longest side of an image sent to the model, in pixels."""
MAX_BYTES = 256 * 1024
"""The most bytes one image may take."""
QUALITIES = (85, 70, 55, 40)


@dataclass(frozen=True)
class ModelImage:
    """An encoded image for a model request and how it relates to the frame it came from."""

    data: bytes
    mime_type: str
    width: int
    height: int
    frame_width: int
    frame_height: int

    @property
    def scale(self) -> float:
        """Image pixels per frame pixel (1.0 when the frame was small enough)."""
        return self.width / self.frame_width if self.frame_width else 1.0


def model_image(frame: np.ndarray, *, max_side: int = MAX_SIDE, max_bytes: int = MAX_BYTES) -> ModelImage:
    """`frame` (BGR or gray ndarray) as a JPEG of at most `max_side` pixels a side and `max_bytes` bytes.

    Raises:
        ValueError: the frame is empty, or cannot be brought under `max_bytes` at any size tried.
    """
    import cv2

    if frame is None or frame.size == 0 or frame.ndim not in (2, 3):
        raise ValueError("no frame to show the model")
    height, width = frame.shape[:2]
    side = min(max_side, max(height, width))
    while side >= 64:
        factor = side / max(height, width)
        size = (max(1, round(width * factor)), max(1, round(height * factor)))
        small = frame if size == (width, height) else cv2.resize(frame, size, interpolation=cv2.INTER_AREA)
        for quality in QUALITIES:
            ok, encoded = cv2.imencode(".jpg", np.ascontiguousarray(small), [cv2.IMWRITE_JPEG_QUALITY, quality])
            if ok and encoded.size <= max_bytes:
                return ModelImage(encoded.tobytes(), "image/jpeg", size[0], size[1], width, height)
        side = int(side * 0.75)
    raise ValueError(f"the frame does not fit in {max_bytes} bytes even at 64 pixels a side")


def decode_png(png: bytes) -> np.ndarray | None:
    """A PNG (a screenshot tool's bytes) as a BGR frame, or None when it cannot be decoded."""
    import cv2

    if not png:
        return None
    frame = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    return frame if frame is not None and frame.size else None
