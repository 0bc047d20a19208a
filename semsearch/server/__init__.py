"""HTTP and MCP servers."""
