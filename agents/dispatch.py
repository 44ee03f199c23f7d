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

from .models import Run
from .runtime import events

log = logging.getLogger(__name__)
RUN_AGENT = "agents.tasks.run_agent"
# what an unreachable Redis raises: the event writer's client after its retries, Celery's publish
REDIS_DOWN = (redis.RedisError, kombu.exceptions.OperationalError)


_local = threading.local()


@contextmanager
def announced():
    """{run id: (stream entry id, RUN_STARTED as written)} of the runs announced on this thread
    inside the block: the AG-UI POST that made a run sends its RUN_STARTED from here instead of
    reading it back from the stream (agents/agui/relay.py)."""
    outer = getattr(_local, "heads", None)
    heads = _local.heads = {}
    try:
        yield heads
    finally:
        _local.heads = outer


def enqueue_run(run_id):
    """Hand the run to a worker. `.delay` of the registered task, not `send_task`: it keeps eager
    mode and a test's patch of `agents.tasks.run_agent.delay` working."""
    current_app.tasks[RUN_AGENT].delay(run_id)


def announce(run_id, run=None):
    """RUN_STARTED on the stream as soon as the run is durable, then hand it to a worker, then
    note where its events begin (for snapshots and recovery; the worker does not read it)."""
    run = run or Run.objects.get(pk=run_id)
    started = events.encode(RunStartedEvent(thread_id=run.thread_id, run_id=run.id, parent_run_id=run.parent_run_id,
                                            protocol_version=PROTOCOL_VERSION))
    stream_id = events.append_encoded(run.thread_id, started)
    heads = getattr(_local, "heads", None)
    if heads is not None and stream_id:
        heads[run.pk] = (stream_id, started)
    try:
        enqueue_run(run.pk)
    finally:  # also when the broker refused: the beat then sends the task again, not a second RUN_STARTED
        Run.objects.filter(pk=run.pk).update(stream_id=stream_id or "")


def announce_after_commit(run_id, run=None):
    """A run's on-commit announce. The message or the decision that made it is committed: Redis
    being unreachable now must not turn it into an error (a 500 saying nothing was done while the
    run stands). The run stays queued without a stream id, and the beat announces it once Redis
    answers again (services.announce_unannounced)."""
    try:
        announce(run_id, run)
    except REDIS_DOWN as exc:
        log.warning("run %s is queued but could not be announced (Redis unreachable: %s); "
                    "it is announced once Redis is back", run_id, exc)
