"""An MCP server's `elicitation/create` during a call becomes a question to the person.

The question is an InputRequest (the chat's question card, `POST /api/threads/<id>/answer/`, its
`requestedSchema` as the response schema) and the answer goes back to the server as the
ElicitResult (accept with the content, or cancel).

Chosen for stdio servers (and, for now, HTTP ones): the worker holds the call while the person
answers, up to AGUI_MCP_ELICIT_TIMEOUT (then the server hears `cancel`). A stdio server lives in
the worker process that started it, and its request stays open on that process's pipe, so the
answer has to reach that same process: it comes through a Redis list the waiting call reads
(agents/runtime/inputs.py, ask_live / wait_live). The run is not paused (the AG-UI stream gets
the CUSTOM request_info event, not an interrupt); a Stop withdraws the question.
"""

import logging

from django.conf import settings
from django.db import connection
from django.utils.translation import gettext as _

from agents.models import ToolCall
from agents.runtime import inputs
from agents.services import cancel_requested

log = logging.getLogger(__name__)


def asker(ctx, tool):
    """elicit(message, requested_schema) -> (action, content) for the call `ctx` runs, or None
    outside a run (nobody to ask: the server hears `decline`)."""
    run = getattr(ctx, "run", None)
    if run is None or not getattr(ctx, "tool_call_id", ""):
        return None

    def elicit(message, schema):
        try:
            return _ask(ctx, tool, message, schema)
        except inputs.InputError as exc:  # the server's schema is not one we can ask with
            log.warning("MCP %s: elicitation refused: %s", tool.name, exc.message)
            return "decline", None
        finally:
            connection.close()  # this runs in a thread of the MCP client's: its connection is its own

    return elicit


def _ask(ctx, tool, message, schema):
    call = ToolCall.objects.get(pk=ctx.tool_call_id)
    request = inputs.ask_live(thread=ctx.thread, run=ctx.run, tool_call=call, agent=ctx.thread.agent,
                              message=_("%(question)s (asked by the MCP server %(server)s)") % {
                                  "question": message, "server": tool.server}, response_schema=schema)
    if request is None:
        log.warning("MCP %s asked a second question in one call; declined", tool.name)
        return "decline", None
    answer = inputs.wait_live(request, float(settings.AGUI_MCP_ELICIT_TIMEOUT),
                              stopped=lambda: cancel_requested(ctx.run.pk))
    if answer is None:
        return "cancel", None
    return answer.get("action", "cancel"), answer.get("content")
