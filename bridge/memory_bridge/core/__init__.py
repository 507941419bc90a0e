"""Plain functions shared by the MCP tools and the memctl CLI."""
