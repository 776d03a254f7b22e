"""Page graphs shipped with the engine (data only): one folder of YAML files per game."""
