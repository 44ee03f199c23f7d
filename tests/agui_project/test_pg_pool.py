"""agui_project/postgresql: Django's PostgreSQL backend whose pool hands out the connection
returned last (psycopg_pool's own order is the one returned first), on PostgreSQL only."""

import threading

import pytest
from django.conf import settings
from django.db.utils import ConnectionHandler

pytestmark = pytest.mark.skipif(not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
                                reason="the suite runs on SQLite")


@pytest.fixture
def handler(django_db_blocker):
    db = settings.DATABASES["default"]
    assert db["ENGINE"] == "agui_project.postgresql"  # what settings.py makes of a postgres:// DATABASE_URL
    # an alias of its own: Django keeps one pool per alias for the process, the suite's is "default"
    # (a handler needs a "default": one without a pool, never opened here)
    # at most two connections: the pool grows in the background while a client waits, and with room
    # for a third it could add one after both were returned, which is then the one returned last
    h = ConnectionHandler({"default": {**db, "OPTIONS": {}},
                           "lifo": {**db, "OPTIONS": {**db["OPTIONS"], "pool": {"min_size": 1, "max_size": 2}}}})
    with django_db_blocker.unblock():
        yield h
        h["lifo"].close_pool()


def backend_pids(handler, order):
    """Two threads each hold a connection at once, then return them in `order` (0: the first
    opened first). The backend pids they had, in the order they were returned."""
    opened, returned, release = [None, None], [], [threading.Event(), threading.Event()]
    both_open = threading.Barrier(3, timeout=10)

    def hold(i):
        conn = handler["lifo"]
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                opened[i] = cursor.fetchone()[0]
        finally:
            both_open.wait()
        release[i].wait(10)
        conn.close()  # back to the pool
        returned.append(opened[i])
        if i == order[0]:
            release[order[1]].set()

    threads = [threading.Thread(target=hold, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    both_open.wait()
    release[order[0]].set()
    for t in threads:
        t.join()
    return returned


def next_pid(handler):
    out = []

    def take():
        conn = handler["lifo"]
        with conn.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            out.append(cursor.fetchone()[0])
        conn.close()

    t = threading.Thread(target=take)
    t.start()
    t.join()
    return out[0]


def test_the_pool_hands_out_the_connection_returned_last(handler):
    for order in ((0, 1), (1, 0)):
        first, last = backend_pids(handler, order)
        assert first != last  # two connections, both now idle in the pool
        assert next_pid(handler) == last
        assert next_pid(handler) == last  # and again: the warm one, not the one idle longest



@pytest.fixture
def single(django_db_blocker):
    """A pool of one connection, so that nothing but a replacement can be handed out after it."""
    db = settings.DATABASES["default"]
    h = ConnectionHandler({"default": {**db, "OPTIONS": {}},
                           "lifo": {**db, "OPTIONS": {**db["OPTIONS"], "pool": {"min_size": 1, "max_size": 1}}}})
    with django_db_blocker.unblock():
        yield h
        h["lifo"].close_pool()


def test_a_connection_the_server_ended_while_idle_is_replaced_not_handed_out(single):
    """A database restart (or failover, or pg_terminate_backend) ends every idle pooled connection:
    each was handed to the next request and failed it ("server closed the connection
    unexpectedly": a 500, an AG-UI run that could not start, a worker's task) though the server
    answered again."""
    idle = next_pid(single)
    with single["default"].cursor() as cursor:  # another session ends it, and waits until it has
        cursor.execute("SELECT pg_terminate_backend(%s, 5000)", [idle])
        assert cursor.fetchone()[0]
    single["default"].close()
    replacement = next_pid(single)
    assert replacement != idle
    assert next_pid(single) == replacement
