"""Reads of threads more than one page needs (DESIGN.md conventions: selectors for reads)."""

from django.conf import settings
from django.db.models import OuterRef, Subquery

from agui_project.queries import Prepared, one
from approvals.models import ApprovalRequest

from .models import Message, Run, Thread

# reads on every AG-UI POST, resume and decision, compiled once (agui_project/queries.Prepared)
_THREAD = Prepared(Thread, lambda pk: Thread.objects.filter(pk=pk))
_RUN_ID = Prepared(Run, lambda pk: Run.objects.filter(pk=pk).only("id"))
_CONTINUATION = Prepared(Run, lambda parent: Run.objects.filter(parent_run=parent).only("id")[:1])
_MESSAGES = Prepared(Message, lambda thread: Message.objects.filter(thread=thread))  # in seq order (Meta)


def thread_messages(thread_id):
    """The thread's messages in order (its MESSAGES_SNAPSHOT)."""
    return _MESSAGES.all(thread_id)


def thread_by_id(thread_id):
    """The thread with this id, or None."""
    return _THREAD.one(thread_id)


def run_exists(run_id):
    """Whether a run has this id."""
    return _RUN_ID.one(run_id) is not None


def has_continuation(run_id):
    """Whether the run has been continued (a continuation Run names it as its parent)."""
    return _CONTINUATION.one(run_id) is not None


def chat_list(user):
    """The person's latest chats, each annotated with its latest approval request (last_status,
    last_action, last_group), in one query: two chats that began with the same words differ by
    what became of them (presenters.thread_standing)."""
    latest = ApprovalRequest.objects.filter(thread_ref=OuterRef("pk")).order_by("-created_at")
    return (Thread.objects.filter(owner=user).order_by("-updated_at")
            .annotate(last_status=Subquery(latest.values("status")[:1]),
                      last_action=Subquery(latest.values("description")[:1]),
                      last_group=Subquery(latest.values("approver_group__name")[:1]))[:100])


def run_language(run_id):
    """The language the chat's owner chose (people.Profile), else LANGUAGE_CODE: a worker says
    what people read of a run (tool outcomes, errors) in it; the model's own words stay as written."""
    chosen = one(Run.objects.filter(pk=run_id).values_list("thread__owner__profile__language", flat=True))
    return chosen or settings.LANGUAGE_CODE
