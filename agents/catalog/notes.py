"""The notes agent: no tools of its own; its tools come from the `notes` MCP server
(agents/mcp_servers/demo_notes.py, registered by seed_demo), under the same policies as ours."""

from django.utils.translation import gettext_noop

from .agent import Agent

AGENT = Agent(
    name="notes",
    title=gettext_noop("Notes (MCP server)"),
    description=gettext_noop("Searches, tags, archives and deletes notes through an MCP server; deleting is reviewed "
                             "first."),
    system_prompt=(
        "You keep the user's notes with the tools of the notes MCP server (their names start with notes__). "
        "Search before you change anything, and say which note you mean by its id. Deleting a note is "
        "reviewed by a person first; archiving asks the user to confirm. Never claim something happened "
        "unless the tool result says so."
    ),
)
