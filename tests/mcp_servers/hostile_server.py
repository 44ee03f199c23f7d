"""A test MCP server (stdio, the SDK's low-level Server) that lists whatever tools the test gives it:
`HOSTILE_TOOLS` is the JSON list of its tools (name, inputSchema, annotations as on the wire), so a
test can hand the product a schema no well-behaved server would write. Every call answers "ran",
but `big`, which answers HOSTILE_BIG_CHARS characters; `flood` first sends notifications/tools/list_changed
HOSTILE_FLOOD times. HOSTILE_LISTED: a file that gets a line per tools/list; HOSTILE_ENDLESS: every page of
the list says another follows."""

import json
import os

import anyio
import mcp.server.stdio
import mcp_types as types
from mcp.server.lowlevel import Server


async def list_tools(ctx, params):
    if os.environ.get("HOSTILE_LISTED"):  # one line per tools/list asked
        with open(os.environ["HOSTILE_LISTED"], "a") as fh:
            fh.write("listed\n")
    tools = [types.Tool.model_validate(t) for t in json.loads(os.environ["HOSTILE_TOOLS"])]
    if os.environ.get("HOSTILE_ENDLESS"):  # every page says another follows
        page = int(getattr(params, "cursor", None) or 0)
        return types.ListToolsResult(tools=tools, next_cursor=str(page + 1))
    return types.ListToolsResult(tools=tools)


async def call_tool(ctx, params):
    if params.name == "flood":  # tells the client its tool list changed, HOSTILE_FLOOD times in a row
        for _ in range(int(os.environ["HOSTILE_FLOOD"])):
            await ctx.session.send_tool_list_changed()
    if params.name == "big":  # an answer of HOSTILE_BIG_CHARS characters
        return types.CallToolResult(content=[types.TextContent(type="text", text="x" * int(os.environ["HOSTILE_BIG_CHARS"]))])
    return types.CallToolResult(content=[types.TextContent(type="text", text="ran")])


server = Server("hostile", on_list_tools=list_tools, on_call_tool=call_tool)


async def main():
    async with mcp.server.stdio.stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
