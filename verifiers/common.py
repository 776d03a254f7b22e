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


class Pyramid:
    """Grayscale versions of one frame at full, half and quarter scale, made once and shared by every check.

    Converting each search window separately cost about a third of a full page scan; converting the frame once
    costs about 0.3 ms. Levels are made on first use.
    """

    def __init__(self, frame: Any) -> None:
        import cv2

        self.frame = frame
        self.gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
        self._levels: dict[tuple, Any] = {}

    def level(self, scale: int, phase: tuple[int, int] = (0, 0)) -> Any:
        """The gray frame shrunk by `scale` (INTER_AREA), its pixel grid starting at full-scale `phase` (x, y).

        A template shrunk on its own is aligned to its own corner; shrinking the frame on the same grid keeps
        true matches sharp (a half-pixel misalignment cost a 12 px tall template 0.6 of its score).
        """
        if scale == 1:
            return self.gray
        key = (scale, phase)
        found = self._levels.get(key)
        if found is None:
            import cv2

            px, py = phase
            if scale == 2:
                source, sx, sy = self.gray, px, py
            else:  # a 4x4 mean is the 2x2 mean of 2x2 means: halve the half level of the matching phase
                source, sx, sy = self.level(scale // 2, (px % 2, py % 2)), px // 2, py // 2
            h, w = source.shape
            cols, rows = (w - sx) // 2, (h - sy) // 2
            # An exact halving takes OpenCV's fast INTER_AREA path (about 0.02 ms for a 1280x720 frame; a direct
            # quarter, an inexact size or a box filter costs ten to twenty times more).
            found = cv2.resize(source[sy:sy + rows * 2, sx:sx + cols * 2], (cols, rows), interpolation=cv2.INTER_AREA)
            self._levels[key] = found
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
