"""An AG-UI resume's transaction (the answers, the calls' fates, the continuation) commits on
PostgreSQL without waiting for the WAL's flush; the continuation is handed to a worker, then the
request waits for the flush before anything else leaves (queries.flush_after_hand_over): the
worker's first steps overlap the flush, and what the client and the inbox are told is durable."""

import psycopg
import pytest
from django.db import connection, transaction
from django.db.backends import utils

from agents import dispatch, services
from agents.agui import endpoint
from agents.models import Thread
from agui_project import queries
from approvals import notify
from tests.agents.test_request_queries import agui_request, paused_on_the_requester
from tests.pg_trace import sent, traced


def other_connection():
    s = connection.settings_dict
    return psycopg.connect(dbname=s["NAME"], host=s["HOST"] or None, port=s["PORT"] or None,
                           user=s["USER"] or None, password=s["PASSWORD"] or None, autocommit=True)


def wal_position(kind):
    """pg_current_wal_insert_lsn() (written, maybe not on disk) or pg_current_wal_flush_lsn(), read
    from another connection, as a number."""
    with other_connection() as other:
        return other.execute(f"SELECT pg_current_wal_{kind}_lsn() - '0/0'::pg_lsn").fetchone()[0]


@pytest.fixture
def postgresql(monkeypatch):
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's synchronous_commit")
    connection.ensure_connection()  # statements by their text, not by a name prepared in an earlier test
    monkeypatch.setattr(connection.connection, "prepare_threshold", None)
    monkeypatch.setattr(queries, "_flush_refused", set())


def spy_flushes(monkeypatch, order):
    execute = utils.CursorWrapper.execute

    def spied(self, sql, params=None):
        if "pg_logical_emit_message" in sql or sql.startswith("UPDATE") and ' SET "id" = "id"' in sql:
            order.append("flush")
        return execute(self, sql, params)

    monkeypatch.setattr(utils.CursorWrapper, "execute", spied)


@pytest.mark.django_db(transaction=True)
def test_a_resume_hands_its_continuation_on_before_it_waits_for_the_flush(demo, fake_llm, monkeypatch, postgresql):
    thread, paused, req = paused_on_the_requester(demo, fake_llm)
    order, written = [], []
    enqueue, notice = dispatch.enqueue_run, notify.inbox_notice

    def handed_on(run_id):
        order.append("handed on")
        written.append(wal_position("insert"))  # the resume's commit record is in the WAL by now
        return enqueue(run_id)

    monkeypatch.setattr(dispatch, "enqueue_run", handed_on)
    monkeypatch.setattr(notify, "inbox_notice", lambda kind, r: (order.append("notice"), notice(kind, r)))
    spy_flushes(monkeypatch, order)
    request = agui_request(demo["alice"], thread.pk, resume=[
        {"interruptId": req.pk, "status": "resolved", "payload": {"approved": True}}])
    with traced() as trips:
        plan = endpoint.prepare(request, "banking")
    assert plan.error is None
    assert order == ["handed on", "flush", "notice"]
    trips = [sent(trip) for trip in trips if sent(trip)]
    committed = next(trip for trip in trips if "COMMIT" in trip)
    assert committed[-2:] == ["SET LOCAL synchronous_commit TO OFF", "COMMIT"]
    # when prepare() returns (the client's first frames follow), the commit is on disk
    assert wal_position("flush") >= written[0]


@pytest.mark.django_db(transaction=True)
def test_a_decision_over_the_api_still_waits_for_its_flush_before_the_wake_up(demo, api, monkeypatch, postgresql):
    from tests.helpers import paused_transfer

    run, req = paused_transfer(demo["alice"], "call-flush")
    woken = []
    monkeypatch.setattr("agents.tasks.continue_decided.delay", woken.append)
    with traced() as trips:
        assert api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve"},
                                format="json").status_code == 200
    statements = [s for trip in trips for s in sent(trip)]
    assert woken == [req.pk] and "COMMIT" in statements
    assert not any("synchronous_commit" in s or "pg_logical_emit_message" in s for s in statements)


@pytest.mark.django_db(transaction=True)
def test_where_the_role_may_not_call_the_function_the_row_is_rewritten_to_wait(demo, monkeypatch, postgresql):
    """A DBA may revoke pg_logical_emit_message: the wait is then an UPDATE of the transaction's own
    row (a WAL record and a transaction id, so its commit waits), from then on at once."""
    monkeypatch.setattr(queries, "_FLUSH", "SELECT agui_no_such_function()")
    thread = services.create_thread(demo["alice"], "banking")
    for attempt in range(2):
        written = []
        with traced() as trips:
            with transaction.atomic():
                Thread.objects.filter(pk=thread.pk).update(title=f"take {attempt}")
                transaction.on_commit(lambda into=written: into.append(wal_position("insert")))  # the hand-over's place
                queries.flush_after_hand_over(Thread, thread.pk)
                queries.flush_after_hand_over(Thread, thread.pk)  # once per transaction
        trips = [sent(trip) for trip in trips if sent(trip)]
        committed = next(i for i, trip in enumerate(trips) if "COMMIT" in trip)
        assert trips[committed][-2:] == ["SET LOCAL synchronous_commit TO OFF", "COMMIT"], trips
        after = trips[committed + 1:]
        rewrite = ['UPDATE "agents_thread" SET "id" = "id" WHERE "id" = $1']
        assert after == ([["SELECT agui_no_such_function()"], rewrite] if attempt == 0 else [rewrite]), after
        assert wal_position("flush") >= written[0]
    assert Thread.objects.get(pk=thread.pk).title == "take 1"
    assert queries._flush_refused == {"default"}
