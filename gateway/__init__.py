"""The MCP elicitation gateway."""
