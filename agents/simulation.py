"""The policy simulator's data: the latest recorded calls of a tool, for approvals.simulate.

approvals must not import agents, so agents hands it this function at start-up.
"""

from approvals import simulate

from .models import ToolCall

S = ToolCall.Status
GATED = {S.AWAITING_APPROVAL, S.APPROVED, S.REJECTED, S.EXPIRED, S.CANCELLED}


def _outcome(call):
    if call.status == S.DENIED:
        return "denied"
    if call.approval_id or call.status in GATED:
        return "gated"
    if call.status in (S.EXECUTING, S.SUCCEEDED, S.FAILED, S.OUTCOME_UNKNOWN):
        return "allowed"
    return ""


def recorded_calls(tool_name, limit):
    """Validated calls only (an invalid call never reached policy), newest first."""
    calls = (ToolCall.objects.filter(name=tool_name, arguments__isnull=False)  # toolcall_name_recent_idx
             .select_related("thread__owner").order_by("-created_at")[:limit])
    return [
        simulate.RecordedCall(
            id=c.pk, tool_name=c.name, arguments=c.arguments, created_at=c.created_at, user=c.thread.owner,
            # the agent policy judged the call by: a workflow's participant, not the thread's workflow
            agent=c.agent or c.thread.agent, thread=c.thread_id, outcome=_outcome(c), status=c.status,
        )
        for c in calls
    ]


simulate.register_call_source(recorded_calls)
