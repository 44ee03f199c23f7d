"""The benchmark's MCP server (stdio): `work(ms)` is busy for `ms` milliseconds and says how long it took."""

import json
import time

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("bench")


@server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
def work(ms: float = 0.0) -> str:
    """Be busy for `ms` milliseconds; answer the time it took, measured here."""
    start = time.perf_counter()
    while (time.perf_counter() - start) * 1000 < ms:
        pass
    return json.dumps({"own_ms": (time.perf_counter() - start) * 1000})


if __name__ == "__main__":
    server.run("stdio")
