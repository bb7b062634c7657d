"""MCP: the client of the servers plait.toml registers (sessions, tools, resources, prompts)."""
