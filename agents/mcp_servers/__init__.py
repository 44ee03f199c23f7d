"""Tools from MCP servers, registered as data (a nested app, label `mcp_servers`); re-exports nothing."""
