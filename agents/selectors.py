"""Reads of threads more than one page needs (DESIGN.md conventions: selectors for reads)."""

from django.db.models import Exists, OuterRef, Q, Subquery

from agui_project.queries import Prepared
from approvals.models import ApprovalRequest
from people import selectors as people

from .models import Message, Run, Thread, ToolCall

# reads on every AG-UI POST, resume and decision, compiled once (agui_project/queries.Prepared)
_THREAD = Prepared(Thread, lambda pk: Thread.objects.filter(pk=pk))
_RUN_ID = Prepared(Run, lambda pk: Run.objects.filter(pk=pk).only("id"))
_CONTINUATION = Prepared(Run, lambda parent: Run.objects.filter(parent_run=parent).only("id")[:1])
_MESSAGES = Prepared(Message, lambda thread: Message.objects.filter(thread=thread))  # in seq order (Meta)
# a run task's first read (the worker speaks the owner's language); by its relation names: people is
# not an app agents imports
_OWNER_PROFILE = Prepared("people.Profile", lambda run: _OWNER_PROFILE.model.objects.filter(
    user__threads__runs=run).only("language", "browser_language")[:1])
_WAITING_CALL = Prepared(ToolCall, lambda run: ToolCall.objects.filter(run=run, status__in=ToolCall.WAITING).only(
    "id")[:1])
# a paused run's standing under its lock: whether a call still waits, whether it was continued
_STANDING = Prepared(Run, lambda pk: Run.objects.filter(pk=pk).annotate(
    waiting=Exists(ToolCall.objects.filter(run=OuterRef("pk"), status__in=ToolCall.WAITING)),
    continued=Exists(Run.objects.filter(parent_run=OuterRef("pk")))).values_list("waiting", "continued"))
_QUEUED = Prepared(Run, lambda pk: Run.objects.filter(pk=pk).only("id", "queued_messages"))


def thread_messages(thread_id):
    """The thread's messages in order (its MESSAGES_SNAPSHOT)."""
    return _MESSAGES.all(thread_id)


def thread_by_id(thread_id):
    """The thread with this id, or None."""
    return _THREAD.one(thread_id)


def run_exists(run_id):
    """Whether a run has this id."""
    return _RUN_ID.one(run_id) is not None


def thread_reads(thread_id, run_id):
    """thread_by_id() and run_exists() as (read, values), for queries.read_ahead."""
    return [(_THREAD, (thread_id,)), (_RUN_ID, (run_id,))]


def has_waiting_calls(run_id):
    """Whether a call of the run still waits for a decision or for the person's answer."""
    return _WAITING_CALL.one(run_id) is not None


def has_continuation(run_id):
    """Whether the run has been continued (a continuation Run names it as its parent)."""
    return _CONTINUATION.one(run_id) is not None


def standing_read(run_id):
    """waiting_or_continued()'s read as (read, values), for queries.read_ahead."""
    return _STANDING, (run_id,)


def waiting_or_continued(run_id):
    """has_waiting_calls() and has_continuation() in one statement: (waiting, continued). Read
    after the run's lock is taken (a statement of its own, so it sees what was committed while the
    lock was awaited), never as columns of the locking read."""
    row = _STANDING.one(run_id)
    return (bool(row[0]), bool(row[1])) if row is not None else (False, False)


def runs_started_since(user, since):
    """The runs `user` started after `since`: continuations (a parent run) are not counted, they go
    on with a run already started. A thread's updated_at moves when a run starts in it (start_run
    saves the thread after the run's INSERT), so only the threads touched since are looked in
    (thread_owner_recent_idx), each through run_thread_started_idx."""
    return Run.objects.filter(thread__owner=user, thread__updated_at__gt=since, parent_run__isnull=True,
                              created_at__gt=since)


CHATS_A_PAGE = 100


def chat_list(user, before=None):
    """The person's latest chats (CHATS_A_PAGE of them, and one more when there are more: the caller
    offers the older ones), each annotated with its latest approval request (last_status, last_action,
    last_said, last_group), in one query: two chats that began with the same words differ by what became
    of them (presenters.thread_standing). `before`: (updated_at, id) of the last chat of the page before:
    the chats after it in that order."""
    latest = ApprovalRequest.objects.filter(thread_ref=OuterRef("pk")).order_by("-created_at")
    chats = Thread.objects.filter(owner=user)
    if before is not None:
        moment, pk = before
        chats = chats.filter(Q(updated_at__lt=moment) | Q(updated_at=moment, pk__lt=pk))
    return (chats.order_by("-updated_at", "-pk")
            .annotate(last_status=Subquery(latest.values("status")[:1]),
                      last_action=Subquery(latest.values("description")[:1]),
                      last_said=Subquery(latest.values("said")[:1]),
                      last_group=Subquery(latest.values("approver_group__name")[:1]))[:CHATS_A_PAGE + 1])


def run_language(run_id):
    """The language the chat's owner chose (people.Profile), else the one their pages were last shown in
    from their browser's preference, else LANGUAGE_CODE: a worker says
    what people read of a run (tool outcomes, errors) in it; the model's own words stay as written."""
    return _language(_OWNER_PROFILE.one(run_id))


def user_language(user):
    """run_language of a user (people's rule: no query when the profile was read with the user)."""
    return people.language_for(user)


def _language(profile):
    return people.written_in(*((profile.language, profile.browser_language) if profile is not None else ("", "")))


def queued_messages(run_id):
    """What the client sent with its answers to this paused run (Run.queued_messages); [] for none."""
    run = _QUEUED.one(run_id)
    return run.queued_messages if run is not None else []
