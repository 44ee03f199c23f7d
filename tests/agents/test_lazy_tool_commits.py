"""A tool whose every effect is rows of this database (Tool.in_database): on PostgreSQL its call's
claim and its own transaction commit without waiting for the WAL's flush, and the commit of its
result, which waits, makes them durable (WAL is flushed in order) before TOOL_CALL_RESULT leaves.
Any other tool's claim waits for the flush, as it precedes what the tool does outside."""

import psycopg
import pytest
from django.db import connection, transaction

from agents.agui import endpoint
from agents.models import ToolCall
from agents.registry import get_agent
from agents.runtime import events, runner
from agui_project import queries
from tests.agents.test_request_queries import agui_request, paused_on_the_requester
from tests.pg_trace import sent, traced

LAZY_BEGIN = ["BEGIN", "SET LOCAL synchronous_commit TO OFF"]


def lazy(trip):
    return any("synchronous_commit" in statement for statement in trip)


def other_connection():
    """A connection of its own, to see what the worker's has committed."""
    s = connection.settings_dict
    return psycopg.connect(dbname=s["NAME"], host=s["HOST"] or None, port=s["PORT"] or None,
                           user=s["USER"] or None, password=s["PASSWORD"] or None, autocommit=True)


def continued(demo, fake_llm, monkeypatch):
    """The worker's continuation of an approved cancel_subscription: its round trips (statements),
    and the call's status as another connection saw it when TOOL_CALL_RESULT was emitted."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's synchronous_commit")
    thread, _paused, req = paused_on_the_requester(demo, fake_llm)
    plan = endpoint.prepare(agui_request(demo["alice"], thread.pk, resume=[
        {"interruptId": req.pk, "status": "resolved", "payload": {"approved": True}}]), "banking")
    fake_llm.push({"text": "Done: it is cancelled."})
    seen, emit = [], events.EventStream.emit

    def emitted(self, event):
        if event.type == "TOOL_CALL_RESULT":
            with other_connection() as other:
                seen.append(other.execute("SELECT status FROM agents_toolcall WHERE id = %s", ["call_cs"]).fetchone()[0])
        return emit(self, event)

    monkeypatch.setattr(events.EventStream, "emit", emitted)
    connection.ensure_connection()  # a statement prepared earlier would go by its name alone
    monkeypatch.setattr(connection.connection, "prepare_threshold", None)
    with traced() as trips:
        assert runner.run_agent(plan.run_id)
    return [sent(trip) for trip in trips if sent(trip)], seen


@pytest.mark.django_db(transaction=True)
def test_an_in_database_tools_claim_and_transaction_commit_lazily_and_its_result_waits(demo, fake_llm, monkeypatch):
    assert get_agent("banking").tool("cancel_subscription").in_database
    trips, seen = continued(demo, fake_llm, monkeypatch)
    claim = next(i for i, trip in enumerate(trips) if any('"claimed_at" = $' in s for s in trip))
    assert trips[claim][0].startswith("SELECT set_config('synchronous_commit', 'off', true)") and len(trips[claim]) == 2
    own = next(i for i, trip in enumerate(trips) if any("catalog_subscription" in s and "FOR UPDATE" in s for s in trip))
    assert own > claim and trips[own][:2] == LAZY_BEGIN
    stored = next(i for i, trip in enumerate(trips) if any('"result" = $' in s for s in trip))
    assert stored > own and trips[stored][0] == "BEGIN" and not any(lazy(trip) for trip in trips[stored:])
    assert seen == [ToolCall.Status.SUCCEEDED]  # the result was committed (waiting for the flush) first


@pytest.mark.django_db(transaction=True)
def test_another_tools_claim_and_transaction_wait_for_the_flush(demo, fake_llm, monkeypatch):
    monkeypatch.setattr(get_agent("banking").tool("cancel_subscription"), "in_database", False)
    trips, seen = continued(demo, fake_llm, monkeypatch)
    claim = next(i for i, trip in enumerate(trips) if any('"claimed_at" = $' in s for s in trip))
    assert claim > 0 and not any(lazy(trip) for trip in trips[claim:]) and seen == [ToolCall.Status.SUCCEEDED]


@pytest.mark.django_db(transaction=True)
def test_lazy_commits_holds_for_its_block_alone(db):
    """A transaction opened inside the block says it with its BEGIN; one opened after it does not,
    even when the block ended with an error; inside a transaction already open nothing changes."""
    if connection.vendor != "postgresql":
        with queries.lazy_commits():  # SQLite: nothing to say
            assert not getattr(connection, "lazy_commits", False)
        return
    with traced() as trips:
        with pytest.raises(RuntimeError), queries.lazy_commits():
            with transaction.atomic():
                connection.cursor().execute("SELECT 1 + %s", [0])
            raise RuntimeError("the block ends with an error")
        with transaction.atomic():
            connection.cursor().execute("SELECT 2 + %s", [0])
        with transaction.atomic():
            with queries.lazy_commits():
                connection.cursor().execute("SELECT 3 + %s", [0])
    statements = [sent(trip) for trip in trips if sent(trip)]
    assert [s for s in statements if "SELECT 1 + $1" in s] == [LAZY_BEGIN + ["SELECT 1 + $1"]]
    assert [s for s in statements if "SELECT 2 + $1" in s] == [["BEGIN", "SELECT 2 + $1"]]
    assert [s for s in statements if "SELECT 3 + $1" in s] == [["BEGIN", "SELECT 3 + $1"]]
    assert not connection.lazy_commits
