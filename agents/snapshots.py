"""What a client needs on (re)connect: messages, state, approval cards, and where the live run began."""

from approvals.models import ApprovalRequest
from state import services as state_services

from . import presenters
from .models import Run, Thread


def thread_snapshot(thread_id):
    thread = Thread.objects.select_related("owner").get(pk=thread_id)
    state, version = state_services.snapshot(thread.state_key)
    active = thread.runs.filter(status__in=Run.ACTIVE).exclude(stream_id="").order_by("created_at").first()
    approvals = ApprovalRequest.objects.filter(thread_ref=thread.pk).select_related("approver_group", "decided_by")
    return {
        "messages": [presenters.agui_message(m) for m in thread.messages.all()],
        "state": state,
        "state_version": version,
        "approvals": [presenters.approval(r, viewer=thread.owner) for r in approvals.order_by("created_at")],
        "active_stream_id": active.stream_id if active else None,
    }
