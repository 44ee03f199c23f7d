"""The process's Redis client, for everything that is not Celery or the channel layer: the
threads' event streams (agents/runtime/events.py), leases and cancel flags, login throttling; and
/healthz's own (probe_client)."""

import threading
import time
from typing import NamedTuple

import redis
from django.conf import settings
from redis.backoff import ExponentialBackoff, NoBackoff
from redis.retry import Retry

_client = None
_client_lock = threading.Lock()


def redis_client():
    """One persistent client per process (redis-py pools connections and is thread-safe)."""
    global _client
    if _client is None:
        with _client_lock:
            if _client is None:
                # a Redis restart or failover shorter than ~10 s is ridden out, not turned into a failed run.
                # No health_check_interval: redis-py runs its PING check with the same retries, inside each
                # retry of the command, so a Redis behind a proxy that accepts and hangs up was tried
                # (retries + 1)² times (256 connections, ~220 s for one command); the retries alone
                # already take a stale pooled connection out and try a new one.
                _client = redis.Redis.from_url(
                    settings.REDIS_URL, socket_timeout=10,
                    # AGUI_REDIS_RETRIES, default 15: about 11 s of trying (backoff capped at 1 s)
                    retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), settings.AGUI_REDIS_RETRIES),
                    retry_on_error=[redis.ConnectionError, redis.TimeoutError],
                )
    return _client


class _Of(NamedTuple):
    url: str
    client: redis.Redis


_quick = {}  # the quick clients by kind: each with the REDIS_URL it was made for


def _quick_client(kind, tries, retry_on_error):
    """A client whose every call is tried `tries` times, each within ~1 s. Kept for the REDIS_URL it
    was made for: a process whose setting changed (a test's own Redis) gets one for the new address;
    the one kept stayed on a Redis that was gone, and every later AG-UI POST was refused."""
    url, made = settings.REDIS_URL, _quick.get(kind)
    if made is None or made.url != url:
        with _client_lock:
            made = _quick.get(kind)
            if made is None or made.url != url:
                made = _quick[kind] = _Of(url, redis.Redis.from_url(
                    url, socket_connect_timeout=1, socket_timeout=1, retry=Retry(NoBackoff(), tries - 1),
                    retry_on_error=retry_on_error))
    return made.client


def probe_client():
    """A client that asks once and answers within ~1 s, for /healthz: through redis_client()'s
    retries a probe of a Redis that is down took 12 s, so a load balancer's probes (every few
    seconds, from each balancer) held web threads instead of getting their 503."""
    return _quick_client("probe", 1, [])


def brief_client():
    """A client for a request's own Redis calls that have an answer without Redis (a sign-in left
    unthrottled, an AG-UI POST refused before it writes anything): each call is tried twice (a
    pooled connection a Redis restart left stale is replaced by the second try), each within ~1 s.
    Through redis_client()'s retries every such call held its request ~12 s: a sign-in took 38 s
    and an AG-UI POST 55 s before saying anything useful."""
    return _quick_client("brief", 2, [redis.ConnectionError, redis.TimeoutError])


# a PING answered this recently stands for the next asker: every AG-UI POST asks before its
# RUN_STARTED, and a round trip each (0.1-0.3 ms in a busy stack) would sit on that path
ANSWERED_FOR = 1.0  # seconds
_answered = ("", float("-inf"))  # (REDIS_URL, when its PING was answered)
_clock = time.monotonic


def unreachable():
    """Why Redis does not answer a PING through brief_client() (the exception), or None when it does
    or did less than ANSWERED_FOR ago (a Redis lost meanwhile fails the request's own calls, slowly,
    as before this check)."""
    global _answered
    now, url = _clock(), settings.REDIS_URL
    if _answered[0] == url and now - _answered[1] < ANSWERED_FOR:
        return None
    try:
        brief_client().ping()
    except redis.RedisError as exc:
        return exc
    _answered = (url, now)
    return None
