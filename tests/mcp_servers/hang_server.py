"""A test MCP server (stdio): `hang` writes its process id to a file, then never answers, so a test
can kill the server in the middle of a call; `hang_once` (idempotent) hangs only the first time;
`ping` answers at once."""

import asyncio
import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("hang")


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False))
async def hang(marker: str) -> str:
    """Start something and never finish it."""
    Path(marker).write_text(str(os.getpid()))
    await asyncio.Event().wait()
    return "never"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True))
async def hang_once(marker: str) -> str:
    """Idempotent: never answers the first time (it leaves the marker), answers once the marker is there."""
    if not Path(marker).exists():
        Path(marker).write_text(str(os.getpid()))
        await asyncio.Event().wait()
    return "done the second time"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def ping() -> str:
    """Answer at once."""
    return f"pong from {os.getpid()}"


if __name__ == "__main__":
    server.run("stdio")
