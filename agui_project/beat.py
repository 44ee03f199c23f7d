"""Celery beat that sends a sweep only once the last one it sent was picked up.

The beat's sweeps (settings.CELERY_BEAT_SCHEDULE) go every 2 to 30 s. While every worker was down
they piled up in the broker, about 4,700 an hour, each run in turn when a worker came back though the
first did the work of them all. A sweep still waiting in the queue now covers the ticks after it: its
task's key, set as it is sent and dropped by the worker that starts it, holds the next sends back.
The key lapses after PENDING_SECONDS, so a message the broker lost (a flushed Redis) costs at most
that long a pause. A sweep taken off the queue by a worker that was then stopped (a deploy, a crash)
is lost the same way, so a worker and the beat, as each starts, drop the marks: a restart's sweeps
came up to five minutes late (the reminders and escalations of every request with them). A sweep
still waiting in the queue then meets one more beside it, which finds its work done. Two beats
started by mistake share the key too: one sweep a tick, not two.
"""

import logging

import redis
from celery import signals
from celery.beat import PersistentScheduler
from django.conf import settings

from .redis_client import probe_client

log = logging.getLogger(__name__)
PENDING_SECONDS = 300


def pending_key(task_name):
    return f"agui:beat:pending:{task_name}"


class Scheduler(PersistentScheduler):
    def apply_async(self, entry, producer=None, advance=True, **kwargs):
        try:
            # asked once (a Redis that is away must not hold every tick ~11 s in redis_client's retries)
            fresh = probe_client().set(pending_key(entry.task), "1", nx=True, ex=PENDING_SECONDS)
        except redis.RedisError:
            fresh = True  # the send then meets the outage too, and Celery says so
        if not fresh:
            log.debug("beat: %s not sent, the last one is still waiting for a worker", entry.task)
            return None
        try:
            return super().apply_async(entry, producer=producer, advance=advance, **kwargs)
        except BaseException:
            _forget(entry.task)  # nothing waits: the next tick sends it again
            raise


def _forget(task_name):
    try:
        probe_client().delete(pending_key(task_name))
    except redis.RedisError as exc:
        log.warning("beat: the pending mark of %s stays until it lapses (Redis unreachable: %s)", task_name, exc)


_swept = None  # the beat's task names, read from the settings once


def _swept_tasks():
    global _swept
    if _swept is None:
        _swept = frozenset(entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values())
    return _swept


@signals.beat_init.connect
@signals.worker_ready.connect
def forget_at_start(**kwargs):
    """A process starting: what a stopped worker had taken off the queue is lost, and its marks with it."""
    try:
        probe_client().delete(*(pending_key(name) for name in sorted(_swept_tasks())))
    except redis.RedisError as exc:
        log.warning("beat: the sweeps' pending marks stay until they lapse (Redis unreachable: %s)", exc)


@signals.task_prerun.connect
def picked_up(task=None, **kwargs):
    """In the worker: a sweep starting frees its task's next send."""
    if task is not None and task.name in _swept_tasks():
        _forget(task.name)
