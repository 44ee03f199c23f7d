"""Every CUSTOM event the runtime sends: its name and the shape of its value, in one place.

The chat (static/js/chat.js, chat-questions.js) matches these names as strings; AG-UI clients
other than ours may too, so a name here is part of the protocol surface and does not change.
"""

from ag_ui.core import CustomEvent
from django.utils.translation import gettext as _

from agents import presenters
from approvals import selectors as approval_selectors
from approvals.models import ApprovalRequest

APPROVAL_REQUEST = "approval_request"  # a tool call waits for a person
APPROVAL_RESPONSE = "approval_response"  # ... and this is what they decided
APPROVAL_STATUS = "approval_status"  # a call waits on someone other than the requester (not an interrupt)
APPROVALS = "approvals"  # on (re)connect: every approval card of the thread
REQUEST_INFO = "request_info"  # an agent asks the person a question (agents/runtime/inputs.py)
REQUEST_INFO_RESPONSE = "request_info_response"  # ... answered or cancelled
INPUT_REQUESTS = "input_requests"  # on (re)connect: the open questions
WORKFLOW = "workflow"  # on (re)connect: where a workflow stands
WORKFLOW_STATUS = "status"  # a workflow's state changed (agents/runtime/workflows.py)
WORKFLOW_OUTPUT = "workflow_output"  # a workflow step's output
RUN_ERROR = "run_error"  # on (re)connect: the thread's latest run failed
STATE_VERSION = "state_version"  # the shared state's version and what is only predicted
IGNORED_MESSAGES = "ignored_messages"  # client messages the run did not take (agents/agui/incoming.py)
STATE_NOT_APPLIED = "state_not_applied"  # the state a client sent was not taken; the run uses the server's
TOOL_OUTCOME = "tool_outcome"  # a tool call settled: how it ended, in words for the person (the model has the result)
TOOL_OUTCOMES = "tool_outcomes"  # on (re)connect: every settled call's outcome
MESSAGE_INFO = "message_info"  # on (re)connect: when each message was written, and which replies a Stop cut off


def approval_request(request, viewer=None):
    return CustomEvent(name=APPROVAL_REQUEST, value=presenters.approval(request, viewer=viewer))


def approval_response(request, viewer=None):
    """The approval card after a decision: the same value on the thread socket and the AG-UI stream.

    The card's fields (presenters.approval) plus `approved`, and `arguments` are the ones the call
    runs with (the edited ones after an edit); `requestedArguments` keeps what the model asked for.
    """
    value = presenters.approval(request, viewer=viewer)
    value["approved"] = request.status in ApprovalRequest.RESOLVED_APPROVED
    value["requestedArguments"] = request.arguments
    if request.final_arguments is not None:
        value["arguments"] = request.final_arguments
    return CustomEvent(name=APPROVAL_RESPONSE, value=value)


def approval_status(request):
    """A paused call the requester cannot answer: who decides, for people and for programs.

    Sent instead of an interrupt for it (the official client refuses every further run until
    each interrupt it got is answered); the decision arrives later as approval_response and the
    continuation run (RUN_STARTED with parentRunId), in the same AG-UI response while it waits.
    """
    approver = presenters.approver(request)
    decided_by = approver.get("group") or approver["kind"]
    short = approval_selectors.out_of_reach(approval=request)  # as the chat's card says it
    if short is None:
        message = _("%(request)s: waiting for a decision by %(approver)s. The result appears here once they "
                    "decide.") % {"request": request.description, "approver": decided_by}
    elif short["told"]:
        message = _("%(request)s: nobody can approve this request right now. The admins have been told.") % {
            "request": request.description}
    else:
        message = _("%(request)s: nobody can approve this request right now.") % {"request": request.description}
    return CustomEvent(name=APPROVAL_STATUS, value={
        "approvalId": request.pk,
        "toolCallId": request.tool_call_ref,
        "toolCallName": request.tool_name,
        "runId": request.run_ref,
        "status": request.status,
        "decidedBy": decided_by,
        "approver": approver,
        "message": message,
        **({"outOfReach": {"adminsTold": short["told"]}} if short is not None else {}),
        **({"expiresAt": request.expires_at.isoformat()} if request.expires_at else {}),
    })


def approvals(cards):
    return CustomEvent(name=APPROVALS, value={"approvals": cards})


def request_info(payload):
    return CustomEvent(name=REQUEST_INFO, value=payload)


def request_info_response(payload):
    return CustomEvent(name=REQUEST_INFO_RESPONSE, value=payload)


def input_requests(payloads):
    return CustomEvent(name=INPUT_REQUESTS, value={"requests": payloads})


def workflow(position):
    return CustomEvent(name=WORKFLOW, value=position)


def workflow_status(state):
    return CustomEvent(name=WORKFLOW_STATUS, value={"state": state})


def workflow_output(value):
    return CustomEvent(name=WORKFLOW_OUTPUT, value=value)


def run_error(value):
    return CustomEvent(name=RUN_ERROR, value=value)


def state_version(version, provisional):
    """`provisional`: {state key: the tool call whose prediction it is}."""
    return CustomEvent(name=STATE_VERSION, value={
        "version": version,
        "provisional": [{"key": key, "toolCallId": ref} for key, ref in provisional.items()],
    })


def state_not_applied(code, message, version):
    """Why the run goes on without the client's state: {code, message, version (of the state it uses)}."""
    return CustomEvent(name=STATE_NOT_APPLIED, value={"code": code, "message": message, "version": version})


IGNORED_REASON = (
    "This server keeps the conversation and the agent's instructions itself: system and developer "
    "messages from the client are not given to the model, assistant messages the conversation "
    "does not hold are not added to it, and a message it holds is not changed by an edited copy sent "
    "under its id (send the change as a new message). Each is told once per conversation."
)


def ignored_messages(entries):
    """{messages: [{id, role}], reason}: what of the client's history the run did not take."""
    return CustomEvent(name=IGNORED_MESSAGES, value={
        "messages": [{"id": e["id"], "role": e["role"]} for e in entries], "reason": IGNORED_REASON})


def tool_outcome(value):
    """presenters.tool_outcome: {toolCallId, status, message, result?}."""
    return CustomEvent(name=TOOL_OUTCOME, value=value)


def tool_outcomes(values):
    return CustomEvent(name=TOOL_OUTCOMES, value={"outcomes": values})


def message_info(info):
    """{messages: {messageId: {at: ISO time, stopped?: true}}}."""
    return CustomEvent(name=MESSAGE_INFO, value={"messages": info})
