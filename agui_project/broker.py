"""The Celery broker transport: kombu's Redis transport, made to live through a Redis restart.

Celery 5.7 (PR #10242, "close broken connection in error handler") closes the broker connection
again after `Connection.collect()` has already released its transport. On kombu's Redis
transport anything that then touches a channel of that connection builds a new connection pool
from `transport.client`, which is None: `AttributeError: 'NoneType' object has no attribute
'hostname'`. Two places do so when Redis goes away while a task runs (reproduced here with
celery 5.7.0 / kombu 5.7.0, threads and prefork pools; the solo pool happens to miss it):

- the second close, which tries to put the unacked message back, and
- the late ack of that task once it finishes, on the old connection's channel.

AttributeError is not one of the transport's connection errors, so Celery calls it an
"Unrecoverable error" and the worker exits. Here a channel whose connection was released says so
with a connection error instead: the close ignores it as it ignores any connection error, the late
ack is logged ("Couldn't ack"), and the consumer reconnects. The message is not lost: kombu keeps
it in the unacked set and restores it after the visibility timeout (and a run's task is safe to
receive twice: the worker's conditional claim runs it once).
"""

import threading
from contextlib import contextmanager
from functools import cached_property

import celery
from celery import signals
from celery.utils import uuid
from django.conf import settings
from kombu.exceptions import OperationalError
from kombu.serialization import dumps as serialize
from kombu.transport import redis as kombu_redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

_ahead = threading.local()


class Ahead:
    """Redis commands that go ahead of the next task this thread publishes, in its round trip."""

    def __init__(self, fill):
        self.fill = fill  # fill(pipe): queues the commands
        self.replies = None  # their replies, once sent


@contextmanager
def ahead_of_publish(fill):
    """The next task published on this thread inside the block goes to Redis in one MULTI/EXEC with
    `fill(pipe)`'s commands, after them: both or neither, and a round trip fewer (announcing a run
    wrote its RUN_STARTED, waited for Redis, then published its task). kombu's own publish batch
    (Producer.batch) pipelines messages only, with no command of the caller's ahead of them.
    Yields an Ahead whose `replies` stay None when nothing was published through this transport
    (a task run eagerly, or a test's stand-in for the publish)."""
    ahead = _ahead.current = Ahead(fill)
    try:
        yield ahead
    finally:
        _ahead.current = None


def shares_redis(conf):
    """Whether the tasks of the Celery app whose `conf` this is go through this transport on the
    Redis of the event streams (REDIS_URL)."""
    return conf.broker_transport == f"{__name__}:Transport" and conf.broker_url == settings.REDIS_URL


class Channel(kombu_redis.Channel):
    def _connparams(self, asynchronous=False):
        if self.connection.client is None:  # released by Connection.collect()/close()
            raise RedisConnectionError("this broker connection was closed after Redis went away")
        return super()._connparams(asynchronous=asynchronous)

    def _create_client(self, asynchronous=False):
        """kombu builds a new redis.Redis around the same pool for every command it sends (each
        publish, each ack): ~160 µs of copying response callbacks per run enqueued, a third of
        Celery's publish. A client is only a handle on its pool, safe to share between threads:
        one per pool here (a new pool, after a reconnect, gets a new one)."""
        if asynchronous:
            return super()._create_client(asynchronous=True)
        pool = self.pool
        client = self.__dict__.get("_agui_client")
        if client is None or client.connection_pool is not pool:
            client = self._agui_client = super()._create_client()
        return client

    def _put(self, queue, message, **kwargs):
        ahead = getattr(_ahead, "current", None)
        if ahead is None or ahead.replies is not None or kwargs.get("_publish_batch") is not None \
                or (self._expires and queue in self._expires):
            return super()._put(queue, message, **kwargs)
        # kombu's _put (kombu 5.7), with the commands ahead of its LPUSH; a publish that kombu
        # retries after a connection error sends them again with it
        key = self._q_for_pri(queue, self._get_message_priority(message, reverse=False))
        with self.conn_or_acquire() as client, client.pipeline(transaction=True) as pipe:
            ahead.fill(pipe)
            pipe.lpush(key, kombu_redis.dumps(message))
            ahead.replies = pipe.execute()[:-1]


