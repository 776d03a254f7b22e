"""Floor 6: a session wired from the floors below, the bounded Tools (the one place a ToolResult is made), the
transcript."""
