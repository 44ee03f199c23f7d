"""The process's Redis client, for everything that is not Celery or the channel layer: the
threads' event streams (agents/runtime/events.py), leases and cancel flags, login throttling, /healthz."""

import threading

import redis
from django.conf import settings
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

_client = None
_client_lock = threading.Lock()


def redis_client():
    """One persistent client per process (redis-py pools connections and is thread-safe)."""
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                # a Redis restart or failover shorter than ~10 s is ridden out, not turned into a failed run
                _client = redis.Redis.from_url(
                    settings.REDIS_URL, socket_timeout=10, health_check_interval=30,
                    # AGUI_REDIS_RETRIES, default 15: about 11 s of trying (backoff capped at 1 s)
                    retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), settings.AGUI_REDIS_RETRIES),
                    retry_on_error=[redis.ConnectionError, redis.TimeoutError],
                )
    return _client
