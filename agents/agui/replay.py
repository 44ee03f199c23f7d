"""A run's ending rebuilt from the database, for a reader whose stream lost the run's beginning.

A Redis restart (or a wiped stream) between a POST and its relay's first read leaves the relay
waiting for a RUN_STARTED that will never come; the run itself goes on and ends in the database.
The same rebuilding answers a client that comes back (a plain POST: no new message, no resume)
with the runs it has not seen (catch_up), and heads the continuation of a run paused on someone
else's review that the relay follows (awaits_review, continuation_head).
"""

from ag_ui.core import (
    PROTOCOL_VERSION,
    MessagesSnapshotEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
)
from django.utils.translation import gettext as _

from agents import presenters
from agents.agui import custom_events
from agents.models import InputRequest, Message, Run, ToolCall
from agents.runtime import inputs
from agents.runtime.runner import interrupt_for  # the runner's own wording of an approval interrupt
from agents.services import answered_by_requester
from agui_project.queries import one
from approvals.models import ApprovalRequest

CATCH_UP_RUNS = 20  # runs a returning client is shown at most (its MESSAGES_SNAPSHOT: presenters.snapshot_window)


def ended_run(run_id):
    """(MESSAGES_SNAPSHOT, CUSTOM approval_status of each call someone else still decides, RUN_FINISHED or
    RUN_ERROR) of a run that has ended; None while it has not."""
    run = one(Run.objects.select_related("thread").filter(pk=run_id))
    if run is None or run.status in Run.ACTIVE:
        return None
    messages = MessagesSnapshotEvent(messages=[presenters.agui_message(m)
                                                for m in presenters.snapshot_window(run.thread.messages.all())])
    return messages, *_statuses(run), run_end(run)


def _statuses(run):
    """What the paused run told its requester instead of an interrupt (runner.pause)."""
    if run.status != Run.Status.INTERRUPTED:
        return []
    waiting = ApprovalRequest.objects.filter(run_ref=run.pk, status=ApprovalRequest.Status.PENDING) \
        .select_related("approver_group").order_by("created_at")
    return [custom_events.approval_status(r) for r in waiting if not answered_by_requester(r)]


def run_end(run):
    """The last event the run wrote, as its row and its requests tell it."""
    if run.status == Run.Status.FAILED:
        return RunErrorEvent(message=run.error or _("The run failed."), code=run.error_code or "internal_error")
    outcome = None
    if run.status == Run.Status.CANCELLED:
        outcome = RunFinishedCancelledOutcome()
    elif run.status == Run.Status.INTERRUPTED:
        # every request the run paused on, as it paused (some may have been answered since), that
        # its requester answers; the ones someone else decides were CUSTOM approval_status (runner)
        requests = ApprovalRequest.objects.filter(run_ref=run.pk).order_by("created_at")
        interrupts = [interrupt_for(r) for r in requests if answered_by_requester(r)]
        interrupts += [inputs.interrupt_for(q) for q in run.input_requests.order_by("created_at")]
        outcome = RunFinishedInterruptOutcome(interrupts=interrupts) if interrupts else None
    else:
        client_calls = list(run.tool_calls.filter(status=ToolCall.Status.CLIENT).order_by("created_at")
                            .values_list("pk", flat=True))
        if client_calls:  # frontend tools the client still has to run
            outcome = RunFinishedSuccessOutcome(pending_tool_call_ids=client_calls)
    return RunFinishedEvent(thread_id=run.thread_id, run_id=run.pk, **({"outcome": outcome} if outcome else {}))


def awaits_review(run_id):
    """Whether the run paused on calls someone else decides, with nothing left for its requester to answer."""
    run = one(Run.objects.filter(pk=run_id))
    if run is None or run.status != Run.Status.INTERRUPTED:
        return False
    if run.input_requests.filter(status=InputRequest.Status.PENDING).exists():
        return False
    requests = list(ApprovalRequest.objects.filter(run_ref=run_id))
    if any(answered_by_requester(r) and r.is_pending for r in requests):
        return False
    return any(not answered_by_requester(r) for r in requests)


