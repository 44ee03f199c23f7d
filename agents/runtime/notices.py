"""A notice for a thread's chats after a commit (a card, a state change, an answer): the change stands
and is answered whatever Redis does. Redis away loses the notice; a socket open then is closed with
4011 and reloads the snapshots, and one that resumes later from a position before the loss
(`?after=`, a laptop waking) gets the snapshots too (`missed_since`), not the stream's entries after
that position, which lack it."""

import logging
from datetime import UTC, datetime, timedelta

import redis
from django.db import DatabaseError
from django.utils import timezone

from agents.models import Thread

from . import events

log = logging.getLogger(__name__)

# the web processes' clocks against Redis's (stream ids are its milliseconds): a resume this close to
# a loss gets the snapshots, one more than the socket needed at worst
CLOCK_SLACK = timedelta(seconds=5)


def tell(thread_id, *notices, what):
    """events.notice() of `notices`; when Redis cannot take them, the loss is logged (`what` was not
    sent) and kept on the thread."""
    try:
        return events.notice(thread_id, *notices)
    except redis.RedisError as exc:
        log.warning("%s not sent to thread %s (Redis unreachable: %s)", what, thread_id, exc)
        try:
            Thread.objects.filter(pk=thread_id).update(notice_lost_at=timezone.now())
        except DatabaseError as db_exc:  # after a commit that stands: said, not turned into a 500
            log.warning("thread %s: the lost notice could not be noted either (%s)", thread_id, db_exc)
        return None


def missed_since(thread_id, after):
    """Whether a notice for the thread was lost after stream position `after` (an entry id)."""
    ms = events.entry_key(after)[0]
    since = datetime.fromtimestamp(ms / 1000, tz=UTC) - CLOCK_SLACK
    return Thread.objects.filter(pk=thread_id, notice_lost_at__gte=since).exists()
