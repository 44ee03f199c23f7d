"""Mail in development: Django's console backend, written to the process's own standard output.

A Celery worker (where reviewers' mail is sent from) turns what a task prints into log records
(celery.redirected), and the log handlers hide mail links' tokens (agui_project/logs.SecretPaths):
the printed mail is the development stack's mailbox, so its links must stay whole there, while a
log line quoting a link keeps hiding it."""

import sys

from django.core.mail.backends.console import EmailBackend as ConsoleBackend


class EmailBackend(ConsoleBackend):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("stream", sys.__stdout__ or sys.stdout)
        super().__init__(*args, **kwargs)