def continuation_head(run_id):
    """What follows a continuation's RUN_STARTED for a client that did not send the decision:
    the conversation before it, then the decisions that started it (as a resume's POST sends)."""
    run = Run.objects.select_related("thread__owner").get(pk=run_id)
    messages = MessagesSnapshotEvent(messages=[presenters.agui_message(m)
                                                for m in presenters.snapshot_window(before_answer(run.thread, run))])
    decided = (ApprovalRequest.objects.filter(run_ref=run.parent_run_id).exclude(status=ApprovalRequest.Status.PENDING)
               .select_related("approver_group", "decided_by").order_by("created_at")) if run.parent_run_id else []
    return [messages, *(custom_events.approval_response(r, viewer=run.thread.owner) for r in decided)]


def before_answer(thread, live):
    """The thread's messages for a client that joins `live` (a run still going) at its RUN_STARTED:
    all but what that run streams, its answer. The person's turn it answers is kept: start_run stores
    it with the run, a user message never comes as events, and a MESSAGES_SNAPSHOT replaces the
    client's list (it lost the question: on a first turn the list was emptied). What the run stores
    after its first answer (text sent with a resume, after the calls' results) comes in its stream."""
    kept, answering = [], False
    for m in thread.messages.all():
        if m.run_id == live.pk and (answering or m.role != Message.Role.USER):
            answering = True
            continue
        kept.append(m)
    return kept


def _started(run):
    return RunStartedEvent(thread_id=run.thread_id, run_id=run.pk, protocol_version=PROTOCOL_VERSION,
                           **({"parent_run_id": run.parent_run_id} if run.parent_run_id else {}))


def catch_up(thread, seen_message_ids):
    """A plain POST (no new message, no resume): the runs its client has not seen, then what is live.

    The client has seen a run when it holds one of the messages the run gave (their ids come from our
    events), or when it gave none. A user message's id is the client's own: holding it says the client
    asked, not that the answer reached it (a stream cut by a restart before the run ended).
    Returns None when there is nothing to show (the POST is then an ordinary new turn), else
    {"replayed": [events of the unseen runs that ended], "live": a run still going or "",
    "follow": the run whose continuation to wait for (it awaits someone else's review) or ""}.
    When everything was seen but the latest run still waits on a review, it is shown again.
    """
    runs = list(thread.runs.order_by("created_at", "pk"))
    if not runs:
        return None
    held = Message.objects.filter(thread=thread, pk__in=list(seen_message_ids)).exclude(run=None)
    seen_runs = set(held.exclude(role=Message.Role.USER).values_list("run_id", flat=True))
    asked = set(held.filter(role=Message.Role.USER).values_list("run_id", flat=True)) - seen_runs
    if asked:  # runs the client only asked: seen when they gave nothing to show
        seen_runs |= asked - set(Message.objects.filter(run__in=asked).exclude(role=Message.Role.USER)
                                 .values_list("run_id", flat=True))
    last_seen = max((i for i, r in enumerate(runs) if r.pk in seen_runs), default=-1)
    unseen = runs[last_seen + 1:][-CATCH_UP_RUNS:]
    if not unseen and (runs[-1].status in Run.ACTIVE or awaits_review(runs[-1].pk)):
        unseen = runs[-1:]
    if not unseen:
        return None
    live = unseen[-1] if unseen[-1].status in Run.ACTIVE else None
    ended = unseen[:-1] if live else unseen
    replayed = []
    for run in ended:
        replayed.append(_started(run))
        if len(replayed) == 1:  # the conversation as it stands, the live run's part excepted (it streams)
            held = before_answer(thread, live) if live else thread.messages.all()
            replayed.append(MessagesSnapshotEvent(messages=[presenters.agui_message(m) for m in presenters.snapshot_window(held)]))
        decided = ApprovalRequest.objects.filter(run_ref=run.parent_run_id).exclude(
            status=ApprovalRequest.Status.PENDING).select_related("approver_group", "decided_by").order_by(
            "created_at") if run.parent_run_id else []
        replayed += [custom_events.approval_response(r, viewer=thread.owner) for r in decided]  # what it continues
        replayed += [*_statuses(run), run_end(run)]
    follow = ended[-1].pk if ended and not live and awaits_review(ended[-1].pk) else ""
    return {"replayed": replayed, "live": live, "follow": follow}
