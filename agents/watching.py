"""Who watches a thread's runs (kept in Redis), so that a run whose client went away can be stopped.

A watcher is an SSE relay carrying one run (agents/agui/relay.py) or a browser chat socket
(agents/consumers.py). Each is a member of the thread's sorted set, scored by the time it lapses:
it renews itself while it streams and removes itself when it goes, so a process that dies leaves
an entry that lapses on its own instead of a watcher forever. A relay that goes before its run
ended (the client's abortRun, CopilotKit's Stop: the stream is simply closed) marks the run
abandoned and schedules the grace check, agents.tasks.stop_abandoned_run (services.py): a Celery
countdown task rather than the beat, because it fires at the grace's end instead of at the next
tick, and only for runs that were abandoned. A new message on the thread supersedes an abandoned
run at once (services.start_run).
"""

import logging
import time
import uuid

import redis
from asgiref.sync import sync_to_async
from celery import current_app
from django.conf import settings

from agui_project.redis_client import redis_client

from .dispatch import REDIS_DOWN
from .runtime.events import async_redis_client

log = logging.getLogger(__name__)
STOP_TASK = "agents.tasks.stop_abandoned_run"
# a watcher's entry lapses this long after its last renewal; relays renew with every chunk they
# send, at least every keep-alive (15 s), sockets with every stream read (4 s)
WATCH_SECONDS = 45
ABANDONED_SECONDS = 3600  # like a Stop's cancel key


def watchers_key(thread_id):
    return f"agui:watchers:{thread_id}"


def abandoned_key(thread_id):
    return f"agui:abandoned:{thread_id}"


class Watch:
    """One watcher of a thread: `run_id` is the run a relay carries, "" for a chat socket."""

    def __init__(self, thread_id, run_id=""):
        self.thread_id, self.run_id = thread_id, run_id
        self.member = f"{uuid.uuid4().hex}:{run_id}"
        self._renewed = None

    async def renew(self):
        """Join, or say this watcher is still here (at most every WATCH_SECONDS / 4)."""
        now = time.monotonic()
        if self._renewed is not None and now - self._renewed < WATCH_SECONDS / 4:
            return
        self._renewed = now
        try:
            await self._queue_join(async_redis_client().pipeline(transaction=False)).execute()
        except redis.RedisError as exc:  # the stream read meets the outage too and handles it
            log.info("watcher of thread %s not renewed (Redis unreachable: %s)", self.thread_id, exc)

    def _queue_join(self, pipe):
        """This watcher's entry, lapsing WATCH_SECONDS from now, on a pipeline (sync or async)."""
        key = watchers_key(self.thread_id)
        pipe.zadd(key, {self.member: time.time() + WATCH_SECONDS})
        pipe.expire(key, WATCH_SECONDS)  # the latest renewal outlives every earlier one
        return pipe

    @property
    def joined(self):
        return self._renewed is not None

    def join_sync(self):
        """renew() from sync code (the AG-UI POST's thread, with its run): the process's client,
        one pipelined round trip, so the relay's first frame does not wait for the join."""
        self._renewed = time.monotonic()
        try:
            self._queue_join(redis_client().pipeline(transaction=False)).execute()
        except redis.RedisError as exc:
            self._renewed = None  # the relay joins again
            log.info("watcher of thread %s not joined (Redis unreachable: %s)", self.thread_id, exc)

    async def leave(self, abandoned=False):
        """Go. A relay whose run had not ended (`abandoned`) marks the run, in the same
        transaction, and any watcher leaving a thread with an abandoned run schedules its check."""
        client = async_redis_client()
        try:
            pipe = client.pipeline(transaction=True)  # a reader never sees the relay gone but the run unmarked
            if abandoned and self.run_id:
                pipe.set(abandoned_key(self.thread_id), self.run_id, ex=ABANDONED_SECONDS)
            pipe.zrem(watchers_key(self.thread_id), self.member)
            pipe.get(abandoned_key(self.thread_id))
            marked = (await pipe.execute())[-1]
        except redis.RedisError as exc:
            log.warning("watcher of thread %s could not leave (Redis unreachable: %s)", self.thread_id, exc)
            return
        if marked:
            try:
                await sync_to_async(schedule_check, thread_sensitive=False)(marked.decode())
            except Exception:  # leaving runs in the stream's cleanup: it must not fail there
                log.exception("grace check of run %s not scheduled", marked.decode())


def schedule_check(run_id, countdown=None):
    """The grace check of an abandoned run, after AGUI_ABANDONED_RUN_GRACE_SECONDS (or `countdown`);
    a negative grace never stops a run for being unwatched."""
    grace = settings.AGUI_ABANDONED_RUN_GRACE_SECONDS
    if grace < 0:
        return
    try:
        current_app.tasks[STOP_TASK].apply_async((run_id,), countdown=max(grace, countdown or 0))
    except REDIS_DOWN as exc:  # the run then goes on to its end, as it did before this check existed
        log.warning("grace check of abandoned run %s not scheduled (broker unreachable: %s)", run_id, exc)


def watchers(thread_id):
    """The thread's live watchers: [(run id, or "" for a chat socket; when it lapses, Unix time)]."""
    key, now = watchers_key(thread_id), time.time()
    pipe = redis_client().pipeline(transaction=False)
    pipe.zremrangebyscore(key, "-inf", now)
    pipe.zrange(key, 0, -1, withscores=True)
    return [(member.decode().partition(":")[2], lapses) for member, lapses in pipe.execute()[1]]


def abandoned_run(thread_id):
    """The id of the thread's run whose client went away before it ended (it may have ended since)."""
    value = redis_client().get(abandoned_key(thread_id))
    return value.decode() if value else None


_FORGET = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0"


def forget_abandoned(thread_id, run_id):
    """The mark of an abandoned run that has ended; a newer run's mark stays."""
    redis_client().eval(_FORGET, 1, abandoned_key(thread_id), run_id)
