"""Floor 4: routes over the graph, the transitions machine holding the belief, the actuator, and goto (act, observe,
diff, react)."""
