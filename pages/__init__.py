"""Page graphs shipped with the engine (data only): one folder of YAML files per game."""

DEFAULT_GAME = "azurlane"
"""The folder every command uses when no --graph is given (the engine itself names no game)."""
