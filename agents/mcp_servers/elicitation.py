"""An MCP server's `elicitation/create` during a call becomes a question to the person.

The question is an InputRequest (the chat's question card, `POST /api/threads/<id>/answer/`, AG-UI
resume, its `requestedSchema` as the response schema) and the answer goes back to the server as
the ElicitResult (accept with the content, or cancel). What happens meanwhile depends on the
transport:

- Streamable HTTP with resumable streams (the server gave an Mcp-Session-Id and SSE event ids,
  with the priming event of protocol 2025-11-25): the run pauses and the worker is let go. The
  call records the server's session id, its initialize result, the request's first event id and
  the question's JSON-RPC id (ToolCall.resume), becomes awaiting_input, and the run ends
  interrupted with the `input_required` interrupt, as our own tools' questions do; the MCP session
  is left open on the server (client.Hub.call returns Parked). The answer approves the call
  again; the continuation claims it (exactly once, as any approved call) and `resume`s it: the
  same session, the stream taken up after its first event id, the server's question replayed and
  answered with the person's answer, and the call's result read from that stream. A server that
  forgot the session (404: restarted, or its session idle timeout passed: the SDK's default is 30
  minutes) leaves the outcome unknown (reported, never repeated) unless the tool is idempotent:
  then it is called again, and the person's answer is given again if the server asks again.
- stdio servers, and HTTP servers without resumption: the worker holds the call while the person
  answers, up to AGUI_MCP_ELICIT_TIMEOUT (then the server hears `cancel`). A stdio server lives in
  the worker process that started it, and its request stays open on that process's pipe, so the
  answer has to reach that same process: it comes through a Redis list the waiting call reads
  (agents/runtime/inputs.py, ask_live / wait_live). That run is not paused (the AG-UI stream gets
  the CUSTOM request_info event, not an interrupt); a Stop withdraws the question.
"""

import logging

from django.conf import settings
from django.db import connection
from django.utils.translation import gettext as _

from agents.models import InputRequest, ToolCall
from agents.runtime import inputs
from agents.runtime.tools import Paused
from agents.services import cancel_requested
from agui_project import jsoncheck
from agui_project.queries import one

log = logging.getLogger(__name__)


def asker(ctx, tool, again=None):
    """elicit(message, requested_schema) -> (action, content) for the call `ctx` runs, or None
    outside a run (nobody to ask: the server hears `decline`). `again`: the answer the person gave
    already, for a call run again after its parked session was lost (an idempotent tool)."""
    run = getattr(ctx, "run", None)
    if run is None or not getattr(ctx, "tool_call_id", ""):
        return None

    def elicit(message, schema):
        if again is not None:
            return again
        try:
            return _ask(ctx, tool, message, schema)
        except inputs.InputError as exc:  # the server's schema is not one we can ask with
            log.warning("MCP %s: elicitation refused: %s", tool.name, exc.message)
            return "decline", None
        finally:
            connection.close()  # this runs in a thread of the MCP client's: its connection is its own

    return elicit


def parked(ctx):
    """(resume state, the person's answer) of a call that stopped at its server's question, or None."""
    call_id = getattr(ctx, "tool_call_id", "") if ctx is not None else ""
    resume = one(ToolCall.objects.filter(pk=call_id).values_list("resume", flat=True)) if call_id else None
    if not resume or "mcp" not in resume:
        return None
    return resume["mcp"], _answered(call_id) or ("cancel", None)


def park(ctx, tool, stopped):
    """The call stops at the server's question (client.Parked `stopped`) and its worker goes: raises
    Paused. Returns ("decline", None) when it cannot be asked (a schema we cannot ask with, a
    question already asked, the call stopped meanwhile): the server is told so and answers the call."""
    try:
        request = inputs.park(thread=ctx.thread, run=ctx.run, tool_call_id=ctx.tool_call_id, agent=ctx.thread.agent,
                              message=_question(stopped.message, tool), response_schema=stopped.schema,
                              resume={"mcp": stopped.resume})
    except inputs.InputError as exc:
        log.warning("MCP %s: elicitation refused: %s", tool.name, exc.message)
        request = None
    if request is None:
        return "decline", None
    raise Paused(inputs.interrupt_for(request))


def _question(message, tool):
    """The server's words as the person reads them (stored: a NUL in them failed the question's insert)."""
    return _("%(question)s (asked by the MCP server %(server)s)") % {"question": jsoncheck.scrub(str(message)),
                                                                    "server": tool.server}


def _answered(call_id):
    """The person's answer to the call's question as (action, content), once they gave it."""
    request = InputRequest.objects.filter(tool_call_id=call_id).exclude(status=InputRequest.Status.PENDING).first()
    if request is None:
        return None
    if request.status == InputRequest.Status.ANSWERED:
        return "accept", request.answer
    return "cancel", None


def _ask(ctx, tool, message, schema):
    call = ToolCall.objects.get(pk=ctx.tool_call_id)
    request = inputs.ask_live(thread=ctx.thread, run=ctx.run, tool_call=call, agent=ctx.thread.agent,
                              message=_question(message, tool), response_schema=schema)
    if request is None:
        log.warning("MCP %s asked a second question in one call; declined", tool.name)
        return "decline", None
    answer = inputs.wait_live(request, float(settings.AGUI_MCP_ELICIT_TIMEOUT),
                              stopped=lambda: cancel_requested(ctx.run.pk))
    if answer is None:
        return "cancel", None
    return answer.get("action", "cancel"), answer.get("content")