class Transport(kombu_redis.Transport):
    Channel = Channel


class Task(celery.Task):
    """A task whose plain `delay(...)` goes to this transport's channel directly: Celery's message
    (`app.amqp.as_task_v2`, protocol 2), kombu's envelope and LPUSH (the channel's `prepare_message`
    and `basic_publish`, so `ahead_of_publish` still applies), without the layers between them.

    Publishing a task through `apply_async` cost ~450 µs of CPU here, ~200 µs of it in
    `app.send_task`'s option merging, routing and ~25 configuration reads and in kombu's Producer
    (its retry wrapper, the queue's declaration bound and copied anew each time); a run's hand-over
    and a decision's wake-up each make one, on the way of the person waiting. The same message,
    field for field but its ids (tests/agui_project/test_broker_publish.py), goes in ~280 µs.

    Anything else takes Celery's own path: options or a chosen task id, eager mode, another
    transport, routes, publish signals with receivers, sent events, a parent's priority inherited,
    a task with execution options of its own; and a publish the broker refuses (Redis away), which
    Celery retries by its policy."""

    def apply_async(self, args=None, kwargs=None, task_id=None, producer=None, link=None, link_error=None,
                    shadow=None, **options):
        queue = self._direct_queue
        if queue is None or task_id or producer or link or link_error or shadow or options \
                or self.app.conf.task_always_eager or signals.before_task_publish.receivers \
                or signals.after_task_publish.receivers:
            return super().apply_async(args, kwargs, task_id=task_id, producer=producer, link=link,
                                       link_error=link_error, shadow=shadow, **options)
        args, kwargs = tuple(args or ()), dict(kwargs or {})
        check = getattr(self, "__header__", None) if self.typing else None
        if check is not None:  # the argument check apply_async makes
            check(*args, **kwargs)
        try:
            return self._publish(queue, args, kwargs)
        except (OperationalError, RedisConnectionError, RedisTimeoutError):
            # Celery's path reconnects and retries; a command that went ahead is sent again with it
            return super().apply_async(args, kwargs, queue=queue)

    def _publish(self, queue, args, kwargs):
        task_id = uuid()
        parent = self.app.current_worker_task
        headers, properties, body, _ = self.app.amqp.as_task_v2(
            task_id, self.name, args, kwargs, reply_to=self.app.thread_oid, ignore_result=self.ignore_result,
            root_id=parent and (parent.request.root_id or parent.request.id), parent_id=parent and parent.request.id)
        content_type, encoding, payload = serialize(body, serializer="json")
        properties["delivery_mode"] = 2  # persistent, as Celery's default queue has it
        with self.app.producer_pool.acquire(block=True) as pooled:
            channel = pooled.channel
            channel.basic_publish(channel.prepare_message(payload, None, content_type, encoding, headers, properties),
                                  "", queue)
        return self.AsyncResult(task_id)

    @cached_property
    def _direct_queue(self):
        """The default queue when nothing of the app or the task asks for Celery's path, else None
        (decided once per process)."""
        conf, options = self.app.conf, dict(self._get_exec_options())
        serializer = options.pop("serializer", None)
        plain = (conf.broker_transport == f"{__name__}:Transport" and not conf.task_routes
                 and not conf.task_send_sent_event and not conf.task_inherit_parent_priority
                 and conf.task_serializer == "json" and serializer in (None, "json")
                 and all(v is None for v in options.values())
                 and not self._dump_pydantic_arguments and type(self).shadow_name is celery.Task.shadow_name)
        return conf.task_default_queue if plain else None
