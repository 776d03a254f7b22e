"""Subcommands of ``python -m engine``: each module adds its own parsers with ``register(subparsers)``."""
