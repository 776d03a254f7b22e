"""What every verifier shares: resolving a signature through the graph's buttons, clipping areas, naming, timing."""

from __future__ import annotations

import time
from typing import Any

from engine.config.schema import Graph, Page
from engine.core.results import Evidence


def plain(value: Any, what: str) -> Any:
    """A per-server value that must already be collapsed (``graph.for_server``); a mapping here is a bug upstream."""
    if isinstance(value, dict):
        raise ValueError(f"{what} is still per-server ({sorted(value)}): resolve the graph with for_server() first")
    return value


def field(signature: Any, graph: Graph, attribute: str, button_attribute: str | None = None) -> Any:
    """The signature's own value, else the one of the button it names."""
    value = getattr(signature, attribute, None)
    if value is None and getattr(signature, "button", None):
        value = getattr(graph.button(signature.button), button_attribute or attribute)
    return plain(value, f"{attribute} of {signature_name(signature)}")


def signature_name(signature: Any) -> str:
    name = getattr(signature, "name", None) or getattr(signature, "button", None)
    if name:
        return name
    asset = getattr(signature, "asset", None)
    if isinstance(asset, str):
        return asset.rsplit("/", 1)[-1]
    pattern = getattr(signature, "pattern", None)
    if isinstance(pattern, str):
        return f"ocr:{pattern}"
    return signature.type


def clip(area: tuple[int, int, int, int], resolution: tuple[int, int]) -> tuple[int, int, int, int]:
    width, height = resolution
    x1, y1, x2, y2 = area
    return (max(0, min(x1, width)), max(0, min(y1, height)), max(0, min(x2, width)), max(0, min(y2, height)))


def settings(graph: Graph, page: Page | None):
    return graph.settings(page)


class TimedCheck:
    """Base of a compiled signature: ``verify`` times ``measure`` and reports the outcome as this check's Evidence.

    A subclass sets ``name``, ``area`` and ``channel`` and defines ``measure(frame) -> (hit, score, text)``, where
    text is what the check read (None when it reads none).
    """

    def verify(self, frame: Any) -> Evidence:
        start = time.perf_counter()
        hit, score, text = self.measure(frame)
        return Evidence(
            self.channel,
            self.name,
            hit,
            score,
            box=self.area,
            latency_ms=(time.perf_counter() - start) * 1000.0,
            text=text,
        )


AREA_BUDGET = 1.0
"""Share of the frame that may be converted area by area; past it the whole frame is converted once."""


