"""Approval and tool events (approvals.signals, sent after commit) become webhook deliveries."""

from django.core.exceptions import ObjectDoesNotExist
from django.dispatch import receiver

from approvals import outside
from approvals.signals import approval_event, tool_outcome

from . import services

# inbox notice kind -> event type; reminders are not webhook events. A withdrawn request (a policy
# that now blocks it, a stopped run) is settled as much as a decided one: approval.decided with status
# "cancelled" (without it an outside agent waiting on its callback_url never heard its answer)
EVENTS = {"requested": "approval.requested", "decided": "approval.decided", "cancelled": "approval.decided",
          "expired": "approval.expired", "escalated": "approval.escalated", "rerouted": "approval.rerouted"}
# what a request's own callback_url hears: the answer, and that others were asked (escalated, or a
# policy change gave it other deciders, a larger quorum, a higher risk: rerouted)
CALLBACK_EVENTS = {"approval.decided", "approval.expired", "approval.escalated", "approval.rerouted"}


def _iso(moment):
    return moment.isoformat() if moment else None


def approval_data(req):
    """The request as a receiver needs it: the final arguments (edited or not) and the feedback; the
    thread and run are ours, or an outside agent's own refs as it gave them."""
    own = outside.refs(req)
    return {
        "id": req.id, "status": req.status, "tool_name": req.tool_name, "arguments": req.arguments,
        "final_arguments": req.final_arguments, "feedback": req.feedback, "description": req.description,
        "risk": req.risk, "deciders": req.approver_label, "required_approvals": req.required_approvals,
        "thread": req.thread_ref or own["thread"] or None, "run": req.run_ref or own["run"] or None,
        "tool_call": req.tool_call_ref or None, "decided_at": _iso(req.decided_at),
        "expires_at": _iso(req.expires_at), "escalated_at": _iso(req.escalated_at), "created_at": _iso(req.created_at),
        # who decides besides `deciders` once escalated: the receiver that pages them needs the name
        "escalation_group": req.escalation_group.name if req.escalated_at and req.escalation_group_id else None,
    }


def callback_url(req):
    """The callback_url an outside agent gave with its request (approvals.models.OutsideCall)."""
    try:
        return req.outside.callback_url or ""
    except ObjectDoesNotExist:
        return ""


@receiver(approval_event, dispatch_uid="webhooks.approval_event")
def on_approval_event(sender, kind, request, **kwargs):
    event = EVENTS.get(kind)
    if event == "approval.decided" and request.status == "pending":
        return  # one approval of several needed: not decided yet
    if event:
        callback = callback_url(request) if event in CALLBACK_EVENTS else ""
        services.emit(event, approval_data(request), approval_ref=request.id, callback_url=callback)


@receiver(tool_outcome, dispatch_uid="webhooks.tool_outcome")
def on_tool_outcome(sender, data, approval_ref="", **kwargs):
    services.emit("tool.outcome", data, approval_ref=approval_ref or "")
