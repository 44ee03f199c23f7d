"""State changes of threads, runs and messages (DESIGN.md "The life of a run", steps 1 and 6)."""

import logging
import time
from datetime import timedelta
from functools import partial

import redis
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone, translation
from django.utils.text import get_text_list
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from agui_project import jsoncheck
from agui_project.queries import (
    Prepared,
    PreparedInsert,
    PreparedUpdate,
    commit_lazily,
    one,
    read_ahead,
    unanswered,
)
from approvals import services as approval_services
from approvals.models import REQUESTER_OFF, ApprovalRequest, ApproverKind

from . import dispatch, selectors, thread_ids, watching
from .agui import custom_events
from .dispatch import REDIS_DOWN, announce, announce_after_commit  # noqa: F401  (re-exported)
from .messages import add_message, add_messages  # noqa: F401  (re-exported: callers write services.add_message)
from .models import InputRequest, Message, Run, Thread, ToolCall, new_id
from .runtime import events, inputs, notices
from .transitions import RUN_ROWS, continue_run, move_call, move_call_ahead, move_run

log = logging.getLogger(__name__)


class RunConflict(Exception):
    """The thread cannot take a new run now (code: run_active | interrupt_pending | run_exists;
    too_many_runs: TooManyRuns)."""

    def __init__(self, code, message, pending=()):
        super().__init__(message)
        self.code, self.message, self.pending = code, message, list(pending)


class TooManyRuns(RunConflict):
    """The account started AGUI_MAX_RUNS_PER_HOUR runs in the last hour (code too_many_runs)."""

    def __init__(self, message, retry_after):
        super().__init__("too_many_runs", message)
        self.retry_after = retry_after  # seconds: the REST API's Retry-After header