def _halve(source: Any) -> Any:
    """`source` shrunk by exactly 2 (INTER_AREA): OpenCV's fast path, a rounded 2x2 mean per pixel, so a piece of
    a frame halves to the same pixels as the same piece of the whole frame's halving."""
    import cv2

    h, w = source.shape
    return cv2.resize(source[:h // 2 * 2, :w // 2 * 2], (w // 2, h // 2), interpolation=cv2.INTER_AREA)


class Pyramid:
    """Grayscale pieces of one frame at full, half and quarter scale, made on first use and shared by every check.

    A check asks for the gray of its search area (``area``) and for that area shrunk (``area_level``): verifying
    one page converts a few thousand pixels instead of the whole 1280x720 frame (0.1-0.3 ms). A caller about to
    check every page converts the whole frame once (``convert_whole``; so does an area past ``AREA_BUDGET``) and
    later areas are slices of it. Gray conversion works pixel by pixel and exact halving block by block, so an
    area gives the same pixels either way.
    """

    def __init__(self, frame: Any) -> None:
        self.frame = frame
        self._gray: Any = None
        self._areas: dict[tuple, Any] = {}
        self._levels: dict[tuple, Any] = {}
        self._budget = AREA_BUDGET * frame.shape[0] * frame.shape[1]
        self.texts: dict[tuple[int, int, int, int], tuple[str, float]] = {}
        """Text read in an area of this frame (verifiers.ocr): pages whose titles share an area read it once."""

    @property
    def whole(self) -> bool:
        """Whether the whole frame has been converted."""
        return self._gray is not None

    @property
    def gray(self) -> Any:
        """The whole frame in gray, converted on first use."""
        return self.convert_whole()

    def convert_whole(self) -> Any:
        """Convert the whole frame now (cheaper than area by area when most checks of the graph will run)."""
        if self._gray is None:
            import cv2

            self._gray = cv2.cvtColor(self.frame, cv2.COLOR_BGR2GRAY)
        return self._gray

    def area(self, box: tuple[int, int, int, int]) -> Any:
        """The gray of `box` (x1, y1, x2, y2, inside the frame): converted alone, or a slice of the whole."""
        x1, y1, x2, y2 = box
        if self._gray is not None:
            return self._gray[y1:y2, x1:x2]
        found = self._areas.get(box)
        if found is None:
            self._budget -= (x2 - x1) * (y2 - y1)
            if self._budget < 0:
                return self.convert_whole()[y1:y2, x1:x2]
            import cv2

            found = self._areas[box] = cv2.cvtColor(self.frame[y1:y2, x1:x2], cv2.COLOR_BGR2GRAY)
        return found

    def area_level(self, box: tuple[int, int, int, int], scale: int, phase: tuple[int, int],
                   window: tuple[int, int, int, int]) -> Any:
        """``level(scale, phase)[cy1:cy2, cx1:cx2]`` for `window` (cx1, cy1, cx2, cy2): a slice of the whole
        level once there is one, else made from the gray of `box`, which must hold the window's pixels."""
        cx1, cy1, cx2, cy2 = window
        if self._gray is not None:  # the common case of a full scan: no second call
            whole = self._levels.get((scale, phase))
            return (self.level(scale, phase) if whole is None else whole)[cy1:cy2, cx1:cx2]
        key = (box, scale, phase, window)
        found = self._levels.get(key)
        if found is None:
            x0, y0 = phase[0] + cx1 * scale - box[0], phase[1] + cy1 * scale - box[1]
            found = self.area(box)[y0:y0 + (cy2 - cy1) * scale, x0:x0 + (cx2 - cx1) * scale]
            for _ in range(scale.bit_length() - 1):  # a 4x4 mean is the 2x2 mean of 2x2 means, as in level()
                found = _halve(found)
            self._levels[key] = found
        return found

    def level(self, scale: int, phase: tuple[int, int] = (0, 0)) -> Any:
        """The whole gray frame shrunk by `scale` (INTER_AREA), its pixel grid starting at full-scale `phase` (x, y).

        A template shrunk on its own is aligned to its own corner; shrinking the frame on the same grid keeps
        true matches sharp (a half-pixel misalignment cost a 12 px tall template 0.6 of its score).
        """
        if scale == 1:
            return self.gray
        key = (scale, phase)
        found = self._levels.get(key)
        if found is None:
            px, py = phase
            if scale == 2:
                source, sx, sy = self.gray, px, py
            else:  # a 4x4 mean is the 2x2 mean of 2x2 means: halve the half level of the matching phase
                source, sx, sy = self.level(scale // 2, (px % 2, py % 2)), px // 2, py // 2
            # An exact halving takes OpenCV's fast INTER_AREA path (about 0.02 ms for a 1280x720 frame; a direct
            # quarter, an inexact size or a box filter costs ten to twenty times more).
            found = self._levels[key] = _halve(source[sy:, sx:])
        return found


_local = __import__("threading").local()


class frame_scope:
    """Within the block, checks of `frame` share one Pyramid (the observer opens one per observation).

    Outside a scope every check builds its own: a caller may change a frame in place between two calls, so a
    cache keyed on the array object alone would answer about pixels that are gone.
    """

    def __init__(self, frame: Any) -> None:
        self.frame = frame

    def __enter__(self) -> Pyramid:
        self._previous = getattr(_local, "pyramid", None)
        _local.pyramid = Pyramid(self.frame)
        return _local.pyramid

    def __exit__(self, *exc: object) -> None:
        _local.pyramid = self._previous


def pyramid(frame: Any) -> Pyramid:
    """The Pyramid of `frame`: the enclosing frame_scope's when it is for this frame, else a fresh one."""
    scoped = getattr(_local, "pyramid", None)
    if scoped is not None and scoped.frame is frame:
        return scoped
    return Pyramid(frame)
