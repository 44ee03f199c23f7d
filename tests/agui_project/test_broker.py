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
