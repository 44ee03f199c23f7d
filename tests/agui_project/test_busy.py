"""A database that cannot be reached, or whose connection broke, is answered as a busy one: 503
with Retry-After (agui_project/busy.py). It was a 500 "internal error" (pages: the error page)
after the pool's 10 s wait, though the request can simply be tried again once the database is back."""

import psycopg
import pytest
from django.db import OperationalError, connections
from psycopg_pool import ConnectionPool, PoolTimeout

from agui_project import busy
from scripts.devstack import free_port

pytestmark = pytest.mark.django_db


def as_django(error):
    """`error` as Django's backend raises it (DatabaseErrorWrapper: its class, the cause kept)."""
    wrapped = OperationalError(*error.args)
    wrapped.__cause__ = error
    return wrapped


@pytest.fixture
def nobody_listens():
    return free_port()


@pytest.fixture
def refused(nobody_listens):
    """psycopg's own error for a server nobody answers at (no SQLSTATE: the server never spoke)."""
    with pytest.raises(psycopg.OperationalError) as caught:
        psycopg.connect(host="127.0.0.1", port=nobody_listens, connect_timeout=2)
    return as_django(caught.value)


@pytest.fixture
def pool_gave_up(nobody_listens):
    """The pool's error once its wait for a connection ran out (Django's `timeout`, 10 s in settings)."""
    pool = ConnectionPool(f"host=127.0.0.1 port={nobody_listens} connect_timeout=2", min_size=1, timeout=0.2,
                          open=True)
    try:
        with pytest.raises(PoolTimeout) as caught:
            pool.getconn()
    finally:
        pool.close()
    return as_django(caught.value)


def test_an_unreachable_or_lost_server_is_busy_and_other_errors_are_not(refused, pool_gave_up):
    assert busy.is_busy(refused) and busy.is_busy(pool_gave_up)
    missing = as_django(psycopg.errors.UndefinedTable("relation does not exist"))  # the server's answer: a bug
    assert not busy.is_busy(missing)
    assert not busy.is_busy(OperationalError("no such table: agents_thread"))


@pytest.fixture
def database_away(monkeypatch, pool_gave_up):
    """From here on every statement meets the database gone, as a request does while it is."""

    def away(self):
        raise pool_gave_up

    monkeypatch.setattr(type(connections["default"]), "ensure_connection", away)


def test_pages_the_api_and_agui_answer_503_while_the_database_is_away(api, client, demo, request):
    alice = api("alice")  # her token and rita's session are written before the database goes
    client.force_login(demo["rita"])
    client.raise_request_exception = False  # a page's session is read by a middleware, before any view
    request.getfixturevalue("database_away")
    resp = alice.get("/api/threads/")
    assert resp.status_code == 503 and resp["Retry-After"] == "1", resp.content
    assert resp.json()["code"] == "database_busy"
    resp = alice.post("/agui/banking", {"threadId": "t-away", "runId": "r-away", "messages": []}, format="json")
    assert resp.status_code == 503 and resp.json()["code"] == "database_busy"
    resp = client.get("/inbox/")
    assert resp.status_code == 503 and resp["Retry-After"] == "1"
    assert "try again" in resp.content.decode().lower()
