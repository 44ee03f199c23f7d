"""The demo notes server over Streamable HTTP with resumable streams (its MemoryEventStore), plus
`archive_once`: it elicits like `archive` but is not idempotent (what a lost session means for a
call that cannot be run again). `python -m tests.mcp_servers.resumable_server <port>`. Its events
live in this process only: a restarted server has forgotten its sessions.
"""

import sys

from mcp.server.mcpserver import Context
from mcp.types import ToolAnnotations

from agents.mcp_servers.demo_notes import Confirm, MemoryEventStore, _find, _notes, server


@server.tool(annotations=ToolAnnotations(title="Archive a note (once)", read_only_hint=False, destructive_hint=False,
                                         idempotent_hint=False, open_world_hint=False))
async def archive_once(note_id: int, ctx: Context) -> str:
    """Archive a note after the person confirms it (not idempotent)."""
    with _notes() as notes:
        text = _find(notes, note_id)["text"]
    answer = await ctx.elicit(f"Archive the note \u201c{text}\u201d once?", Confirm)
    if answer.action != "accept" or not answer.data.confirm:
        return f"Note {note_id} was not archived: the person did not confirm."
    with _notes(write=True) as notes:
        _find(notes, note_id)["archived"] = True
    return f"Archived note {note_id} once."


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]), event_store=MemoryEventStore())
