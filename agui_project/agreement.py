"""The settings every process must share (README "Running several processes": every AGUI_* setting but
the per-process ones, and the Django ones its table names), compared across them.

A web process with another DJANGO_SECRET_KEY turns away the sessions the others made (users behind a
round-robin proxy are signed out on one request in N), a worker with another one signs mail links no
web process takes, a worker on another queue never runs a run, a beat with other windows sweeps by
them: each process works, each /healthz said 200, and only users saw it. So every process writes a
digest of each shared setting to Redis under a key of its own, renewed while it lives (workers and
the beat on a thread, started by Celery's worker_ready / beat_init; a Daphne process on a thread from
its start, and on each /healthz probe), and compares them with the others': /healthz says which settings differ and in which
processes (`settings`), `?require=settings` is 503 then, and each process logs a warning when what
differs changes.

Only digests are written (a secret's is a SHA-256 prefix, never the value). REDIS_URL is not compared:
processes that see each other's keys share the Redis, and ones that do not cannot be compared here.
"""

import atexit
import hashlib
import json
import logging
import os
import socket
import threading

from django.conf import settings

from agui_project.redis_client import redis_client

log = logging.getLogger(__name__)

KEY_PREFIX = "agui:settings:"
TTL = 60  # seconds a process's digests outlive its last renewal: a stopped process drops out
RENEW_EVERY = 20


def _database(s):
    db = s.DATABASES["default"]
    return [db["ENGINE"].rsplit(".", 1)[-1], str(db.get("NAME"))]


# what README's table names under other names than their own (and the Django settings it lists)
NAMED = {
    "DJANGO_SECRET_KEY": lambda s: s.SECRET_KEY,
    "DJANGO_DEBUG": lambda s: s.DEBUG,  # Secure cookies, the webhooks' allowed networks by default
    "DJANGO_LANGUAGE_CODE": lambda s: s.LANGUAGE_CODE,  # pages in one, mail (composed in workers) in another
    "DATABASE_URL": _database,
    "CELERY_TASK_DEFAULT_QUEUE": lambda s: s.CELERY_TASK_DEFAULT_QUEUE,
    "CELERY_VISIBILITY_TIMEOUT": lambda s: s.CELERY_BROKER_TRANSPORT_OPTIONS.get("visibility_timeout"),
    "DJANGO_ALLOWED_HOSTS": lambda s: s.ALLOWED_HOSTS,
    "DJANGO_CSRF_TRUSTED_ORIGINS": lambda s: s.CSRF_TRUSTED_ORIGINS,
    "AGUI_PROXY_SSL_HEADER": lambda s: getattr(s, "SECURE_PROXY_SSL_HEADER", None),
    "OPENAI_API_KEY": lambda s: s.OPENAI_API_KEY,
    "OPENAI_BASE_URL": lambda s: s.OPENAI_BASE_URL,
}
# README: per process, and free to differ (each process's own connections and retries)
PER_PROCESS = {"AGUI_DB_POOL", "AGUI_DB_POOL_SIZE", "AGUI_DB_PREPARE", "AGUI_STREAM_READER_CONNECTIONS",
               "AGUI_REDIS_RETRIES"}


def shared():
    """{name: read(settings)} of every setting that must be the same in every process: the ones
    above, and every AGUI_* setting but the per-process ones (one process writes or signs what another
    reads or sweeps; a web process with other limits refuses what the others take), so that a new one
    is compared without being listed."""
    agui = {name: (lambda s, n=name: getattr(s, n))
            for name in dir(settings) if name.startswith("AGUI_") and name not in PER_PROCESS}
    return {**agui, **NAMED}


def digests():
    """{setting: 16 hex digits} of this process's shared settings."""
    return {name: hashlib.sha256(f"{name}={json.dumps(read(settings), default=str)}".encode()).hexdigest()[:16]
            for name, read in shared().items()}


def process_name(kind, name=None):
    return f"{kind} {name or f'{socket.gethostname()}:{os.getpid()}'}"


