"""The demo notes server over Streamable HTTP with resumable streams: an in-memory EventStore (the mcp
SDK ships none importable; this follows the interface in mcp/server/streamable_http.py), so the
server sends SSE event ids and priming events and replays a stream after a Last-Event-ID.

`python -m tests.mcp_servers.resumable_server <port>`; besides the demo's tools, `archive_once`
elicits like `archive` but is not idempotent (what a lost session means for a call that cannot be
run again). Its events live in this process only: a restarted server has forgotten its sessions.
"""

import itertools
import sys

from mcp.server.mcpserver import Context
from mcp.server.streamable_http import EventMessage, EventStore
from mcp.types import ToolAnnotations

from agents.mcp_servers.demo_notes import Confirm, _find, _notes, server


class MemoryEventStore(EventStore):
    def __init__(self):
        self._ids = itertools.count(1)
        self._events = []  # (event id, stream id, message or None for a priming event), in order

    async def store_event(self, stream_id, message):
        event_id = str(next(self._ids))
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id, send_callback):
        at = next((i for i, (event_id, _s, _m) in enumerate(self._events) if event_id == last_event_id), None)
        if at is None:
            return None
        stream_id = self._events[at][1]
        for event_id, stream, message in self._events[at + 1:]:
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


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
