"""GET /healthz: can this web process serve? 200 when the database and Redis answer; the body also
says whether a Celery worker answered a ping.

A load balancer asks this to decide whether to send users to this process. The workers are shared
by every web process: without them pages, chats and decisions still work (runs wait, queued, until
a worker is back), so a slow or restarting worker must not take every web process out of service.
`?require=worker` is the readiness of the whole stack (start-up scripts, monitoring): 503 until a
worker answers. `sweeps` says whether recovery swept within a minute (the beat sends a sweep every
10 s, a worker runs it); `?require=beat` (monitoring, `?require=worker,beat` for both) is 503 when not.
With no mark of a sweep in Redis (a new stack, or a Redis that restarted empty) it is `none yet` for a
minute from this process's first look, then `none for N s` counted from that look.
`settings` says whether every process (web, worker, beat) known in Redis has the shared settings of
this one (agui_project/agreement.py), else which differ and where; `?require=settings` is 503 then.
It is not part of the plain probe's verdict: the process that is right sees the difference as well.
`processes` counts the processes of each kind that wrote theirs within a minute: a worker that died is
missing from it (`workers` only says that one answered), a second beat shows as `"beat": 2`.

The ping stops at the first reply (`limit=1`): a healthy probe takes milliseconds. Without a limit
Celery listens for the whole timeout, and measured here a fixed 0.5 s ping missed a healthy worker's
reply about every other time in its first seconds. A worker can also miss a ping outright (the
broadcast goes over Redis pub/sub, and a worker subscribes a moment after it says "ready"), so the
strict probe asks again, with longer waits, up to sum(WORKER_PING_TIMEOUTS). The probe needs no
sign-in: a ping's answer serves the probes of the next PING_KEPT_SECONDS (a second), so a flood of
probes sends the workers one ping a second per web process, not one a probe.

`db` says `no free connection in this process's pool` rather than that the database did not answer
when every connection of this process's pool is lent out: PostgreSQL may be answering every other one.

A 503 is this probe's answer, not a server error: it is logged here (a warning when the database or
Redis fails, DEBUG when only a worker has not answered yet, as during `make run`'s start-up wait),
never as django.request's ERROR "Service Unavailable".
"""

import logging
import threading
import time

from asgiref.sync import sync_to_async
from django.db import connection
from django.http import JsonResponse
from psycopg_pool import PoolTimeout

from agui_project import agreement
from agui_project.celery import SWEPT_KEY
from agui_project.celery import app as celery_app
from agui_project.middleware import DualModeMiddleware
from agui_project.redis_client import probe_client

log = logging.getLogger(__name__)

LB_PING_TIMEOUT = 0.5  # the plain probe reports workers but never waits long for them
WORKER_PING_TIMEOUTS = (0.5, 0.75, 1.25)  # ?require=worker: three tries, 2.5 s at most
SWEEPS_LATE_AFTER = 60  # seconds without a sweep of recovery's (every 10 s): the beat, or every worker, is down
DB_PROBE_TIMEOUT = 1.0  # for a pooled connection: as long as Redis's probe (redis_client.probe_client)
PING_KEPT_SECONDS = 1.0  # a ping's answer serves the probes that follow it this long (_Kept)
# what the body says of a part that failed: the probe needs no sign-in, so it names no exception (an
# outsider learnt the driver and the kind of failure); the log has the exception for the operator
DOWN = {"db": "error: the database did not answer", "redis": "error: Redis did not answer",
        # every connection of this process's pool lent out: PostgreSQL may well answer the others
        "pool": "error: no free connection in this process's pool"}


def _ask_database():
    """SELECT 1, within DB_PROBE_TIMEOUT where there is a pool: a request waits up to the pool's
    timeout (10 s) for a connection, as it should while the database restarts, but a probe that
    waits as long holds a web thread per probe and answers the load balancer after it gave up."""
    pool = connection.pool if connection.vendor == "postgresql" else None
    if pool is None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return
    pool.open()  # as Django's backend does before each connection: opened on first use
    with pool.connection(timeout=DB_PROBE_TIMEOUT) as conn:
        conn.execute("SELECT 1")


def _pool_used_up():
    """Whether this process's own PostgreSQL pool has every connection lent out (LifoPool.used_up):
    its PoolTimeout then says nothing of the database, which answered every other process."""
    pool = connection.pool if connection.vendor == "postgresql" else None
    return bool(pool is not None and getattr(pool, "used_up", None) and pool.used_up())


class _Unswept:
    """Since when this process has found no sweeps' mark in Redis. A mark is missing before the
    first sweep of a new stack, and also after Redis restarted empty, or failed over, with the beat
    down: "none yet" then lasted for as long as the beat stayed down. It is "none yet" for
    SWEEPS_LATE_AFTER from this process's first look, then late, as a lapsed mark is."""

    def __init__(self, clock=time.monotonic):
        self._clock, self.since = clock, None

    def missing_for(self):
        now = self._clock()
        if self.since is None:
            self.since = now
        return now - self.since

    def found(self):
        self.since = None


