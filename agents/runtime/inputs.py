"""Asking the person: InputRequest state changes (an AG-UI interrupt of reason `input_required`).

An agent's built-in `request_info` tool (agents/runtime/workflows.py) records a pending request and
pauses the run. The answer arrives through AG-UI `resume[]` (services.apply_resume) or REST
(`POST /api/threads/<id>/answer/`); it is validated against the request's JSON Schema, becomes
the tool call's result, and the paused run continues once nothing else of it waits. A cancelled
request ends the workflow (the continuation settles it as cancelled).
"""

import json
import logging
import time

import jsonschema
from ag_ui.core import Interrupt
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django.utils.translation import gettext as _

from agents import selectors
from agents.agui import custom_events
from agents.models import InputRequest, Run, ToolCall
from agents.runtime import events, notices
from agents.transitions import continue_run, move_call
from agui_project import json_schema, jsoncheck
from agui_project.queries import one
from approvals import argument_errors

log = logging.getLogger(__name__)

DEFAULT_SCHEMA = {"type": "string"}


class InputError(Exception):
    """code: unknown_interrupt | already_decided | forbidden | invalid_payload."""

    def __init__(self, code, message, errors=None):
        super().__init__(message)
        self.code, self.message, self.errors = code, message, errors or []


def check_schema(schema):
    """The schema an agent proposed, or InputError when it is not a JSON Schema."""
    # an MCP server's requestedSchema comes from outside: text no database stores (a NUL, a lone
    # surrogate) failed the question's insert, and the call with it
    refusal = jsoncheck.problem(schema, prefix="responseSchema")
    if refusal is not None:
        raise InputError("invalid_schema", f"responseSchema is not usable JSON: {refusal.message}")
    try:
        json_schema.validator(schema)  # its patterns on RE2: the answer is checked in a web process
    except jsonschema.SchemaError as exc:
        raise InputError("invalid_schema", f"responseSchema is not a valid JSON Schema: {exc.message}") from exc
    return schema


def check_answer(request, payload):
    """Validate an answer against the request's responseSchema (InputError with every problem)."""
    try:
        validator = json_schema.validator(request.response_schema)
        # in sentences for the person answering, in their language (not jsonschema's English)
        problems = argument_errors.from_jsonschema(validator, payload, root="", limit=20)
    except jsonschema.SchemaError as exc:  # asked before today's check, or a $ref that cannot be followed
        raise InputError("invalid_schema", f"responseSchema is not a valid JSON Schema: {exc.message}") from exc
    if problems:
        errors = [f"{path}: {sentence}" if path else sentence
                  for path, sentences in problems.items() for sentence in sentences]
        raise InputError("invalid_payload", _("the answer does not fit the question: %(problems)s") % {
            "problems": " ".join(errors)}, errors)


def create(*, thread, run, tool_call, agent, message, response_schema=None):
    """Record the question and park its tool call (the caller emits the events)."""
    with transaction.atomic():
        request = InputRequest.objects.create(
            thread=thread, run=run, tool_call=tool_call, agent=agent, message=message,
            response_schema=response_schema or DEFAULT_SCHEMA,
        )
        move_call(tool_call.pk, ToolCall.Status.AWAITING_INPUT, leaving=[ToolCall.Status.PROPOSED])
    return request


def pending(thread):
    return list(InputRequest.objects.filter(thread=thread, status=InputRequest.Status.PENDING))


def payload(request):
    """The CUSTOM `request_info` value, the snapshot entry and the REST representation."""
    data = {
        "requestId": request.pk,
        "toolCallId": request.tool_call_id,
        "runId": request.run_id,
        "agent": request.agent,
        "message": request.message,
        "responseSchema": request.response_schema,
        "status": request.status,
    }
    if request.status == InputRequest.Status.ANSWERED:
        data["answer"] = request.answer
    return data


