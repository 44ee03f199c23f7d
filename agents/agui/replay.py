"""A run's ending rebuilt from the database, for a reader whose stream lost the run's beginning.

A Redis restart (or a wiped stream) between a POST and its relay's first read leaves the relay
waiting for a RUN_STARTED that will never come; the run itself goes on and ends in the database.
"""

from ag_ui.core import (
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
)

from agents import presenters
from agents.models import Run, ToolCall
from agents.runtime import inputs
from agents.runtime.runner import interrupt_for  # the runner's own wording of an approval interrupt
from approvals.models import ApprovalRequest


def ended_run(run_id):
    """(MESSAGES_SNAPSHOT, RUN_FINISHED or RUN_ERROR) of a run that has ended; None while it has not."""
    run = Run.objects.select_related("thread").filter(pk=run_id).first()
    if run is None or run.status in Run.ACTIVE:
        return None
    messages = MessagesSnapshotEvent(messages=[presenters.agui_message(m) for m in run.thread.messages.all()])
    return messages, run_end(run)


def run_end(run):
    """The last event the run wrote, as its row and its requests tell it."""
    if run.status == Run.Status.FAILED:
        return RunErrorEvent(message=run.error or "The run failed.", code=run.error_code or "internal_error")
    outcome = None
    if run.status == Run.Status.CANCELLED:
        outcome = RunFinishedCancelledOutcome()
    elif run.status == Run.Status.INTERRUPTED:
        # every request the run paused on, as it paused (some may have been answered since)
        interrupts = [interrupt_for(r) for r in ApprovalRequest.objects.filter(run_ref=run.pk).order_by("created_at")]
        interrupts += [inputs.interrupt_for(q) for q in run.input_requests.order_by("created_at")]
        outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
    else:
        client_calls = list(run.tool_calls.filter(status=ToolCall.Status.CLIENT).order_by("created_at")
                            .values_list("pk", flat=True))
        if client_calls:  # frontend tools the client still has to run
            outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=client_calls)
    return RunFinishedEvent(thread_id=run.thread_id, run_id=run.pk, **({"outcome": outcome} if outcome else {}))
