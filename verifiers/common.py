"""What every verifier shares: resolving a signature through the graph's buttons, clipping areas, naming."""

from __future__ import annotations

from typing import Any

from engine.schema import Graph, Page


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
