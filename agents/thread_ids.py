"""Thread ids are handed out once, ever (DESIGN.md "Beyond our own agents": clients choose them).

The event stream (`agui:thread:<id>`), approval requests and the shared state name a thread by
its id alone. An id re-used after a deletion would give its new owner the old owner's replay
buffer, approvals and state; so every id is claimed for good (agents.models.ThreadIdClaim) and
a deleted thread takes its stream and state with it.
"""

import logging

import redis
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from agui_project.queries import PreparedInsert
from state.models import SharedState

from .models import ThreadIdClaim
from .runtime import events

log = logging.getLogger(__name__)


class ThreadIdTaken(Exception):
    """The id belongs, or belonged, to another thread."""

    code = "thread_id_used"

    @property
    def message(self):  # in the language of the answer it is raised into
        return _("this thread id is already taken or belonged to a deleted chat; start a new thread with a new id")


_CLAIM = PreparedInsert(ThreadIdClaim)  # compiled once: every new chat makes one


def claim(thread_id, owner):
    """Record the id as used (the primary key: two creators of one id cannot both win). Called
    inside the creator's transaction (services.create_thread), which rolls back on the IntegrityError."""
    try:
        _CLAIM.create(id=thread_id, owner=owner)
    except IntegrityError:
        raise ThreadIdTaken(thread_id) from None


def unaddressable(value):
    """Why a client-chosen id (a thread's, a run's) cannot be one, or None: pages, the REST API and
    sockets name it as one segment of their path, which no "/" (nor "\\", a browser's "/") crosses
    and "." or ".." is not (clients resolve them away)."""
    if "/" in value or "\\" in value or value in (".", ".."):
        return _("must not contain / or \\, nor be . or ..: it is part of the chat's web address")
    return None


def is_taken(thread_id):
    return ThreadIdClaim.objects.filter(pk=thread_id).exists()


def released(thread):
    """A thread row is being deleted (any path: REST, admin, its owner's deletion)."""
    now = timezone.now()
    if not ThreadIdClaim.objects.filter(pk=thread.pk).update(released_at=now):
        # no owner: this may be the owner's own deletion (the row would point at a user being deleted)
        ThreadIdClaim.objects.get_or_create(pk=thread.pk, defaults={"released_at": now})
    # the state document belongs to the thread alone (state knows nothing of threads: keyed by name)
    SharedState.objects.filter(key=thread.state_key).delete()
    transaction.on_commit(lambda: drop_stream(thread.pk))


def drop_stream(thread_id):
    """Drop the stream under a deleted thread's id, or under a new one's (Redis may hold what a
    restored database no longer claims)."""
    try:
        events.discard(thread_id)
    except redis.RedisError as exc:  # the stream still expires (AGUI_STREAM_TTL)
        log.warning("the event stream of thread %s could not be dropped: %r", thread_id, exc)
