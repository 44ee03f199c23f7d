"""Announcing a queued run: RUN_STARTED on the thread's stream, then its task to a worker.

The task is looked up by name in the Celery app (DESIGN.md: services enqueue tasks by name), so
this module, low in the runtime, never imports agents/tasks.py, which imports the runtime.
"""

import logging
import threading
from contextlib import contextmanager

import kombu.exceptions
import redis
from ag_ui.core import PROTOCOL_VERSION, RunStartedEvent
from celery import current_app
from django.db import connections

from agui_project import broker
from agui_project.queries import PreparedUpdate

from .models import Run
from .runtime import events

log = logging.getLogger(__name__)
RUN_AGENT = "agents.tasks.run_agent"
CONTINUE_DECIDED = "agents.tasks.continue_decided"
# what an unreachable Redis raises: the event writer's client after its retries, Celery's publish
REDIS_DOWN = (redis.RedisError, kombu.exceptions.OperationalError)


_local = threading.local()
# where a handed-over run's events begin, written on every announce: compiled once (agui_project/queries)
_STREAM_ID = PreparedUpdate(Run, lambda pk: Run.objects.filter(pk=pk))


class Announced(dict):
    """{run id: (stream entry id, RUN_STARTED as written)}; with `defer`, `deferred` holds the
    (run id, stream entry id) whose hand_over() the caller owes; `sent` the RUN_STARTED (encoded)
    a client already has of a run id, written as it is."""

    def __init__(self, defer=False, sent=None):
        super().__init__()
        self.defer, self.deferred, self.sent = defer, [], sent or {}


@contextmanager
def announced(defer=False, sent=None):
    """The runs announced on this thread inside the block: the AG-UI POST that made a run sends
    its RUN_STARTED from here instead of reading it back from the stream (agents/agui/relay.py).
    `defer`: their tasks are not published here; the caller hands them over (hand_over_all) once
    the RUN_STARTED is on its way, so the worker it wakes does not compete with that first frame
    for the CPU. Should the caller never do so, the beat's requeue_lost_runs announces them again.
    `sent`: {run id: RUN_STARTED encoded} that the caller sent its client before the run was made
    (the AG-UI endpoint's early start): the stream gets that very event."""
    outer = getattr(_local, "heads", None)
    heads = _local.heads = Announced(defer, sent)
    try:
        yield heads
    finally:
        _local.heads = outer


def streams_here():
    """Inside announced(): the caller streams the runs it starts to its own client (the AG-UI
    endpoint), so what it wakes is announced on its thread."""
    return getattr(_local, "heads", None) is not None


def announced_here(run_id):
    """Inside announced(): whether this thread has announced the run `run_id` (its RUN_STARTED is
    on the stream). False does not mean it does not exist: a run Redis refused is announced later."""
    heads = getattr(_local, "heads", None)
    return heads is not None and run_id in heads


def continue_elsewhere(request_id):
    """A decision's wake-up (agents/services.continue_decided) to a worker, which then runs the
    continuation itself: the decider's request does not wait for it, and it runs on another core
    than the decider's process, not beside its answer under one GIL."""
    current_app.tasks[CONTINUE_DECIDED].delay(str(request_id))


def enqueue_run(run_id):
    """Hand the run to a worker. `.delay` of the registered task, not `send_task`: it keeps eager
    mode and a test's patch of `agents.tasks.run_agent.delay` working."""
    current_app.tasks[RUN_AGENT].delay(run_id)


def announce(run_id, run=None, notices=()):
    """RUN_STARTED on the stream as soon as the run is durable, then hand it to a worker (in the
    same round trip when the broker is the streams' Redis), then note where its events begin (for
    snapshots and recovery; the worker does not read it). `notices`: events for the thread that
    precede the RUN_STARTED (a decision's notice before the continuation it starts), written with it."""
    run = run or Run.objects.get(pk=run_id)
    heads = getattr(_local, "heads", None)
    started = heads.sent.get(run.pk) if heads is not None else None
    started = started or events.encode(RunStartedEvent(
        thread_id=run.thread_id, run_id=run.id, parent_run_id=run.parent_run_id, protocol_version=PROTOCOL_VERSION))
    payloads = [*map(events.encode, notices), started]
    if (heads is None or not heads.defer) and broker.shares_redis(current_app.conf) and not current_app.conf.task_always_eager:
        stream_id = _announce_with_task(run, payloads)
        if heads is not None and stream_id:
            heads[run.pk] = (stream_id, started)
        return
    stream_id = events.append_encoded(run.thread_id, *payloads)
    if heads is not None and stream_id:
        heads[run.pk] = (stream_id, started)
        if heads.defer:
            heads.deferred.append((run.pk, stream_id))
            return
    hand_over(run.pk, stream_id)


def _announce_with_task(run, payloads):
    """The run's RUN_STARTED (after its notices) and its task in one round trip to Redis, in that
    order (agui_project/broker.ahead_of_publish): a run woken by a decision or a resume is not
    kept waiting for a round trip in between. A refused publish wrote neither: the run is then
    announced whole by the beat (services.announce_unannounced). Returns the stream entry id."""
    stream_id = None
    try:
        with broker.ahead_of_publish(lambda pipe: events.queue_append(pipe, run.thread_id, payloads)) as ahead:
            enqueue_run(run.pk)
        # nothing reached Redis with it (a test's stand-in for the publish): the events on their own
        stream_id = events.last_entry_id(ahead.replies) if ahead.replies is not None else \
            events.append_encoded(run.thread_id, *payloads)
    finally:
        _STREAM_ID.update(run.pk, stream_id=stream_id or "")
    return stream_id


def hand_over(run_id, stream_id):
    """The run's task to a worker, then where its events begin (for snapshots and recovery)."""
    try:
        enqueue_run(run_id)
    finally:  # also when the broker refused: the beat then sends the task again, not a second RUN_STARTED
        note_stream(run_id, stream_id)


def note_stream(run_id, stream_id):
    """Where the run's events begin (snapshots and recovery read it; the worker does not)."""
    _STREAM_ID.update(run_id, stream_id=stream_id or "")


def hand_over_all(pending):
    """hand_over() of announced(defer=True)'s runs, on a thread of no request: its connections
    are closed (returned to the pool) after. A broker that refuses is left to the beat's requeue."""
    try:
        hand_over_each(pending)
    finally:
        connections.close_all()


def hand_over_each(pending):
    for run_id, stream_id in pending:
        try:
            hand_over(run_id, stream_id)
        except REDIS_DOWN as exc:
            log.warning("run %s is announced but its task was not sent (broker unreachable: %s); "
                        "the beat sends it again", run_id, exc)


def announce_after_commit(run_id, run=None, notices=()):
    """A run's on-commit announce. The message or the decision that made it is committed: Redis
    being unreachable now must not turn it into an error (a 500 saying nothing was done while the
    run stands). The run stays queued without a stream id, and the beat announces it once Redis
    answers again (services.announce_unannounced)."""
    try:
        announce(run_id, run, notices)
    except REDIS_DOWN as exc:
        log.warning("run %s is queued but could not be announced (Redis unreachable: %s); "
                    "it is announced once Redis is back", run_id, exc)