def interrupt_for(request):
    return Interrupt(
        id=request.pk,
        reason="input_required",
        message=request.message,
        tool_call_id=request.tool_call_id,
        response_schema=request.response_schema,
        metadata={"agent": request.agent, "requestType": "request_info"},
    )


def answer_text(request):
    """What the model reads as the tool's result."""
    if request.status == InputRequest.Status.CANCELLED:
        return ("The person cancelled this request instead of answering; the workflow ends here. "
                "Do not ask again.")
    value = request.answer if isinstance(request.answer, str) else json.dumps(request.answer)
    return f"The person answered: {value}"


def _locked(request_id, user):
    request = one(InputRequest.objects.select_for_update().select_related("thread").filter(pk=request_id))
    if request is None:
        raise InputError("unknown_interrupt", _("no input request %(id)s") % {"id": request_id})
    # lock the paused run first (as approval_resolved does): concurrent answers then see each other
    Run.objects.select_for_update().get(pk=request.run_id)
    if request.thread.owner_id != user.pk:
        raise InputError("forbidden", _("only the person the agent asked may answer"))
    if request.status != InputRequest.Status.PENDING:
        raise InputError("already_decided", _("input request %(id)s is already %(status)s") % {
            "id": request_id, "status": request.get_status_display().lower()})
    return request


def answer(request_id, user, value):
    """Record the person's answer (validated); continue the run when nothing else of it waits."""
    with transaction.atomic():
        request = _locked(request_id, user)
        check_answer(request, value)
        request.status, request.answer = InputRequest.Status.ANSWERED, value
        request.answered_by, request.answered_at = user, timezone.now()
        request.save(update_fields=["status", "answer", "answered_by", "answered_at"])
        if _live(request):  # a running tool waits for it (ask_live): handed over, nothing else moves
            return _hand_over(request, {"action": "accept", "content": value})
        if _run_on(request):  # a tool that paused at it (park): its call runs on in the continuation
            return request
        # the continuation's settle turns this into the tool message (agents/runtime/workflows.py)
        move_call(request.tool_call_id, ToolCall.Status.SUCCEEDED, leaving=[ToolCall.Status.AWAITING_INPUT],
                  result=answer_text(request))
        _after(request)
    return request


def cancel(request_id, user, reason=""):
    with transaction.atomic():
        request = _locked(request_id, user)
        request.status, request.answered_by, request.answered_at = InputRequest.Status.CANCELLED, user, timezone.now()
        request.save(update_fields=["status", "answered_by", "answered_at"])
        if _live(request):
            return _hand_over(request, {"action": "cancel"})
        if _run_on(request):  # the tool tells its far side the person cancelled
            return request
        move_call(request.tool_call_id, ToolCall.Status.CANCELLED, leaving=[ToolCall.Status.AWAITING_INPUT],
                  feedback=reason, result=answer_text(request))
        _after(request)
    return request


def _after(request):
    value = payload(request)

    def tell():  # after the answer committed: a Redis outage loses only the notice (snapshots carry it)
        notices.tell(request.thread_id, custom_events.request_info_response(value),
                     what=f"the answer to question {request.pk}")

    transaction.on_commit(tell)
    run = Run.objects.get(pk=request.run_id)
    waiting, continued = selectors.waiting_or_continued(run.pk)
    if not waiting:
        continue_run(run, continued=continued)


# --- questions a running tool asks (an MCP server's elicitation/create: agents/mcp_servers/elicitation.py) ---
#
# Two ways, chosen by the tool (by what its transport allows):
# - park: the tool can stop and come back later (the far side keeps the request open without this
#   process: an MCP server over Streamable HTTP with resumable streams). The call records how to
#   go on (ToolCall.resume), becomes awaiting_input, and the run pauses on the input_required
#   interrupt like request_info: the worker is free. The answer makes the call approved again;
#   the continuation's settle claims and runs it once more, and the tool resumes from the record
#   (the answer is read from the InputRequest).
# - ask_live / wait_live: the tool cannot let go (a stdio server's pipe lives in this worker
#   process), so the run is not paused: the question is recorded and shown (CUSTOM request_info,
#   the chat's form, the REST answer endpoint) while the worker waits for the answer on a Redis
#   list; the answer moves no tool call and starts no continuation.