unswept = _Unswept()


def _sweeps():
    """Whether recovery swept lately: the beat sends its sweep every 10 s and a worker runs it. With
    the beat down nothing else tells: deadlines pass without expiring or escalating, and runs of a
    dead worker are never recovered, while every page and run still works."""
    pipe = probe_client().pipeline(transaction=False)
    pipe.time()
    pipe.get(SWEPT_KEY)
    try:
        (seconds, micros), swept = pipe.execute()
    except Exception as exc:  # reported, as the other parts are
        log.warning("health check: the sweeps' mark could not be read from Redis: %r", exc)
        return DOWN["redis"]
    if swept is None:
        missing = int(unswept.missing_for())  # at least that long, as far as this process can tell
        return "none yet" if missing <= SWEEPS_LATE_AFTER else f"none for {missing} s"
    unswept.found()
    ago = (seconds * 1000 + micros // 1000 - int(swept)) // 1000
    return "ok" if ago <= SWEEPS_LATE_AFTER else f"none for {ago} s"


class _Kept:
    """The workers' answer to this process's last ping, for PING_KEPT_SECONDS: /healthz needs no
    sign-in, and each probe broadcast a ping that every worker answers, so a flood of probes kept
    every worker answering pings and held a web thread a ping long per probe. Probes while a ping is
    on its way wait for its answer rather than sending their own."""

    def __init__(self, clock=time.monotonic):
        self._lock, self._clock = threading.Lock(), clock
        self.answers = {}  # ping timeouts -> (clock time, workers)

    def workers(self, timeouts):
        with self._lock:
            at, workers = self.answers.get(timeouts, (None, 0))
            if at is None or self._clock() - at >= PING_KEPT_SECONDS:
                workers = _workers(timeouts)
                self.answers[timeouts] = (self._clock(), workers)
            return workers


def _workers(timeouts):
    """1 when a worker answered one of the pings (each waits up to its timeout), else 0."""
    for timeout in timeouts:
        try:
            replies = celery_app.control.ping(timeout=timeout, limit=1) or []
        except Exception:  # the broker connection failed: as if nobody answered
            replies = []
        if replies:
            return len(replies)
    return 0


kept = _Kept()


def healthz(request):
    required = set(request.GET.get("require", "").split(","))
    require_worker = "worker" in required
    body, ok, why = {}, True, {}  # why: each failed part's exception, for the log only
    try:
        _ask_database()
        body["db"] = "ok"
    except Exception as exc:  # report, don't raise: this is the health probe
        down = DOWN["pool"] if isinstance(exc, PoolTimeout) and _pool_used_up() else DOWN["db"]
        body["db"], ok, why["db"] = down, False, exc
    try:
        probe_client().ping()
        body["redis"] = "ok"
    except Exception as exc:
        body["redis"], ok, why["redis"] = DOWN["redis"], False, exc
    workers = 0
    if body["redis"] == "ok":
        workers = kept.workers(WORKER_PING_TIMEOUTS if require_worker else (LB_PING_TIMEOUT,))
    body["workers"] = workers
    body["worker"] = "ok" if workers else "no worker answered"
    if require_worker:
        ok = ok and workers > 0
    if body["redis"] == "ok":
        body["sweeps"] = _sweeps()
        if "beat" in required:
            ok = ok and body["sweeps"] == "ok"
    elif "beat" in required:
        ok = False
    if body["redis"] == "ok":
        try:
            body["settings"] = agreement.check("web", client=probe_client())
            body["processes"] = agreement.processes(probe_client())
        except Exception as exc:
            log.warning("health check: the processes' settings could not be read from Redis: %r", exc)
            body["settings"] = DOWN["redis"]
    if "settings" in required:
        ok = ok and body.get("settings") == "same"
    response = JsonResponse(body, status=200 if ok else 503)
    if not ok:
        broken = body["db"] != "ok" or body["redis"] != "ok"
        log.log(logging.WARNING if broken else logging.DEBUG, "health check: 503 %s%s", body,
                "".join(f"; {part}: {exc!r}" for part, exc in why.items()))
        response._has_been_logged = True  # django.utils.log.log_response: not again as an ERROR
    return response


class ProbeMiddleware(DualModeMiddleware):
    """First in MIDDLEWARE: /healthz is answered before anything reads the Host header. A load balancer
    or Kubernetes probes each web process at its own address (`Host: 10.0.0.11:8000`), which is no
    public name in DJANGO_ALLOWED_HOSTS: Django's host check made every such probe a 400, and the
    balancer took every web process out of service. The probe reveals nothing a Host could choose,
    and every other path keeps the check (and the HTTPS redirect, which a plain-HTTP probe would read
    as unhealthy)."""

    def sync_call(self, request):
        if request.path_info == "/healthz":
            return healthz(request)
        return self.get_response(request)

    async def __acall__(self, request):
        if request.path_info == "/healthz":
            return await sync_to_async(healthz)(request)  # its database and Redis calls block
        return await self.get_response(request)
