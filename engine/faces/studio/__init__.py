"""The graph studio: a local web page to watch the engine see and to write graphs from real frames
(``python -m engine studio``; the API is described in engine.faces.studio.app)."""

from engine.faces.studio.app import create_app

__all__ = ["create_app"]
