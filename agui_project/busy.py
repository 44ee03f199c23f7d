"""A database too busy to answer now, or a Redis that cannot be reached (the live streams, the
broker, a Stop's signal), is a 503 with Retry-After, not a 500 that says something broke.

SQLite: a writer that waited past busy_timeout gets "database is locked". PostgreSQL: lock and
statement timeouts, serialization failures and deadlocks (the transaction was rolled back:
retrying is safe), too many connections, a server starting or going away, and a server that
cannot be reached at all or whose connection broke (psycopg's own errors, which carry no
SQLSTATE: a refused or lost connection, the pool's wait for one running out).
"""

import kombu.exceptions
import psycopg
import redis
from django.db import OperationalError
from django.http import HttpResponse, JsonResponse
from django.utils.translation import gettext, gettext_noop

RETRY_AFTER_SECONDS = 1
MESSAGE = gettext_noop("The database is busy right now. Please try again in a moment.")
SQLITE_BUSY = ("database is locked", "database table is locked", "database schema is locked")
# lock_not_available, query_canceled, serialization_failure, deadlock_detected, too_many_connections,
# cannot_connect_now, and the connection exceptions (class 08)
PG_BUSY = {"55P03", "57014", "40001", "40P01", "53300", "57P03"}


REDIS_MESSAGE = gettext_noop("The live connection (Redis) is unavailable right now. Please try again in a moment.")
# refused, lost or timed out (a restart, a failover's read-only replica, a server still loading), or
# the broker's connection: not a command Redis refused as wrong, which is a bug
REDIS_AWAY = (redis.ConnectionError, redis.TimeoutError, redis.exceptions.ReadOnlyError,
              kombu.exceptions.OperationalError)


def redis_away(exc):
    return isinstance(exc, REDIS_AWAY)


def is_busy(exc):
    if not isinstance(exc, OperationalError):
        return False
    text = str(exc).lower()
    if any(s in text for s in SQLITE_BUSY):
        return True
    cause = exc.__cause__
    state = getattr(getattr(cause, "diag", None), "sqlstate", None) or getattr(cause, "sqlstate", None)
    if state is None:  # not the server's answer: the client could not reach it, or lost it
        return isinstance(cause, psycopg.OperationalError)
    return state in PG_BUSY or state.startswith("08")


def message():
    """MESSAGE in the language of the answer (agui_project/language.py)."""
    return gettext(MESSAGE)


def response(request, json_body, exc=None):
    """`exc`: what was met; a Redis outage is said as such (`redis_unavailable`)."""
    text, code = (gettext(REDIS_MESSAGE), "redis_unavailable") if redis_away(exc) else (message(), "database_busy")
    if json_body:
        reply = JsonResponse({"message": text, "code": code}, status=503)
    else:
        reply = HttpResponse(text, status=503, content_type="text/plain; charset=utf-8")
    reply["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return reply
