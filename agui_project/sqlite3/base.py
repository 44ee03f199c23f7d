"""Django's SQLite backend, with the connections it closes kept for the next one to open.

Under ASGI each request's sync code runs on a thread of its own, and Django's connections are
per thread, so with SQLite every request (and every Celery task: Django's fixup closes them
around each one) opened a connection: the file, Django's ~30 SQL functions, five PRAGMAs —
about 400 µs, more than the rest of a small request's queries. Django 5.2 pools PostgreSQL only
(the `pool` option, on psycopg_pool); SQLite has no pooling library, hence these few lines.

A closed connection goes back to a small per-process stack (`AGUI_DB_POOL_SIZE`) only when it
is clean: not in a transaction or an atomic block, in autocommit, and no error since its last
commit or rollback; anything else is closed for real, as before. The stack belongs to the process
that filled it (a forked Celery child starts empty: SQLite connections must not cross a fork)
and to the database file (the test runner's database is another one). The PRAGMAs are set on
the connection, so a reused one keeps them; Django sets autocommit again on every connect.
"""

import contextlib
import os
import queue
import threading

from django.conf import settings
from django.db.backends.sqlite3 import base, creation

_lock = threading.Lock()
_stacks = {}  # (pid, database name) -> LifoQueue of sqlite3 connections


def _stack(wrapper):
    if wrapper.is_in_memory_db():  # Django never closes those anyway
        return None
    size = int(getattr(settings, "AGUI_DB_POOL_SIZE", 10))
    if size <= 0:
        return None
    key = (os.getpid(), str(wrapper.settings_dict["NAME"]))
    stack = _stacks.get(key)
    if stack is None:
        with _lock:
            stack = _stacks.setdefault(key, queue.LifoQueue(maxsize=size))
    return stack


class DatabaseCreation(creation.DatabaseCreation):
    def _destroy_test_db(self, test_database_name, verbosity):
        """Django's, after closing the connections kept for that file: SQLite removes a WAL
        database's -wal and -shm files when its last connection closes, and kept open they stayed
        behind in var/ after every test run (4 MB each); what another thread still holds open is
        removed with the file."""
        discard(test_database_name)
        super()._destroy_test_db(test_database_name, verbosity)
        if test_database_name and not self.is_in_memory_db(test_database_name):
            for leftover in (f"{test_database_name}-wal", f"{test_database_name}-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(leftover)


class DatabaseWrapper(base.DatabaseWrapper):
    creation_class = DatabaseCreation

    def get_new_connection(self, conn_params):
        stack = _stack(self)
        if stack is not None:
            try:
                return stack.get_nowait()
            except queue.Empty:
                pass
        return super().get_new_connection(conn_params)

    def _close(self):
        stack, conn = _stack(self), self.connection
        clean = (conn is not None and not self.in_atomic_block and not self.errors_occurred
                 and not conn.in_transaction and conn.isolation_level is None)  # None: autocommit
        if stack is None or not clean:
            return super()._close()
        try:
            stack.put_nowait(conn)
        except queue.Full:
            super()._close()


def discard(name=None):
    """Close the kept connections of this process to the file `name`, or to every file (a test that
    replaces the database file)."""
    with _lock:
        stacks = [s for (pid, kept), s in _stacks.items() if pid == os.getpid() and name in (None, kept)]
    for stack in stacks:
        while True:
            try:
                stack.get_nowait().close()
            except queue.Empty:
                break
