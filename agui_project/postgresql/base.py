"""Django's PostgreSQL backend: its pool handing out the connection returned last (and never one
the server has hung up on), the models'
choices adapted as the str or int they are, and statements queued for the round trip of the next
one (a transaction's BEGIN, writes whose answer nobody reads: cursors.py).

psycopg_pool hands out the connection that has waited longest (a FIFO queue, to spread use over
all of them). Under ASGI and in Celery every request and task takes a connection and gives it
back, and a process that once needed several (threads at the same moment) keeps them all: each
request then went to the coldest one — the server backend idle longest, its caches cold, and
psycopg's prepared statements not yet made on it (each connection prepares its own). Handed out
last in, first out, the warm one is reused, and the ones left idle are those psycopg_pool closes
after `max_idle` (it closes from the other end), as our SQLite stack does (agui_project/sqlite3).
The decide API over HTTP, paired (bench/ab.py): p50 7.71 → 6.59 and 8.84 → 7.21 ms.

A status such as `Run.Status.RUNNING` is a str (Django's TextChoices), but psycopg finds a dumper
by the value's exact class: for a class it has none for, it walks the class's ancestors and tries
each one's dotted name too, on every parameter (a cursor's cache lasts one statement, and Django
makes a cursor per statement), and never remembers what it found: 13.6 µs a status here, against
0.7 for a str, some 25 times a resume. Each choices class gets the dumper of the str or int it is,
once, on the adapters every connection starts from.
"""

import contextlib
import select

import psycopg
from django.db import models
from django.db.backends.postgresql import base
from django.db.backends.utils import debug_transaction
from psycopg.adapt import PyFormat
from psycopg_pool import ConnectionPool
from psycopg_pool.pool import AddConnection

from . import cursors


def hung_up(conn):
    """Whether the server ended this idle connection while it waited in the pool (a restart, a
    failover, pg_terminate_backend, a proxy or network path gone): an idle connection has nothing
    to read unless the server said goodbye (its FATAL message, then the end of the stream). One
    poll of the socket, no round trip."""
    poller = select.poll()
    try:
        poller.register(conn.fileno(), select.POLLIN)
        return bool(poller.poll(0))
    except (OSError, ValueError, psycopg.Error):  # the socket is gone already
        return True


class LifoPool(ConnectionPool):
    # connections handed out and not given back yet: /healthz tells a pool this process used up
    # (every connection lent, PoolTimeout) from a database that does not answer (PoolTimeout too)
    lent = 0

    def getconn(self, timeout=None):
        conn = super().getconn(timeout)
        with self._lock:
            self.lent += 1
        return conn

    def putconn(self, conn):
        super().putconn(conn)
        with self._lock:
            self.lent -= 1

    def used_up(self):
        """Whether every connection the pool may open is lent out (a wait for one is then a wait
        for another request of this process to give one back, whatever the database does)."""
        return self.lent >= self.max_size

    def _get_ready_connection(self, timeout):
        # called under the pool's lock; it takes from the left of the queue, connections come
        # back on the right: the one returned last goes to the front first. One the server hung up
        # on is replaced, not handed out: after a database restart every idle connection was such
        # a one, and each failed the request it was given (a 500, a run that never started)
        while True:
            self._pool.rotate(1)
            conn = super()._get_ready_connection(timeout)
            if conn is None or not hung_up(conn):
                return conn
            self._stats[self._CONNECTIONS_LOST] += 1
            self._close_connection(conn)
            self.run_task(AddConnection(self))


def _choices(cls=models.Choices):
    for sub in cls.__subclasses__():
        yield sub
        yield from _choices(sub)


def adapt_choices(adapters):
    """Register on `adapters` the dumpers of str (int) for every choices class defined so far that is
    one (those defined later take the slow way, and are still dumped correctly)."""
    for cls in _choices():
        base_type = next((t for t in (str, int) if issubclass(cls, t)), None)
        if base_type is None or cls in (models.TextChoices, models.IntegerChoices):
            continue
        # the dumper of %s, the placeholder Django writes (%t and %b still find theirs the slow way)
        adapters.register_dumper(cls, adapters.get_dumper(base_type, PyFormat.AUTO))


