"""The agent runtime: goals in YAML and the loop that reaches them with a model's help (issue 11)."""
