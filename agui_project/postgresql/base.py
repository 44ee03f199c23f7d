"""Django's PostgreSQL backend, its pool handing out the connection returned last.

psycopg_pool hands out the connection that has waited longest (a FIFO queue, to spread use over
all of them). Under ASGI and in Celery every request and task takes a connection and gives it
back, and a process that once needed several (threads at the same moment) keeps them all: each
request then went to the coldest one — the server backend idle longest, its caches cold, and
psycopg's prepared statements not yet made on it (each connection prepares its own). Handed out
last in, first out, the warm one is reused, and the ones left idle are those psycopg_pool closes
after `max_idle` (it closes from the other end), as our SQLite stack does (agui_project/sqlite3).
The decide API over HTTP, paired (bench/ab.py): p50 7.71 → 6.59 and 8.84 → 7.21 ms.
"""

from django.db.backends.postgresql import base
from psycopg_pool import ConnectionPool


class LifoPool(ConnectionPool):
    def _get_ready_connection(self, timeout):
        # called under the pool's lock; it takes from the left of the queue, connections come
        # back on the right: the one returned last goes to the front first
        self._pool.rotate(1)
        return super()._get_ready_connection(timeout)


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self):
        # Django builds the pool itself (psycopg_pool's ConnectionPool, imported inside its own
        # `pool`); the one it built becomes a LifoPool, which changes nothing but that order
        pool = super().pool
        if pool is not None and not isinstance(pool, LifoPool):
            pool.__class__ = LifoPool
        return pool