class DatabaseWrapper(base.DatabaseWrapper):
    lazy_commits = False  # queries.lazy_commits(): the transactions opened meanwhile commit lazily

    def get_connection_params(self):
        params = super().get_connection_params()
        adapters = params.get("context")  # Django's template (one per time zone), shared by connections
        if adapters is not None and not getattr(adapters, "_agui_choices", False):
            adapt_choices(adapters)
            adapters._agui_choices = True
        factory = params.get("cursor_factory")
        params["cursor_factory"] = cursors.FACTORIES.get(factory, factory)
        return params

    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        cursors.note_begin(connection, False)  # a pooled connection may come back with one noted
        return connection

    def _begins_with_first(self):
        """Whether this connection's transactions open with their first statement (cursors.py):
        not when psycopg is to open them with an isolation level or access mode of their own."""
        conn = self.connection
        return (conn.cursor_factory in cursors.FACTORIES.values()
                and conn.isolation_level is None and conn.read_only is None and conn.deferrable is None)

    def _set_autocommit(self, autocommit):
        if not self._begins_with_first():
            cursors.note_begin(self.connection, False)
            return super()._set_autocommit(autocommit)
        with self.wrap_database_errors:
            if not self.connection.autocommit:
                self.connection.autocommit = True
            cursors.note_begin(self.connection, not autocommit)
            if not autocommit and self.lazy_commits:
                cursors.commit_lazily(self.connection)

    def _commit(self):
        conn = self.connection
        if conn is not None and cursors.writes_pending(conn):  # they and COMMIT in one round trip
            with debug_transaction(self, "COMMIT"), self.wrap_database_errors:
                cursors.send_queued(conn, commit=True)
        elif conn is not None and cursors.begin_pending(conn):
            with debug_transaction(self, "COMMIT"):
                pass  # nothing was sent: nothing to commit
        else:
            super()._commit()
        # (a commit that failed leaves the transaction to the rollback that follows)
        self._next_begins()

    def _rollback(self):
        if self.connection is not None and cursors.discard_queued(self.connection):
            with debug_transaction(self, "ROLLBACK"):
                pass  # nothing was sent: nothing to roll back
        else:
            super()._rollback()
        self._next_begins()

    def drop_if_hung_up(self):
        """queries.drop_if_hung_up(): close (give back) this idle connection when the server ended it."""
        if self.connection is not None and not self.in_atomic_block and hung_up(self.connection):
            self.close()

    def unanswered(self):
        """queries.unanswered(): inside a transaction opened here, statements queued for the next."""
        self.ensure_connection()
        if self.in_atomic_block and self._begins_with_first():
            return cursors.defer(self.connection)
        return contextlib.nullcontext()

    def _next_begins(self):
        """Outside autocommit (set_autocommit(False) on its own) the next statement opens another."""
        if self.connection is not None and self._begins_with_first():
            cursors.note_begin(self.connection, not self.autocommit)

    def commit_lazily(self):
        """This transaction's COMMIT does not wait for the WAL's flush (queries.commit_lazily); outside
        atomic(), in a pipeline (queries.read_ahead), the pipeline's implicit one (a statement too
        small to be worth preparing)."""
        self.ensure_connection()
        if not self.in_atomic_block:
            self.connection.execute(cursors.LAZY_ROUND_TRIP, prepare=False)
        elif self._begins_with_first():
            cursors.commit_lazily(self.connection)
        else:
            with self.cursor() as cursor:
                cursor.execute(cursors.LAZY.decode())

    def next_commits_lazily(self):
        """In autocommit, the next statement's transaction commits lazily (queries.lazy_commits)."""
        self.ensure_connection()
        cursors.next_commits_lazily(self.connection)

    def create_cursor(self, name=None):
        if name and self.connection is not None:
            # a named cursor's DECLARE is not sent through ours; psycopg's autocommit being on, Django
            # declares it WITH HOLD inside a transaction too (still closed with it; its rest kept at commit)
            cursors.send_queued(self.connection)
        return super().create_cursor(name)

    @property
    def pool(self):
        # Django builds the pool itself (psycopg_pool's ConnectionPool, imported inside its own
        # `pool`); the one it built becomes a LifoPool, which changes nothing but that order
        pool = super().pool
        if pool is not None and not isinstance(pool, LifoPool):
            pool.__class__ = LifoPool
        return pool
