"""What the logs leave out: the routine lines of a healthy stack (settings.LOGGING, LOG_LEVEL), and
the credential in a mail link's path (the log handlers' filter and Daphne's access log)."""

import logging
import re

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