def park(*, thread, run, tool_call_id, agent, message, response_schema, resume):
    """The running call `tool_call_id` stops at a question: executing -> awaiting_input with its
    `resume` record, and the question asked (shown at once). None when the call already asked one
    or is no longer executing (stopped, or taken over by recovery): then nothing changed."""
    schema = check_schema(response_schema)
    with transaction.atomic():
        if InputRequest.objects.filter(tool_call_id=tool_call_id).exists():
            return None
        # the claim that takes it up again is the same attempt going on, not a new one: a lost
        # worker's retries of an idempotent tool (AGUI_TOOL_MAX_ATTEMPTS) count executions
        if not move_call(tool_call_id, ToolCall.Status.AWAITING_INPUT, leaving=[ToolCall.Status.EXECUTING],
                         resume=resume, attempts=F("attempts") - 1):
            return None
        request = InputRequest.objects.create(thread=thread, run=run, tool_call_id=tool_call_id, agent=agent,
                                              message=message, response_schema=schema)
    events.append(thread.pk, custom_events.request_info(payload(request)))
    return request


def _run_on(request):
    """An answer to a parked call's question (inside the answer's transaction): the call is approved
    again (claimable: exactly once, by the continuation's settle), and the run continues once
    nothing else of it waits. False for any other question."""
    parked = ToolCall.objects.filter(pk=request.tool_call_id, status=ToolCall.Status.AWAITING_INPUT,
                                     resume__isnull=False)
    if not parked.exists():
        return False
    move_call(request.tool_call_id, ToolCall.Status.APPROVED, leaving=[ToolCall.Status.AWAITING_INPUT])
    _after(request)
    return True


LIVE_WAIT_STEP = 2.0  # seconds per blocking read, between looks at the run's Stop


def live_key(request_id):
    return f"agui:input:{request_id}:live"


def _live(request):
    return ToolCall.objects.filter(pk=request.tool_call_id, status=ToolCall.Status.EXECUTING).exists()


def _hand_over(request, answer):
    value = payload(request)
    key = live_key(request.pk)

    def send():
        client = events.redis_client()
        client.rpush(key, json.dumps(answer))
        client.expire(key, 3600)
        events.append(request.thread_id, custom_events.request_info_response(value))

    transaction.on_commit(send)
    return request


def ask_live(*, thread, run, tool_call, agent, message, response_schema):
    """Record a running tool's question and show it; None when the call already asked one (one
    question per tool call: InputRequest is one to one with it)."""
    if InputRequest.objects.filter(tool_call_id=tool_call.pk).exists():
        return None
    request = InputRequest.objects.create(thread=thread, run=run, tool_call=tool_call, agent=agent, message=message,
                                          response_schema=check_schema(response_schema))
    events.append(thread.pk, custom_events.request_info(payload(request)))
    return request


def wait_live(request, timeout, stopped=lambda: False):
    """The answer ({"action", "content"?}) to a live question, or None when none came within
    `timeout` seconds or `stopped()` (the run was stopped): then the question is withdrawn."""
    client, key = events.redis_client(), live_key(request.pk)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not stopped():
        got = client.blpop([key], timeout=max(1, min(LIVE_WAIT_STEP, deadline - time.monotonic())))
        if got:
            return json.loads(got[1])
    with transaction.atomic():
        withdrawn = InputRequest.objects.filter(pk=request.pk, status=InputRequest.Status.PENDING).update(
            status=InputRequest.Status.CANCELLED, answered_at=timezone.now())
    if withdrawn:
        request.refresh_from_db()
        events.append(request.thread_id, custom_events.request_info_response(payload(request)))
        return None
    got = client.lpop(key)  # answered just as the wait ended
    return json.loads(got) if got else None
