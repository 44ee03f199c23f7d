"""What a client needs on (re)connect: messages, state, approval cards, and where the live run began."""

from django.utils import translation

from approvals.models import ApprovalRequest
from state import services as state_services

from . import presenters, selectors
from .models import Message, Run, Thread, ToolCall, WorkflowInstance
from .registry import get_agent
from .runtime import inputs, statesync


def thread_snapshot(thread_id):
    thread = Thread.objects.select_related("owner__profile").get(pk=thread_id)
    # the words for people (how a call ended, who decides) in the chat owner's language, as the
    # worker wrote them live: the socket has no request for LocaleMiddleware to choose one from
    with translation.override(selectors.user_language(thread.owner)):
        return _snapshot(thread)


def _snapshot(thread):
    doc = state_services.document(thread.state_key)  # predictions awaiting a decision stay visible
    active = thread.runs.filter(status__in=Run.ACTIVE).exclude(stream_id="").order_by("created_at").first()
    approvals = ApprovalRequest.objects.filter(thread_ref=thread.pk).select_related("approver_group", "decided_by", "requester")
    messages = list(thread.messages.all())
    latest = thread.runs.order_by("-created_at").values("pk", "status", "error", "error_code").first()
    return {
        "messages": [presenters.agui_message(m) for m in messages],
        "message_info": message_info(messages),
        "tool_outcomes": tool_outcomes(thread, approvals),
        "state": doc.view,
        "state_version": doc.version,
        "state_meta": statesync.meta_event(doc, force=statesync.has_state(get_agent(thread.agent))),
        "approvals": [presenters.approval(r, viewer=thread.owner) for r in approvals.order_by("created_at")],
        "active_stream_id": active.stream_id if active else None,
        # questions the agents asked the person (agents/runtime/inputs.py), and where a workflow stands
        "input_requests": [inputs.payload(q) for q in thread.input_requests.order_by("created_at")],
        "workflow": workflow_view(WorkflowInstance.objects.filter(thread=thread).first()),
        # the thread's latest run failed: a reloaded page still shows why, and can retry it
        "run_error": {"runId": latest["pk"], "code": latest["error_code"], "message": latest["error"]}
        if latest and latest["status"] == Run.Status.FAILED else None,
    }


def message_info(messages):
    """When each message was written; the last reply of each stopped run is marked as cut off."""
    info = {m.pk: {"at": m.created_at.isoformat()} for m in messages}
    stopped = set(Run.objects.filter(pk__in={m.run_id for m in messages if m.run_id},
                                     status=Run.Status.CANCELLED).values_list("pk", flat=True))
    last = {m.run_id: m for m in messages if m.run_id in stopped and m.role == Message.Role.ASSISTANT}
    for m in last.values():
        if not m.tool_calls:  # a withdrawn request's run ends on its call: that card says Cancelled
            info[m.pk]["stopped"] = True
    return info


def tool_outcomes(thread, approvals):
    """How each settled call of the thread ended, in the person's words (presenters.tool_outcome)."""
    own = {r.tool_call_ref for r in approvals if r.decided_by_id == thread.owner_id}
    out = []
    for call in ToolCall.objects.filter(thread=thread).only("pk", "status", "result", "name", "arguments", "final_arguments"):
        value = presenters.tool_outcome(call, requester_decided=call.pk in own)
        if value:
            out.append(value)
    return out


def workflow_view(instance):
    if instance is None:
        return None
    return {"workflow": instance.workflow, "state": instance.status, "activeAgent": instance.active_agent,
            "case": instance.case, "path": [p["agent"] for p in instance.path], "agentState": instance.agent_state}
