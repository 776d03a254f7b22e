"""Floor 1: everything read from files before the first tap: the one YAML reader (file:line), the graph schema and its
checks, the task language, policies, asset packs."""
