"""Floor 8: the faces users meet: the CLI and its commands, the MCP server, the studio."""
