"""Celery's Django fix-up, keeping Django's PostgreSQL connection pool between tasks.

Celery's fix-up (celery/fixups/django.py) closes every connection at each task's start and end,
as Django does at a request's end, and in a prefork child it also closes the whole pool there,
not only once after the fork (celery#10554, open; the fix proposed in celery#10555 is this one).
Every task then opened a new PostgreSQL connection: a new server backend with cold caches,
6–98 ms (median ~15 ms) before a run's first statement, and slower first statements after it.
Here a task's connections go back to the pool at those two moments; a child still closes what it
inherited, pools included, once, after the fork (the parent's pool is not the child's to use).
"""

import os

from celery.fixups import django as celery_django


class WorkerFixup(celery_django.DjangoWorkerFixup):
    """Celery's closing of a task's connections as it is; its pool closing only after the fork.
    `_is_prefork()` is what Celery's `_close_database` asks before it closes the pools."""

    _forked = False

    def on_worker_process_init(self, **kwargs):
        self._forked = True
        try:
            super().on_worker_process_init(**kwargs)
        finally:
            self._forked = False

    def _is_prefork(self):
        return self._forked and super()._is_prefork()


class Fixup(celery_django.DjangoFixup):
    """DjangoFixup with WorkerFixup for the worker's part, made when a worker starts (as Celery's
    own: it reads the configuration, which is not ready while the app is built)."""

    @property
    def worker_fixup(self):
        if self._worker_fixup is None:
            self._worker_fixup = WorkerFixup(self.app)
        return self._worker_fixup

    @worker_fixup.setter
    def worker_fixup(self, value):
        self._worker_fixup = value


def fixup(app, env="DJANGO_SETTINGS_MODULE"):
    """celery.fixups.django.fixup with Fixup (Django itself is this project's dependency)."""
    if os.environ.get(env) and "django" not in app.loader_cls.lower():
        return Fixup(app).install()
    return None