def within_hourly_runs(user):
    """At most AGUI_MAX_RUNS_PER_HOUR runs an account starts in an hour, whatever became of them:
    each costs model calls (AGUI_MAX_TURNS bounds one run, nothing bounded how many). A run counts
    when the account starts it (a message, a new thread, a Retry); a continuation does not: it exists
    because someone decided a call or answered a question the counted run asked, it is that run's
    work going on, and refusing it would strand a decision already recorded (which may be a
    reviewer's, not the account's). One LIMITed count; the oldest counted run only when refused."""
    limit, now = settings.AGUI_MAX_RUNS_PER_HOUR, timezone.now()
    recent = selectors.runs_started_since(user, now - timedelta(hours=1))
    if recent[:limit].count() < limit:
        return
    oldest = next(iter(recent.order_by("-created_at").values_list("created_at", flat=True)[limit - 1:limit]), now)
    retry_after = max(1, int((oldest + timedelta(hours=1) - now).total_seconds()) + 1)
    minutes = -(-retry_after // 60)  # a person is told when, not "later"
    raise TooManyRuns(" ".join((
        ngettext("This account started %(count)s agent run in the last hour, the most one account may.",
                 "This account started %(count)s agent runs in the last hour, the most one account may.",
                 limit) % {"count": limit},
        ngettext("Nothing was stored: try again in %(minutes)s minute.",
                 "Nothing was stored: try again in %(minutes)s minutes.", minutes) % {"minutes": minutes})),
        retry_after=retry_after)


_THREAD = PreparedInsert(Thread)  # every new chat: its INSERT compiled once


def create_thread(user, agent, title="", thread_id=None):
    """A new thread; a client-chosen id that was ever used raises thread_ids.ThreadIdTaken."""
    thread_id = thread_id or new_id()
    try:
        # no savepoint inside a caller's transaction (the AG-UI POST's): ThreadIdTaken leaves it,
        # and every caller lets it roll the whole transaction back
        with transaction.atomic(savepoint=False):
            thread_ids.claim(thread_id, user)
            thread = _THREAD.create(id=thread_id, owner=user, agent=agent, title=title[:200])
    except IntegrityError:  # a row that predates its claim
        raise thread_ids.ThreadIdTaken(thread_id) from None
    # a new thread's stream starts empty: Redis may hold one under this id that the database no longer
    # claims (a restored backup), whose events would replay to the new owner; before the run's
    # RUN_STARTED, which start_run appends in a later on_commit callback of the same transaction
    transaction.on_commit(lambda: thread_ids.drop_stream(thread_id))
    return thread


def _duplicate_key(exc):
    """The IntegrityError is a taken key (not a CHECK or a foreign key): the driver's own error says
    which, PostgreSQL's by its SQLSTATE, SQLite's only in its message."""
    cause = exc.__cause__
    return getattr(cause, "sqlstate", None) == "23505" or "UNIQUE constraint failed" in str(cause or exc)


def pending_approvals(thread):
    return list(
        ApprovalRequest.objects.filter(thread_ref=thread.id, status=ApprovalRequest.Status.PENDING).order_by("created_at")
    )


def answered_by_requester(request):
    """Whether the requester's own client answers this request (an interrupt in RUN_FINISHED).

    A call routed to a group is decided elsewhere (the inbox): the requester's client gets it as
    CUSTOM approval_status instead, because @ag-ui/client refuses every further run until each
    interrupt it was sent is resumed, and the requester's only possible answer is to withdraw it.
    """
    return request.approver_kind == ApproverKind.REQUESTER


def start_run(thread, user, content=None, *, message_id=None, run_id=None, forwarded_props=None,
              messages=(), client_tools=None, new_thread=False, context=None, ignored=None):
    """Store the new messages and a queued Run; on commit announce it and enqueue the worker.

    `content` is one user message; `messages` are (id, role, content, tool_call_id) from an
    AG-UI client (user messages and frontend-tool results), already filtered to new ones, optionally
    followed by (parts, error) (agents/agui/incoming.py). `context`: the client's context[] for the
    model; `ignored`: the client messages this run tells it did not take (incoming.ignored).
    `new_thread`: the caller created the thread in the transaction this runs in, so no run or
    question can be open on it, and no one else can write to it before the commit.
    """
    within_hourly_runs(user)  # before anything is written: a refused start stores nothing
    if not new_thread:
        supersede_abandoned(thread, user)
    with transaction.atomic(savepoint=not new_thread):  # no savepoint inside the creator's transaction
        if not new_thread:
            # the row lock orders this thread's writers; its message_seq is then current (add_messages)
            thread = Thread.objects.select_for_update().get(pk=thread.pk)
            if thread.runs.filter(status__in=Run.ACTIVE).exists():
                raise RunConflict("run_active", _("the agent is still answering; wait for it or stop it"))
        pending = [] if new_thread else pending_approvals(thread) + inputs.pending(thread)  # questions too
        if pending:
            others = {r.approver_group.name for r in pending if isinstance(r, ApprovalRequest)
                      and not answered_by_requester(r) and r.approver_group_id}
            # words for the person; programs find the ids in RunConflict.pending (the API's `pending`)
            if others and all(isinstance(r, ApprovalRequest) and not answered_by_requester(r) for r in pending):
                message = _("This chat is waiting for %(groups)s to decide on “%(request)s”. You can write "
                            "again once they have decided.") % {
                    "groups": get_text_list(sorted(others), _("and")), "request": pending[0].description}
            else:
                message = _("This chat is waiting for your answer to the request above: answer it first.")
            raise RunConflict("interrupt_pending", message, pending)
        try:  # a taken run id is refused by the primary key (no separate look-up first)
            run = RUN_ROWS.create(
                thread=thread, forwarded_props=forwarded_props or {}, client_tools=client_tools or [],
                context=context or [], ignored_messages=ignored or [], **({"id": run_id} if run_id else {}),
            )
        except IntegrityError as exc:
            if run_id and _duplicate_key(exc):
                raise RunConflict("run_exists", _("run %(id)s already exists") % {"id": run_id}) from None
            raise
        if content:
            messages = [*messages, (message_id, Message.Role.USER, content, "")]
        run.new_messages = add_messages(thread, messages, run=run, locked=True)
        for row in messages:
            role, text, tool_call_id, error = row[1], row[2], row[3], (row[5] if len(row) > 5 else "")
            if role == Message.Role.TOOL:  # a frontend tool's result settles its call
                move_call(tool_call_id, ToolCall.Status.FAILED if error else ToolCall.Status.SUCCEEDED,
                          leaving=[ToolCall.Status.CLIENT], thread=thread, result=f"Error: {error}" if error else text)
            elif not thread.title and role == Message.Role.USER and text.strip():
                thread.title = text.strip().splitlines()[0][:80]
        thread.save(update_fields=["title", "updated_at", "message_seq"])  # message_seq: add_messages(locked=True)
        transaction.on_commit(lambda: announce_after_commit(run.pk, run))
    return run


def announce_unannounced(limit=100):
    """Beat: queued runs whose announce never happened (Redis was down at commit, or the process
    died) get RUN_STARTED and their task now. Only runs older than AGUI_ANNOUNCE_RETRY_SECONDS,
    longer than the event writer's own retries (AGUI_REDIS_RETRIES), so an announce that is only
    slow is not doubled. Returns the run ids."""
    cutoff = timezone.now() - timedelta(seconds=settings.AGUI_ANNOUNCE_RETRY_SECONDS)
    unannounced = list(Run.objects.filter(status=Run.Status.QUEUED, stream_id="", created_at__lt=cutoff)
                       .order_by("created_at").values_list("pk", flat=True)[:limit])
    for run_id in unannounced:
        announce(run_id)
    if unannounced:
        log.warning("announced %d queued run(s) that could not be announced when they were made", len(unannounced))
    return unannounced


def tell_rerouted(request):
    """A policy change gave a paused call's request to other deciders: the chat's card and its
    "waiting for" line say who decides now (they said the former group until a reload). After the
    commit; a Redis outage loses only the notice (a reconnecting chat's snapshot carries it)."""
    thread = Thread.objects.select_related("owner__profile").filter(pk=request.thread_ref).first() \
        if request.tool_call_ref and request.thread_ref else None
    if thread is None:  # an outside agent's request: no chat of ours shows it
        return
    with translation.override(selectors.user_language(thread.owner)):  # the card in its reader's words
        event = custom_events.approval_request(request, viewer=thread.owner)
    notices.tell(thread.pk, event, what=f"the new deciders of request {request.pk}")


def publish_end(run_id, thread_id, event):
    """After commit, the last event of a run that ended outside its worker (a Stop before it started,
    recovery's verdict). A Redis outage keeps it on the row, for the beat to publish once Redis
    answers (execution.publish_undelivered_ends): the change stands, answered, and never ends silently."""
    try:
        events.notice(thread_id, event)
    except redis.RedisError as exc:
        log.warning("the end of run %s kept for the beat (Redis unreachable: %s)", run_id, exc)
        Run.objects.filter(pk=run_id).update(undelivered_end=events.encode(event))


_CALL_STATUS = {
    ApprovalRequest.Status.APPROVED: ToolCall.Status.APPROVED,
    ApprovalRequest.Status.MODIFIED: ToolCall.Status.APPROVED,
    ApprovalRequest.Status.REJECTED: ToolCall.Status.REJECTED,
    ApprovalRequest.Status.RESPONDED: ToolCall.Status.RESPONDED,
    ApprovalRequest.Status.EXPIRED: ToolCall.Status.EXPIRED,
    ApprovalRequest.Status.CANCELLED: ToolCall.Status.CANCELLED,
}


# a decision's reads of its paused call and run, compiled once (agui_project/queries.Prepared)
_PAUSED_CALL = Prepared(ToolCall, lambda pk, approval: ToolCall.objects.select_related(
    "thread__owner__profile").filter(pk=pk, approval_id=approval), arity=2)
_LOCKED_RUN = Prepared(Run, lambda pk: Run.objects.select_for_update().filter(pk=pk))


def approval_resolved(request):
    """A decision landed: record the call's fate, tell the chat, and continue the run when nothing
    waits. Returns the continuation it started, if any."""
    status = _CALL_STATUS.get(request.status)
    if status is None:
        return
    # inside an AG-UI resume's transaction (apply_resume), which any error rolls back whole: no savepoint
    with transaction.atomic(savepoint=False):
        call = _PAUSED_CALL.one(request.tool_call_ref, str(request.pk))
        if call is None:
            return
        owner = call.thread.owner  # read with the call: the chat's notice is worded for its viewer
        # lock the paused run first: concurrent decisions on one run then see each other's writes.
        # The call is not read again under it: move_call's update is conditional on its status
        # (what a second decision would have changed), and the fields read above never change.
        call.final_arguments = request.final_arguments if status == ToolCall.Status.APPROVED else None
        call.feedback = request.feedback
        fate = move_call_ahead(call.pk, status, leaving=[ToolCall.Status.AWAITING_APPROVAL],
                               final_arguments=call.final_arguments, feedback=call.feedback, updated_at=timezone.now())
        # the lock, the call's fate and what then stands, in one round trip (PostgreSQL), in this order
        with read_ahead([(_LOCKED_RUN, (call.run_id,)), fate, selectors.standing_read(call.run_id)], locks=True):
            run = _LOCKED_RUN.one(call.run_id)
            update, keys, fields = fate
            if update.update(*keys, **fields) != 1:
                return
            # nothing else waits (nor a question to answer): the notice goes with the continuation's
            # RUN_STARTED, in one write, so the worker is woken a round trip sooner
            waiting, continued = selectors.waiting_or_continued(run.pk)
        with translation.override(selectors.user_language(owner)):  # the card in its reader's words (a worker's
            event = custom_events.approval_response(request, viewer=owner)  # language is the site's)
        continuation = None if waiting else continue_run(run, notices=(event,), continued=continued)
        if continuation is None:
            transaction.on_commit(lambda: notices.tell(call.thread_id, event, what=event.name))
        else:  # its thread, owner and profile as read with the call: a worker running it need not read them again
            continuation.thread = call.thread
    return continuation


def wake_decided(request):
    """After a decision's commit: a worker makes and runs the continuation (continue_decided), off
    the decider's request. An AG-UI resume, whose response streams the continuation under the
    client's run id, wakes it here. An outside agent's request has no run of ours waiting."""
    if not request.tool_call_ref:
        return
    if dispatch.streams_here():
        approval_resolved(request)
    else:
        dispatch.continue_elsewhere(request.pk)


# a committed decision as its wake-up reads it (the card's approver, decider and requester with it)
_DECIDED_REQUEST = Prepared(ApprovalRequest, lambda pk: ApprovalRequest.objects.select_related(
    "approver_group", "escalation_group", "requester", "decided_by").filter(pk=pk))


def continue_decided(request_id):
    """In a worker: approval_resolved() of a committed decision, its continuation announced
    (RUN_STARTED on the stream) but not handed to another worker. Returns the continuation (the Run
    as made, with its thread, owner and profile, and the stream id it was announced with, which its
    claim stores) when the caller is to run it itself: [] or [run]. Should it never run it, the
    beat's requeue_lost_runs sends it again."""
    request = _DECIDED_REQUEST.one(str(request_id))
    if request is None:
        return []
    with dispatch.announced(defer=True) as heads, transaction.atomic():
        # the call's fate and its continuation: lost with the server, the beat's resume_stalled
        # makes them again from the decision (committed, and waited for, by the decider's request)
        commit_lazily()
        continuation = approval_resolved(request)
    if continuation is None or continuation.pk not in heads:  # announced once Redis took its RUN_STARTED
        return []
    continuation.stream_id = heads[continuation.pk][0]  # stored with the run's claim (transitions.claim_run)
    return [continuation]


def resume_stalled():
    """Beat: the safety net for a process that died between a decision and its continuation.

    Returns the ids of the paused runs it continued.
    """
    resolved = ApprovalRequest.objects.filter(
        pk__in=ToolCall.objects.filter(status=ToolCall.Status.AWAITING_APPROVAL).values("approval_id")
    ).exclude(status=ApprovalRequest.Status.PENDING)
    started = []
    for request in resolved[:100]:  # decided, but the call never heard of it
        continuation = approval_resolved(request)
        if continuation is not None:
            started.append(continuation.parent_run_id)
    stalled = Run.objects.filter(status=Run.Status.INTERRUPTED, continuation__isnull=True).exclude(
        tool_calls__status__in=ToolCall.WAITING
    )
    for run_id in list(stalled.values_list("pk", flat=True)[:100]):
        with transaction.atomic():
            run = Run.objects.select_for_update().get(pk=run_id)
            if not selectors.has_waiting_calls(run.pk) and continue_run(run):
                started.append(run_id)
    return started


class ResumeError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


def _said_with_fields(message, errors, labels=None):
    """A refusal and what it found wrong, field by field, as sentences: "The edited arguments are not
    valid: Subscription: Must be at most 64 characters long." (an AG-UI RUN_ERROR has only a message;
    each field by the label its editor shows, `labels`, else its name). Sentences that only repeat
    the message, or concern the whole ("__root__"), go without a name."""
    details = []
    for field, sentences in (errors or {}).items():
        for sentence in sentences if isinstance(sentences, list | tuple) else [sentences]:
            sentence = str(sentence)
            said = sentence if field in ("__root__", "") else f"{(labels or {}).get(field, field)}: {sentence}"
            if sentence != message and said not in details:
                details.append(said)
    if not details:
        return message
    return _("%(message)s: %(details)s") % {"message": message, "details": " ".join(details)}


def release_resume_id(thread, run_id):
    """After answers that did not finish their run (someone else still decides one of its calls):
    the client's run id is not kept for the continuation, because the response to those answers
    uses it as a run of its own (agents/agui/endpoint.py acknowledged). Returns the paused run's id."""
    paused = thread.runs.filter(status=Run.Status.INTERRUPTED, resume_run_id=run_id).values_list("pk", flat=True).first()
    if paused:
        Run.objects.filter(pk=paused, resume_run_id=run_id).update(resume_run_id="")
    return paused


_RESUME_CODES = {
    approval_services.NotPending: "already_decided",
    approval_services.Forbidden: "forbidden",
    approval_services.InvalidArguments: "invalid_arguments",
    approval_services.FeedbackRequired: "feedback_required",
    approval_services.EditDenied: "edit_denied",
    approval_services.EditNeedsOtherApprover: "edit_needs_other_approver",
    approval_services.DecisionNotAllowed: "decision_not_allowed",
}
RESUME_DECISIONS = ("approve", "edit", "reject", "respond")
FEEDBACK_MAX = 5000  # characters of a decision's feedback, as REST's decide takes (approvals/api.py)


def _resume_feedback(interrupt_id, payload):
    """payload.feedback as the decision stores it: text of at most FEEDBACK_MAX characters, as REST's
    decide and the interrupt's responseSchema have it ("" when absent). Anything else was stored as
    str() of it, unbounded (an object as its Python repr; 0 and false as no feedback at all), and went
    to the audit, the webhooks and the model's context."""
    feedback = payload.get("feedback")
    if feedback is None:
        return ""
    if not isinstance(feedback, str):
        raise ResumeError("invalid_resume", _("interrupt %(id)s: payload.feedback must be text") % {
            "id": interrupt_id})
    if len(feedback) > FEEDBACK_MAX:
        raise ResumeError("invalid_resume", _(
            "interrupt %(id)s: payload.feedback holds %(length)s characters; at most %(max)s are accepted") % {
                "id": interrupt_id, "length": len(feedback), "max": FEEDBACK_MAX})
    return feedback


def _resume_decision(interrupt_id, payload):
    """The engine's decision for one resume payload: {"decision": approve | edit | reject | respond}
    (interrupt_for's responseSchema), or the older {"approved": bool} (also "accepted")."""
    decision = payload.get("decision")
    approved = payload.get("approved", payload.get("accepted"))
    if decision is None:
        if not isinstance(approved, bool):  # both ways, as the interrupt's responseSchema offers them
            raise ResumeError("invalid_resume", _(
                "interrupt %(id)s: the payload says neither decision (approve, edit, reject or respond) nor "
                "approved (true or false)") % {"id": interrupt_id})
        return "approve" if approved else "reject"
    if approved is not None and not isinstance(approved, bool):  # 1 read as true, "no" as a contradiction
        raise ResumeError("invalid_resume", _("interrupt %(id)s: payload.approved must be true or false") % {
            "id": interrupt_id})
    if decision not in RESUME_DECISIONS:
        raise ResumeError("invalid_resume", _("interrupt %(id)s: payload.decision must be one of %(choices)s") % {
            "id": interrupt_id, "choices": ", ".join(RESUME_DECISIONS)})
    if approved is not None and approved != (decision in ("approve", "edit")):
        raise ResumeError("invalid_resume", _("interrupt %(id)s: payload.approved contradicts payload.decision") % {
            "id": interrupt_id})
    if decision == "edit" and not isinstance(payload.get("arguments", payload.get("editedArgs")), dict):
        raise ResumeError("invalid_arguments", _("interrupt %(id)s: an edit needs the edited arguments") % {
            "id": interrupt_id})
    return "approve" if decision == "edit" else decision


# a resume's reads and its paused runs' update, compiled once (agui_project/queries.Prepared); the
# reads for up to four answers (a compiled statement per count: a client's count is not trusted further)
_NAMED_OR_PENDING = {}
_RESUME_ID = PreparedUpdate(Run, lambda pk: Run.objects.filter(pk=pk, status=Run.Status.INTERRUPTED))


def _named_or_pending_query(model, thread_field, thread, *pks):
    """A thread's requests (model: ApprovalRequest, InputRequest) that `pks` name or that are pending."""
    return model.objects.filter(**{thread_field: thread}).filter(Q(pk__in=pks) | Q(status=model.Status.PENDING))


def _named_or_pending_read(model, thread_field, count):
    """_named_or_pending_query() for `count` ids, compiled once; None past four ids."""
    if not 0 < count <= 4:
        return None
    read = _NAMED_OR_PENDING.get((model, count))
    if read is None:
        read = _NAMED_OR_PENDING.setdefault((model, count), Prepared(
            model, partial(_named_or_pending_query, model, thread_field), arity=1 + count))
    return read


def _named_or_pending(model, thread_field, thread_id, ids):
    read = _named_or_pending_read(model, thread_field, len(ids))
    return read.all(thread_id, *ids) if read else _named_or_pending_query(model, thread_field, thread_id, *ids)


def resume_reads(thread_id, ids):
    """apply_resume()'s reads of what the answers name, as (read, values), for queries.read_ahead."""
    ids = [str(i) for i in ids]
    return [(read, (thread_id, *ids)) for read in (_named_or_pending_read(ApprovalRequest, "thread_ref", len(ids)),
                                                   _named_or_pending_read(InputRequest, "thread", len(ids)))
            if read is not None]


def _one_answer_each(entries):
    """Two different answers to one interrupt in one resume: which the client meant is a guess (the
    last one was taken, silently: an approval and a rejection of one call ran as the rejection).
    The same answer sent twice is one answer."""
    given = {}
    for interrupt_id, status, payload in entries:
        if interrupt_id in given and not jsoncheck.same(given[interrupt_id], [status, payload]):
            raise ResumeError("invalid_resume", _("interrupt %(id)s has two different answers in this request; send "
                                                  "one answer for each interrupt. Nothing was decided.") % {
                                                      "id": interrupt_id})
        given[interrupt_id] = [status, payload]


def apply_resume(thread, user, entries, run_id, messages=()):
    """Answer every open interrupt of the thread at once (AG-UI `resume[]`), or change nothing.

    entries: [(interrupt_id, status "resolved" | "cancelled", payload dict)]. The continuation
    takes the client's run id, which the caller has refused if taken (agents/agui/endpoint.check).
    `messages`: the person's new text sent with the answers, (id, role, content, tool_call_id); the
    continuation stores and answers it after the resumed calls' results. Raises ResumeError with an
    AG-UI error code. Returns what was answered: (the approval requests as the answers left them,
    the question ids).
    """
    _one_answer_each(entries)
    # what the answers name and what still waits: not the thread's whole history of requests
    ids = [e[0] for e in entries]
    known = {r.pk: r for r in _named_or_pending(ApprovalRequest, "thread_ref", thread.pk, ids)}
    questions = {q.pk: q for q in _named_or_pending(InputRequest, "thread", thread.pk, ids)}
    answered, replies = {}, {}
    for interrupt_id, status, payload in entries:
        question = questions.get(interrupt_id)
        if question is not None:  # an agent asked the person (agents/runtime/inputs.py): any JSON answers it
            if question.status != InputRequest.Status.PENDING:
                raise ResumeError("already_decided", _("interrupt %(id)s is already %(status)s") % {
                    "id": interrupt_id, "status": question.get_status_display().lower()})
            if status == "resolved":
                try:
                    inputs.check_answer(question, payload)
                except inputs.InputError as exc:
                    raise ResumeError(exc.code, _("interrupt %(id)s: %(problem)s") % {
                        "id": interrupt_id, "problem": exc.message}) from exc
            replies[interrupt_id] = (status, payload)
            continue
        req = known.get(interrupt_id)
        if req is None:
            raise ResumeError("unknown_interrupt", _("no interrupt %(id)s on this thread") % {"id": interrupt_id})
        if req.status == ApprovalRequest.Status.EXPIRED:
            raise ResumeError("expired", _("interrupt %(id)s expired before it was answered") % {"id": interrupt_id})
        if req.status != ApprovalRequest.Status.PENDING:
            raise ResumeError("already_decided", _("interrupt %(id)s is already %(status)s") % {
                "id": interrupt_id, "status": req.get_status_display().lower()})
        answered[interrupt_id] = (status, payload if isinstance(payload, dict) else {})
    missing = [r.pk for r in known.values() if r.status == ApprovalRequest.Status.PENDING and r.pk not in answered
               and answered_by_requester(r)]  # a group's request is not the client's to answer
    missing += [q.pk for q in questions.values() if q.status == InputRequest.Status.PENDING and q.pk not in replies]
    if missing:
        raise ResumeError("missing_resume", _("every open interrupt needs an answer; missing: %(ids)s") % {
            "ids": ", ".join(missing)})
    answered_rows = []  # the rows the decisions locked and changed: the caller's answer needs no read back
    try:
        # one transaction: the answers, their calls' fates and the continuation (approval_resolved
        # as each decision lands, not after a commit of the decisions alone); any refusal rolls
        # back all of it. The paused runs are locked first (resume_run_id), as approval_resolved,
        # inputs and cancel_run lock a run before its requests.
        with transaction.atomic():
            paused = sorted({known[i].run_ref for i in answered} | {questions[i].run_id for i in replies})
            for run_ref in paused:  # each goes with the next statement, the first answer's lock
                with unanswered():
                    _RESUME_ID.update(run_ref, resume_run_id=run_id)
            if messages:  # on the latest paused run: the one whose continuation answers last
                latest = Run.objects.filter(pk__in=paused).order_by("-created_at").first()
                if latest is not None:
                    latest.queued_messages = [*latest.queued_messages, *[list(m) for m in messages]]
                    latest.save(update_fields=["queued_messages"])
            for interrupt_id, (status, payload) in replies.items():
                if status == "cancelled":
                    inputs.cancel(interrupt_id, user, reason="cancelled by the client")
                else:
                    inputs.answer(interrupt_id, user, payload)
            for interrupt_id, (status, payload) in answered.items():
                if status == "cancelled":
                    if known[interrupt_id].requester_id != user.pk:
                        raise approval_services.Forbidden(_("only the requester may cancel"))
                    answered_rows.append(approval_services.cancel(interrupt_id, user, reason="cancelled by the client",
                                                                  resolve_here=approval_resolved))
                    continue
                decision = _resume_decision(interrupt_id, payload)
                arguments = payload.get("arguments", payload.get("editedArgs"))
                if arguments is not None and not isinstance(arguments, dict):
                    raise ResumeError("invalid_arguments", _("interrupt %(id)s: arguments must be an object") % {
                        "id": interrupt_id})
                allow = payload.get("alwaysAllowInThread", False)  # the chat's "always allow in this thread"
                if not isinstance(allow, bool):
                    raise ResumeError("invalid_resume", _("interrupt %(id)s: payload.alwaysAllowInThread must be a "
                                                          "boolean") % {"id": interrupt_id})
                answered_rows.append(approval_services.decide(
                    interrupt_id, user, decision,
                    arguments=arguments, feedback=_resume_feedback(interrupt_id, payload), always_allow_in_thread=allow,
                    resolve_here=approval_resolved,
                ))
    except approval_services.DecisionError as exc:
        code = next((c for cls, c in _RESUME_CODES.items() if isinstance(exc, cls)), "invalid_resume")
        if isinstance(exc, approval_services.RequestExpired):
            code = "expired"
            # the answers were rolled back together, the expiry the late answer found with them:
            # record it again now, on its own (a no-op for requests still in time)
            for interrupt_id in answered:
                approval_services.expire(interrupt_id)
        labels = exc.labels if isinstance(exc, approval_services.InvalidArguments) else None
        raise ResumeError(code, _said_with_fields(exc.message, exc.errors, labels)) from exc
    except inputs.InputError as exc:
        raise ResumeError(exc.code, exc.message) from exc
    return answered_rows, list(replies)


def cancel_key(run_id):
    return f"agui:cancel:{run_id}"


def cancel_requested(run_id):
    return bool(events.redis_client().exists(cancel_key(run_id)))


def _flag_stop(run_id, client):
    """The flag a running run looks for at its next check (cancel_requested)."""
    client.set(cancel_key(run_id), "1", ex=3600)


def stop_lost_worker(run_id):
    """After recovery declared a run lost: the flag its worker, if it was only stuck (a process paused
    past its lease, then woken), finds at its next check, so that it stops streaming into the thread.
    What it would write is refused anyway (runner.Runner.ours); without Redis, that is all."""
    try:
        _flag_stop(run_id, events.brief_client())
    except redis.RedisError as exc:
        log.info("run %s: the flag for its lost worker was not set (%s)", run_id, exc)


def cancel_run(run, user, reason="the user stopped the run"):
    """Stop: a queued run never starts, a running one stops at its next check, a paused one withdraws
    its requests. `user` None: the engine stops it (agents/account_off.py), `reason` saying why.
    True when stopped, False when it had ended; DECIDED_FIRST (truthy) for a paused run whose requests
    were all decided before the Stop: its continuation goes on, and the caller says so."""
    from ag_ui.core import RunFinishedCancelledOutcome, RunFinishedEvent

    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.status == Run.Status.QUEUED:
            move_run(run.pk, Run.Status.CANCELLED, leaving=[Run.Status.QUEUED])
            # RUN_STARTED is already on the stream: close it for every listener
            transaction.on_commit(lambda: publish_end(run.pk, run.thread_id, RunFinishedEvent(
                thread_id=run.thread_id, run_id=run.pk, outcome=RunFinishedCancelledOutcome())))
        elif run.status == Run.Status.RUNNING:
            # brief: the run's row is locked (on SQLite, every writer waits): with Redis down the
            # product client's retries held it ~12 s
            try:
                _flag_stop(run.pk, events.brief_client())
            except redis.RedisError as exc:
                # the Stop stands, as a queued run's does: the beat passes it on once Redis answers
                # (pass_on_stops). It was a 503 that left the person to try again until Redis came back
                log.warning("run %s: the Stop could not reach Redis (%s); the beat passes it on", run.pk, exc)
                Run.objects.filter(pk=run.pk).update(stop_unsent_at=timezone.now())
        elif run.status == Run.Status.INTERRUPTED:
            # a request decided (a question answered) between this read and its lock came first and
            # stands: the others are still stopped, and the Stop is answered, not a 500
            withdrew = False
            for request in ApprovalRequest.objects.filter(run_ref=run.pk, status=ApprovalRequest.Status.PENDING):
                try:
                    approval_services.cancel(request.pk, user, reason=reason)
                    withdrew = True
                except approval_services.NotPending:
                    pass
            for question in run.input_requests.filter(status=InputRequest.Status.PENDING):
                try:
                    # a question is the owner's to answer or withdraw: the engine withdraws it for them
                    inputs.cancel(question.pk, user or run.thread.owner, reason=reason)
                    withdrew = True
                except inputs.InputError as exc:
                    if exc.code != "already_decided":
                        raise
            if not withdrew and (selectors.has_continuation(run.pk) or ApprovalRequest.objects.filter(
                    run_ref=run.pk).exclude(status__in=(ApprovalRequest.Status.PENDING, ApprovalRequest.Status.CANCELLED))
                    .exists() or run.input_requests.filter(status=InputRequest.Status.ANSWERED).exists()):
                # every wait was decided first: nothing was stopped, and the run goes on in its
                # continuation (made by the decision's wake-up, which may not have come yet)
                return DECIDED_FIRST
        else:
            return False
    return True


DECIDED_FIRST = "decided_first"  # cancel_run: a paused run whose every wait was decided before the Stop


def pass_on_stops(limit=100):
    """Beat: the Stops cancel_run could not hand to Redis. A run still running gets its flag (it stops
    at its next check); one that paused meanwhile is stopped as a paused run is (its requests
    withdrawn); one that ended keeps its end. Returns the ids of the runs it stopped or flagged."""
    done = []
    for run in Run.objects.filter(stop_unsent_at__isnull=False).select_related("thread__owner")[:limit]:
        if run.status == Run.Status.RUNNING:
            _flag_stop(run.pk, events.redis_client())
            done.append(run.pk)
        elif run.status == Run.Status.INTERRUPTED:
            # an owner switched off since (the Stop may be account_off's own) does not withdraw:
            # the engine does, saying why, as the account-off sweep would have
            if run.thread.owner.is_active:
                stopped = cancel_run(run, run.thread.owner)
            else:
                stopped = cancel_run(run, None, reason=REQUESTER_OFF)
            if stopped:
                done.append(run.pk)
        # a later Stop that also failed keeps its own time: it is passed on at the next sweep
        Run.objects.filter(pk=run.pk, stop_unsent_at=run.stop_unsent_at).update(stop_unsent_at=None)
    return done


SUPERSEDE_POLL_SECONDS = 0.1  # between looks at the old run while it stops (woken early by its events)
LEAVE_SECONDS = 1.0  # how long a closed stream may take to be noticed (the new message can come first)


def supersede_abandoned(thread, user):
    """A new message on a thread whose running run's client went away (its SSE stream closed
    mid-run: @ag-ui/client's abortRun, CopilotKit's Stop) supersedes that run: it is stopped as
    Stop stops it, and the new run is made only once it has ended, so the new message and its
    answer come after everything the old run wrote. Waits at most AGUI_SUPERSEDE_WAIT_SECONDS
    (a run stops at its next check: the next streamed piece, or after a tool); a run still going
    then, or one whose client is still watching it, is left to start_run's run_active."""
    run = thread.runs.filter(status__in=Run.ACTIVE).first()
    if run is None:
        return
    try:
        marked = watching.abandoned_run(thread.pk)
        relays = {run_id for run_id, _ in watching.watchers(thread.pk) if run_id}
    except redis.RedisError:
        return  # nothing known about who watches: the old rule (run_active) holds
    if run.pk != marked and run.pk not in relays:
        return  # not an AG-UI client's run (the chat's), or one that ended before
    started, stopping = time.monotonic(), False
    position = events.last_id_sync(thread.pk)
    try:
        while True:
            if not stopping and watching.abandoned_run(thread.pk) == run.pk:
                log.info("run %s: its client went away and a new message came; stopping it", run.pk)
                stopping = cancel_run(run, user)
            run.refresh_from_db(fields=["status"])
            if run.status not in Run.ACTIVE:
                return
            waited = time.monotonic() - started
            if not stopping and (waited > LEAVE_SECONDS
                                 or run.pk not in {r for r, _ in watching.watchers(thread.pk)}):
                return  # its own client still watches it (another tab sent this): run_active
            if waited > settings.AGUI_SUPERSEDE_WAIT_SECONDS:
                log.warning("run %s was asked to stop for a new message but is still %s after %ss",
                            run.pk, run.status, settings.AGUI_SUPERSEDE_WAIT_SECONDS)
                return
            # wake on the thread's next events (the old run's end among them), else look again soon
            read = events.redis_client().xread({events.stream_key(thread.pk): position},
                                               block=int(SUPERSEDE_POLL_SECONDS * 1000), count=1000)
            if read:
                position = read[0][1][-1][0]
    except redis.RedisError as exc:
        log.warning("run %s: could not wait for it to stop (Redis unreachable: %s)", run.pk, exc)


def stop_abandoned_run(run_id):
    """The grace check (agents.tasks.stop_abandoned_run) of a run whose client went away: a run
    still queued or running is stopped as Stop stops it (it ends cancelled) when nobody watches
    its thread, neither another AG-UI stream nor a chat socket. While someone does, it is checked
    again when their watch would lapse: a watcher that leaves schedules the next check itself, and
    one whose process died must not keep the run alive. A paused run is not touched. Returns
    whether it was stopped."""
    run = one(Run.objects.select_related("thread__owner").filter(pk=run_id))
    if run is None:
        return False
    try:
        if run.status not in Run.ACTIVE:
            watching.forget_abandoned(run.thread_id, run.pk)
            return False
        if watching.abandoned_run(run.thread_id) != run.pk:
            return False
        watched = watching.watchers(run.thread_id)
    except redis.RedisError as exc:
        log.warning("abandoned run %s not checked (Redis unreachable: %s); it goes on", run_id, exc)
        return False
    if watched:
        watching.schedule_check(run.pk, countdown=max(lapses for _, lapses in watched) - time.time() + 1)
        return False
    log.info("run %s: its client went away and nobody watches thread %s; stopping it", run.pk, run.thread_id)
    return cancel_run(run, run.thread.owner)