def publish(kind, name=None, client=None):
    """Write this process's digests (they lapse TTL seconds after the last write)."""
    who = process_name(kind, name)
    (client or redis_client()).set(KEY_PREFIX + who, json.dumps(digests()), ex=TTL)
    return who


def differences(me, client=None):
    """{setting: [other processes holding another value]} over every process known in Redis."""
    client = client or redis_client()
    keys = sorted(k for k in client.scan_iter(KEY_PREFIX + "*", count=1000) if k.decode() != KEY_PREFIX + me)
    mine, differ = digests(), {}
    for key, value in zip(keys, client.mget(keys) if keys else [], strict=True):
        if value is None:  # lapsed between the scan and the read
            continue
        theirs = json.loads(value)
        for name, digest in mine.items():
            if name in theirs and theirs[name] != digest:
                differ.setdefault(name, []).append(key.decode().removeprefix(KEY_PREFIX))
    return differ


def processes(client=None):
    """{kind: how many processes of it wrote their settings within TTL}: the workers and beats alive
    (a restarted one counts twice until its former key lapses), the web processes probed lately."""
    counts = {}
    for key in (client or redis_client()).scan_iter(KEY_PREFIX + "*", count=1000):
        kind = key.decode().removeprefix(KEY_PREFIX).split(" ", 1)[0]
        counts[kind] = counts.get(kind, 0) + 1
    return dict(sorted(counts.items()))


def describe(differ, named=True):
    """"same", or each differing setting with the processes that hold another value: by name (host:pid,
    a worker's node name), or, not `named`, by kind only (what /healthz, which anyone may ask, says)."""
    if not differ:
        return "same"

    def holders(who):
        return who if named else sorted({process.split(" ", 1)[0] for process in who})

    return "differ: " + "; ".join(f"{name} ({', '.join(holders(who))})" for name, who in sorted(differ.items()))


_last_told = {}  # what this process last logged, per process name: a warning when it changes


def check(kind, name=None, client=None):
    """Publish this process's digests, compare them with the others', log a change (the processes by
    name); the description, the processes by kind: /healthz answers anyone, and its probes need not
    learn the hosts behind the proxy."""
    me = publish(kind, name, client)
    differ = differences(me, client)
    said = describe(differ)
    if _last_told.get(me, "same") != said:
        if said == "same":
            log.info("settings: %s now shares every setting of README's table with the other processes", me)
        else:
            log.warning("settings: %s and other processes disagree (README \"Running several processes\" "
                        "lists what must be the same): %s", me, said.removeprefix("differ: "))
    _last_told[me] = said
    return describe(differ, named=False)


def keep_checking(kind, name=None):
    """A daemon thread that checks every RENEW_EVERY seconds (a worker's, the beat's or a Daphne
    process). A clean exit takes this process's digests away at once: a restarted beat or web process
    (a new pid) counted twice, and a deploy gate on ?require=settings failed for the minute the old
    digests took to lapse."""
    def loop():
        while not stop.is_set():
            try:
                check(kind, name)
            except Exception as exc:  # Redis away: the next round tries again; nothing here may stop the process
                log.debug("settings check skipped: %s", exc)
            stop.wait(RENEW_EVERY)

    stop = threading.Event()
    threading.Thread(target=loop, name="agui-settings-check", daemon=True).start()
    atexit.register(leave, kind, name, stop)
    return stop


def leave(kind, name=None, stop=None):
    """This process's digests gone (its clean exit); Redis away: they lapse within TTL all the same."""
    if stop is not None:
        stop.set()
    try:
        redis_client().delete(KEY_PREFIX + process_name(kind, name))
    except Exception as exc:
        log.debug("settings digests left to lapse: %s", exc)


def served_by_daphne(argv):
    """Whether this process is Daphne serving the app (`daphne …`, `python -m daphne …`), not a test or
    a command importing it: a web process checks from its start, so one no probe reaches (open-source
    nginx has no active health checks) is still compared and its difference logged."""
    return bool(argv) and "daphne" in os.path.basename(os.path.dirname(argv[0]) if argv[0].endswith(
        "__main__.py") else argv[0])
