"""The Celery broker transport (agui_project/broker.py): kombu's Redis transport, made cheaper."""

import redis
from django.conf import settings
from kombu import Connection


def test_a_channel_sends_every_command_through_one_redis_client():
    """kombu's own channel built a new redis.Redis (a copy of every response callback) for each
    publish and each ack; ours keeps one per connection pool, and a new pool gets a new one."""
    with Connection(settings.CELERY_BROKER_URL, transport="agui_project.broker:Transport") as conn:
        channel = conn.default_channel
        with channel.conn_or_acquire() as first, channel.conn_or_acquire() as second:
            assert first is second and isinstance(first, redis.Redis)
            assert first.connection_pool is channel.pool
        first.ping()
        channel._pool = None  # what a reconnect does: the next command goes through a new pool
        with channel.conn_or_acquire() as third:
            assert third is not first and third.connection_pool is channel.pool


def test_a_publish_on_a_new_thread_builds_no_result_backend():
    """Every request's sync code runs on a thread of its own, and Celery built its (disabled) result
    backend again on each new thread for the AsyncResult a publish returns (~130 µs); no results
    are kept, so one backend serves the process."""
    import threading

    from agui_project.celery import app

    seen = []
    for _ in range(2):
        t = threading.Thread(target=lambda: seen.append(app.AsyncResult("x").backend))
        t.start()
        t.join()
    assert seen[0] is seen[1] is app.backend
