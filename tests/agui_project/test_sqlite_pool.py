"""agui_project/sqlite3: Django's SQLite backend keeping the connections it closes, on its own
database file (whatever database the suite runs on)."""

import multiprocessing
import sqlite3
import threading

import pytest
from django.db.utils import ConnectionHandler

from agui_project.sqlite3.base import discard


@pytest.fixture
def handler(tmp_path, settings, django_db_blocker):
    settings.AGUI_DB_POOL_SIZE = 2
    path = tmp_path / "pool.sqlite3"
    # the file is in WAL mode before any test opens it, as `migrate` leaves the product's: several
    # threads switching a new file to WAL at once can meet "database is locked" (seen once in CI)
    sqlite3.connect(path).execute("PRAGMA journal_mode=WAL").connection.close()
    h = ConnectionHandler({"default": {  # a handler of its own: not the suite's database
        "ENGINE": "agui_project.sqlite3", "NAME": str(path),
        "OPTIONS": {"init_command": "PRAGMA journal_mode=WAL; PRAGMA busy_timeout=5000;",
                    "transaction_mode": "IMMEDIATE"}}})
    with django_db_blocker.unblock():  # the suite's own database stays out of reach
        yield h
    discard()


def in_thread(fn):
    """fn() on a new thread (Django's connections are per thread, as a request's are under ASGI)."""
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("value", fn()))
    t.start()
    t.join()
    return out["value"]


def opened_and_closed(handler, before_close=None):
    def go():
        w = handler["default"]
        with w.cursor() as c:
            c.execute("SELECT 1")
        raw = w.connection
        if before_close:
            before_close(w)
        w.close()
        return raw
    return in_thread(go)


def is_closed(raw):
    try:
        raw.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        return True
    return False


def test_the_next_thread_gets_the_connection_the_last_one_closed_with_its_pragmas(handler):
    first = opened_and_closed(handler)
    assert not is_closed(first)

    def second():
        w = handler["default"]
        with w.cursor() as c:
            c.execute("PRAGMA foreign_keys")
            fks = c.fetchone()[0]
            c.execute("PRAGMA journal_mode")
            journal = c.fetchone()[0]
        raw, autocommit = w.connection, w.get_autocommit()
        w.close()
        return raw, fks, journal, autocommit

    raw, fks, journal, autocommit = in_thread(second)
    assert raw is first
    assert (fks, journal, autocommit) == (1, "wal", True)


def test_a_connection_closed_in_a_transaction_or_after_an_error_is_not_kept(handler):
    def in_transaction(w):
        with w.cursor() as c:
            c.execute("CREATE TABLE t (x)")
        w.set_autocommit(False)
        with w.cursor() as c:
            c.execute("INSERT INTO t VALUES (1)")

    left_open = opened_and_closed(handler, in_transaction)
    assert is_closed(left_open)

    def errored(w):
        w.errors_occurred = True

    assert is_closed(opened_and_closed(handler, errored))

    def rows():  # the insert nobody committed is not there for the next one
        w = handler["default"]
        with w.cursor() as c:
            c.execute("SELECT count(*) FROM t")
            n = c.fetchone()[0]
        w.close()
        return n

    assert in_thread(rows) == 0


def test_the_stack_is_bounded(handler):
    def three_at_once():
        barrier, raws = threading.Barrier(4, timeout=30), []  # three threads and this one

        def one():
            w = handler["default"]
            w.ensure_connection()
            raws.append(w.connection)
            barrier.wait()  # all three open at the same time
            barrier.wait()
            w.close()

        threads = [threading.Thread(target=one) for _ in range(3)]
        for t in threads:
            t.start()
        barrier.wait()
        barrier.wait()
        for t in threads:
            t.join()
        return raws

    raws = three_at_once()
    assert sorted(is_closed(r) for r in raws) == [False, False, True]  # AGUI_DB_POOL_SIZE = 2


def test_a_size_of_zero_closes_them(handler, settings):
    settings.AGUI_DB_POOL_SIZE = 0
    assert is_closed(opened_and_closed(handler))


def _child(handler, parent_ids, out):
    w = handler["default"]
    w.ensure_connection()
    out.put(id(w.connection) in parent_ids)
    w.close()


def test_a_forked_process_opens_its_own(handler):
    kept = opened_and_closed(handler)
    ctx = multiprocessing.get_context("fork")  # as Celery's prefork children are made
    out = ctx.Queue()
    child = ctx.Process(target=_child, args=(handler, {id(kept)}, out))
    child.start()
    reused_parents = out.get(timeout=30)
    child.join(timeout=30)
    assert child.exitcode == 0
    assert reused_parents is False
    assert opened_and_closed(handler) is kept  # and the parent still has its own


def test_a_destroyed_test_database_leaves_no_wal_files(handler, tmp_path):
    """Its kept connections are closed first, so the -wal and -shm files go with it (they stayed
    behind in var/, 4 MB a test run)."""
    def write(w):
        with w.cursor() as c:
            c.execute("CREATE TABLE t (x)")
            c.execute("INSERT INTO t VALUES (1)")

    kept = opened_and_closed(handler, write)
    path = tmp_path / "pool.sqlite3"
    assert not is_closed(kept) and (tmp_path / "pool.sqlite3-wal").exists()
    handler["default"].creation._destroy_test_db(str(path), verbosity=0)
    assert is_closed(kept)
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.django_db
def test_the_default_sqlite_connection_cuts_its_wal_back_after_a_checkpoint():
    """The WAL file kept the size of its largest burst for good (350 MB after a bulk delete)."""
    from django.db import connection

    if connection.vendor != "sqlite":
        pytest.skip("SQLite's own")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_size_limit")
        assert cursor.fetchone()[0] == 64 * 1024 * 1024
