"""An MCP server's elicitation/create during a call: a question to the person (filled in below)."""


def asker(ctx, tool):
    """elicit(message, requested_schema) -> (action, content) for this call, or None (decline)."""
    return None
