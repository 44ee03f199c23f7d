"""The demo MCP server shipped with the project: a small notes tracker over stdio (the `mcp` SDK).

Run as `python -m agents.mcp_servers.demo_notes` (stdio), or with `--http <port>` (Streamable HTTP at
http://127.0.0.1:<port>/mcp, with resumable streams: a question to the person pauses the run
instead of holding a worker); it imports nothing of Django. Its tools carry
the MCP annotations the approval engine reads for its defaults:
- `search` (readOnlyHint): never asks;
- `tag` (idempotentHint): may be run again after a lost worker;
- `delete` (destructiveHint): always asks, high risk, not reversible;
- `archive`: asks the person to confirm through `elicitation/create` while it runs;
- `enable_export`: adds an `export` tool and sends `notifications/tools/list_changed`.
The notes live in one JSON file (AGUI_NOTES_FILE, default var/mcp-notes.json), locked while it
is changed, since every worker process starts its own copy of this server.
"""

import collections
import fcntl
import itertools
import json
import os
from contextlib import contextmanager
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http import EventMessage, EventStore
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

SEED = [
    {"id": 1, "text": "Renew the office lease before March", "tags": ["admin"], "archived": False},
    {"id": 2, "text": "Order a new laptop for Sam", "tags": [], "archived": False},
    {"id": 3, "text": "Old meeting notes from the 2024 offsite", "tags": ["old"], "archived": False},
]

server = MCPServer("notes", instructions="A small notes tracker: search, tag, archive and delete notes.")


def _path():
    return Path(os.environ.get("AGUI_NOTES_FILE") or "var/mcp-notes.json")


@contextmanager
def _notes(write=False):
    path = _path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX if write else fcntl.LOCK_SH)
        fh.seek(0)
        text = fh.read()
        notes = json.loads(text) if text.strip() else [dict(n) for n in SEED]
        yield notes
        if write:
            fh.seek(0)
            fh.truncate()
            fh.write(json.dumps(notes, indent=1))


def _find(notes, note_id):
    for note in notes:
        if note["id"] == note_id:
            return note
    raise ToolError(f"there is no note {note_id}")


@server.tool(annotations=ToolAnnotations(title="Search notes", read_only_hint=True, open_world_hint=False))
def search(query: str = "") -> str:
    """Search the notes by words in their text or tags; an empty query lists them all."""
    words = query.lower().split()
    with _notes() as notes:
        found = [n for n in notes if all(w in (n["text"] + " " + " ".join(n["tags"])).lower() for w in words)]
    return json.dumps(found) if found else "No notes match."


@server.tool(annotations=ToolAnnotations(title="Tag a note", read_only_hint=False, destructive_hint=False,
                                         idempotent_hint=True, open_world_hint=False))
def tag(note_id: int, tag: str = Field(min_length=1, max_length=40)) -> str:
    """Add a tag to a note (adding it twice changes nothing)."""
    with _notes(write=True) as notes:
        note = _find(notes, note_id)
        if tag not in note["tags"]:
            note["tags"].append(tag)
    return f"Note {note_id} is tagged {', '.join(note['tags'])}."


@server.tool(annotations=ToolAnnotations(title="Delete a note", read_only_hint=False, destructive_hint=True,
                                         idempotent_hint=False, open_world_hint=False))
def delete(note_id: int) -> str:
    """Delete a note for good."""
    with _notes(write=True) as notes:
        note = _find(notes, note_id)
        notes.remove(note)
    return f"Deleted note {note_id} ({note['text']})."


class Confirm(BaseModel):
    confirm: bool = Field(description="Archive it?")


@server.tool(annotations=ToolAnnotations(title="Archive a note", read_only_hint=False, destructive_hint=False,
                                         idempotent_hint=True, open_world_hint=False))
async def archive(note_id: int, ctx: Context) -> str:
    """Archive a note after the person confirms it."""
    with _notes() as notes:
        text = _find(notes, note_id)["text"]
    answer = await ctx.elicit(f"Archive the note \u201c{text}\u201d?", Confirm)
    if answer.action != "accept" or not answer.data.confirm:
        return f"Note {note_id} was not archived: the person did not confirm."
    with _notes(write=True) as notes:
        _find(notes, note_id)["archived"] = True
    return f"Archived note {note_id}."


def export() -> str:
    """Export every note as JSON."""
    with _notes() as notes:
        return json.dumps(notes)


@server.tool(annotations=ToolAnnotations(title="Enable export", read_only_hint=False, destructive_hint=False,
                                         idempotent_hint=True, open_world_hint=False))
async def enable_export(ctx: Context) -> str:
    """Offer the `export` tool from now on (the server tells its clients its tool list changed)."""
    if "export" not in {t.name for t in await server.list_tools()}:
        server.add_tool(export, annotations=ToolAnnotations(title="Export notes", read_only_hint=True))
    await ctx.session.send_tool_list_changed()
    return "The export tool is available now."


class MemoryEventStore(EventStore):
    """The stream events of this process, so that a client may leave a stream and take it up again
    (Last-Event-ID): the SDK sends event ids and priming events only with an event store, and ships
    none importable (this follows the interface in mcp/server/streamable_http.py). The latest
    `keep` events are kept; a restarted server has forgotten its sessions anyway."""

    def __init__(self, keep=10_000):
        self._ids = itertools.count(1)
        self._events = collections.deque(maxlen=keep)  # (event id, stream id, message or None: priming)

    async def store_event(self, stream_id, message):
        event_id = str(next(self._ids))
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id, send_callback):
        events = list(self._events)
        at = next((i for i, (event_id, _s, _m) in enumerate(events) if event_id == last_event_id), None)
        if at is None:
            return None
        stream_id = events[at][1]
        for event_id, stream, message in events[at + 1:]:
            if stream == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


if __name__ == "__main__":
    import sys

    if len(sys.argv) == 3 and sys.argv[1] == "--http":  # Streamable HTTP on 127.0.0.1:<port>/mcp instead
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]), event_store=MemoryEventStore())
    else:
        server.run("stdio")
