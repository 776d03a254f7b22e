"""A declarative, verified state-machine engine that drives an Android game over ADB."""

__version__ = "0.1.0"
