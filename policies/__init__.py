"""Retry and time-bound policies shipped with the engine (data only)."""
