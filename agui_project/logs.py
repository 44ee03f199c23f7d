"""What the logs leave out: the routine lines of a healthy stack (settings.LOGGING, LOG_LEVEL), and
the credential in a mail link's path (the log handlers' filter and Daphne's access log)."""

import logging
import re
import time

# a mail link's token decides for its recipient without a sign-in (approvals/mail_links.py): whoever
# reads the logs (Daphne's access log, django.request's "Gone: /inbox/mail/…/") could use it
SECRET_PATH = re.compile(r"(/inbox/mail/)[^/?#\s\"]+")
HIDDEN = r"\1[token]"


def without_secrets(text):
    return SECRET_PATH.sub(HIDDEN, text) if "/inbox/mail/" in text else text


class SecretPaths(logging.Filter):
    """A record's message and arguments with mail links' tokens replaced (every handler)."""

    def filter(self, record):
        if isinstance(record.msg, str):
            record.msg = without_secrets(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(without_secrets(a) if isinstance(a, str) else a for a in record.args)
        return True


def printable(value):
    """What a client sent (a path, a method), for one log line: its control characters written out, as
    Django's own request lines write them (CVE-2025-48432): a CR/LF in a decoded path forged a line, an
    ESC coloured the operator's terminal."""
    return str(value).encode("unicode_escape").decode("ascii")


class UnknownHosts(logging.Filter):
    """django.security.DisallowedHost: a request for a Host not in DJANGO_ALLOWED_HOSTS was an ERROR with a
    15-line traceback naming ALLOWED_HOSTS, per request (scanners send such Hosts all day). One WARNING
    line naming the variable to set and the Host, as the refused sockets and CSRF failures are said."""

    def filter(self, record):
        request = getattr(record, "request", None)
        meta = getattr(request, "META", {})
        host = meta.get("HTTP_HOST") or meta.get("SERVER_NAME", "")
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info = record.exc_text = record.stack_info = None
        record.msg, record.args = ("request refused (400): Host %r is not in DJANGO_ALLOWED_HOSTS (%s %s); add it "
                                   "there if it is this site's name, else let the proxy drop such requests",
                                   (host, printable(getattr(request, "method", "?")),
                                    printable(getattr(request, "path", "?"))))
        return True


def hide_secrets_in_access_log():
    """Daphne's access log (its own stream, not logging) writes each request's path: it writes it
    without a mail link's token. False when Daphne is not installed or has changed."""
    try:
        from daphne.access import AccessLogGenerator
    except ImportError:
        return False
    if getattr(AccessLogGenerator, "_hides_secrets", False):
        return True
    call = AccessLogGenerator.__call__

    def __call__(self, protocol, action, details):
        path = details.get("path") if isinstance(details, dict) else None
        if isinstance(path, str):
            details = {**details, "path": without_secrets(path)}
        call(self, protocol, action, details)

    AccessLogGenerator.__call__ = __call__
    AccessLogGenerator._hides_secrets = True
    return True


class RoutineLines(logging.Filter):
    """Leaves out Celery's INFO lines that every healthy minute repeats: the beat's "Sending due
    task" (every 2 s), the worker's "Task ... received" and "Task ... succeeded in 0.002s".
    A retry (INFO too), a failure and anything at WARNING or above still get through.
    On the loggers celery.beat, celery.worker.strategy and celery.app.trace; LOG_LEVEL=DEBUG drops it."""

    def filter(self, record):
        if record.levelno != logging.INFO:
            return True
        if record.name == "celery.app.trace":
            return " succeeded in " not in str(record.msg)  # celery.app.trace.LOG_SUCCESS
        return record.name not in ("celery.beat", "celery.worker.strategy")


def _outage(exc):
    """Whether `exc` (or what caused it) is Redis or the broker out of reach."""
    import kombu.exceptions
    import redis

    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, (redis.ConnectionError, redis.TimeoutError, kombu.exceptions.OperationalError,
                            ConnectionRefusedError)):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


class OutageLines(logging.Filter):
    """While Redis is away, the beat logged each due task's failure every tick with its traceback
    and the whole stack (celery.beat's "Message Error"): 4,097 lines in 26 s of an outage here,
    burying what else happened. The first such record of a logger and message keeps its traceback;
    the same again within QUIET_SECONDS is its first line alone, saying where the traceback is."""

    QUIET_SECONDS = 60

    def __init__(self):
        super().__init__()
        self.told = {}  # (logger, message template) -> when its traceback was last written

    def filter(self, record):
        exc = record.exc_info[1] if record.exc_info else None
        if exc is None or not _outage(exc):
            return True
        key = (record.name, str(record.msg))
        told = self.told.get(key)
        if told is not None and record.created - told < self.QUIET_SECONDS:
            first = record.getMessage().split("\n", 1)[0]
            record.msg, record.args = "%s [still unreachable; its traceback was logged at %s]", (
                first, time.strftime("%H:%M:%S", time.localtime(told)))
            record.exc_info = record.exc_text = record.stack_info = None
        else:
            self.told[key] = record.created
        return True
