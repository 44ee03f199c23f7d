"""agui_project/celery_fixup.py: a prefork worker's tasks give their PostgreSQL connections back to
Django's pool at their start and end, instead of closing the whole pool there (celery#10554); a
child still drops the pool it inherited, once, after the fork."""

from types import SimpleNamespace

import pytest
from django.db import connection

from agui_project.celery import app as celery_app
from agui_project.celery_fixup import Fixup, WorkerFixup

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="Django's connection pool is PostgreSQL's")


def backend_pid():
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_a_prefork_childs_tasks_keep_the_pool_and_its_fork_drops_the_inherited_one(transactional_db):
    assert [type(f) for f in celery_app._fixups] == [Fixup]
    assert isinstance(celery_app._fixups[0].worker_fixup, WorkerFixup)
    fixup = WorkerFixup(celery_app)
    fixup.worker = SimpleNamespace(pool_cls="celery.concurrency.prefork:TaskPool")
    task = SimpleNamespace(request=SimpleNamespace(is_eager=False))
    first = backend_pid()
    pool = connection.pool
    assert pool is not None
    made = pool.get_stats()["connections_num"]  # server connections the pool has opened

    fixup.on_task_postrun(sender=task)  # a task ends: its connection goes back to the pool
    assert connection.connection is None and connection.pool is pool
    fixup.on_task_prerun(sender=task)
    backend_pid()
    assert pool.get_stats()["connections_num"] == made  # the next task is served by one it has
    fixup.on_task_postrun(sender=task)

    fixup.on_worker_process_init()  # after a fork: what the parent made is not the child's
    assert connection.pool is not pool and pool.closed
    assert backend_pid() != first
