"""agui_project/postgresql/cursors.py: statements that go to PostgreSQL in the round trip of the
next one. A transaction's BEGIN goes with its first statement, and transactions keep Django's
meaning (one unit, rolled back whole, nothing sent for an empty one, a new one after commit()
outside autocommit); commit_lazily(), a commit that does not wait for the WAL's flush, is said in
the same round trip; a write whose answer nobody reads (queries.unanswered, PreparedInsert.add)
goes with the next statement or the COMMIT, is seen by a read after it, fails the transaction
there when it fails, and is dropped with a rollback. The round trips are read from libpq's own
trace of the protocol messages."""

import pytest
from django.conf import settings
from django.db import IntegrityError, connection, transaction

from agents.models import Thread
from agui_project.queries import (
    Prepared,
    PreparedInsert,
    PreparedUpdate,
    commit_lazily,
    read_ahead,
    unanswered,
)
from approvals.models import AuditEvent
from tests.pg_trace import sent, traced

pytestmark = [
    pytest.mark.skipif(not settings.DATABASES["default"]["ENGINE"].endswith("postgresql"),
                       reason="the suite runs on SQLite"),
    pytest.mark.django_db(transaction=True),
]

_THREAD = Prepared(Thread, lambda pk: Thread.objects.filter(pk=pk))
_TITLE = PreparedUpdate(Thread, lambda pk: Thread.objects.filter(pk=pk))
_THREAD_ROW = PreparedInsert(Thread)
_AUDIT_ROW = PreparedInsert(AuditEvent)


@pytest.fixture(autouse=True)
def by_their_text(monkeypatch):
    """Statements sent by their text: psycopg prepares one the connection ran twice before (in an
    earlier test, from the pool), in a round trip of its own the counts here would meet."""
    connection.ensure_connection()
    monkeypatch.setattr(connection.connection, "prepare_threshold", None)


def synchronous_commit():
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting(%s)", ["synchronous_commit"])
        return cursor.fetchone()[0]


def test_begin_goes_with_the_first_statement_of_a_transaction(django_user_model):
    alice = django_user_model.objects.create_user("alice-begin")
    with traced() as trips:
        with transaction.atomic():
            Thread.objects.create(id="t-begin-1", owner=alice, agent="banking")
            Thread.objects.filter(pk="t-begin-1").update(title="renamed")
    # BEGIN and the INSERT in one round trip, then the UPDATE, then COMMIT (BEGIN used to be one of its own)
    assert [len(sent(t)) for t in trips] == [2, 1, 1]
    assert sent(trips[0])[0] == "BEGIN" and sent(trips[2]) == ["COMMIT"]
    assert Thread.objects.get(pk="t-begin-1").title == "renamed"
    assert connection.connection.info.transaction_status == 0  # IDLE: nothing left open


def test_a_transaction_is_still_one_unit_rolled_back_whole(django_user_model):
    alice = django_user_model.objects.create_user("alice-begin")
    with pytest.raises(RuntimeError), transaction.atomic():
        Thread.objects.create(id="t-begin-2", owner=alice, agent="banking")
        Thread.objects.create(id="t-begin-3", owner=alice, agent="banking")
        raise RuntimeError("after two writes")
    assert not Thread.objects.filter(pk__in=["t-begin-2", "t-begin-3"]).exists()


def test_an_error_in_the_first_statement_is_djangos_and_rolls_the_transaction_back(django_user_model):
    alice = django_user_model.objects.create_user("alice-begin")
    Thread.objects.create(id="t-begin-4", owner=alice, agent="banking")
    with pytest.raises(IntegrityError), transaction.atomic():
        Thread.objects.create(id="t-begin-4", owner=alice, agent="banking")  # the same key: refused
    # the connection is usable and outside any transaction again; a savepoint's error is contained
    with transaction.atomic():
        with pytest.raises(IntegrityError), transaction.atomic():
            Thread.objects.create(id="t-begin-4", owner=alice, agent="banking")
        Thread.objects.create(id="t-begin-5", owner=alice, agent="banking")
    assert set(Thread.objects.values_list("pk", flat=True)) == {"t-begin-4", "t-begin-5"}


def test_an_empty_transaction_sends_nothing_and_leaves_autocommit_as_it_was(django_user_model):
    alice = django_user_model.objects.create_user("alice-begin")
    with traced() as trips:
        with transaction.atomic():
            pass
        Thread.objects.create(id="t-begin-6", owner=alice, agent="banking")
    assert [len(sent(t)) for t in trips] == [1]  # the INSERT alone, in autocommit
    assert "BEGIN" not in sent(trips[0])
    assert connection.connection.info.transaction_status == 0


def test_outside_autocommit_each_commit_is_followed_by_a_new_transaction(django_user_model):
    alice = django_user_model.objects.create_user("alice-begin")
    transaction.set_autocommit(False)
    try:
        Thread.objects.create(id="t-begin-7", owner=alice, agent="banking")
        assert connection.connection.info.transaction_status == 2  # INTRANS
        transaction.commit()
        Thread.objects.create(id="t-begin-8", owner=alice, agent="banking")
        assert connection.connection.info.transaction_status == 2
        transaction.rollback()
    finally:
        transaction.set_autocommit(True)
    assert list(Thread.objects.filter(pk__startswith="t-begin-").values_list("pk", flat=True)) == ["t-begin-7"]


def test_reads_ahead_in_a_transaction_take_its_begin_in_their_round_trip(django_user_model):
    alice = django_user_model.objects.create_user("alice-begin")
    for pk in ("t-begin-9", "t-begin-10"):
        Thread.objects.create(id=pk, owner=alice, agent="banking")
    with traced() as trips, transaction.atomic():
        with read_ahead([(_THREAD, ("t-begin-9",)), (_THREAD, ("t-begin-10",))]):
            first, second = _THREAD.one("t-begin-9"), _THREAD.one("t-begin-10")
    assert (first.pk, second.pk) == ("t-begin-9", "t-begin-10")
    assert [len(sent(t)) for t in trips] == [3, 1]  # BEGIN and both reads; COMMIT
    assert sent(trips[0])[0] == "BEGIN"


def test_a_lazy_commit_is_said_with_begin_and_holds_for_that_transaction_alone(django_user_model):
    alice = django_user_model.objects.create_user("alice-begin")
    with traced() as trips, transaction.atomic():
        commit_lazily()
        Thread.objects.create(id="t-begin-11", owner=alice, agent="banking")
        inside = synchronous_commit()
    assert inside == "off" and synchronous_commit() == "on"
    assert sent(trips[0])[:2] == ["BEGIN", "SET LOCAL synchronous_commit TO OFF"] and len(sent(trips[0])) == 3
    assert len(trips) == 3  # BEGIN, SET LOCAL and the INSERT; the setting read; COMMIT
    assert Thread.objects.filter(pk="t-begin-11").exists()
    with transaction.atomic():  # said after the first statement: a round trip of its own, same effect
        Thread.objects.filter(pk="t-begin-11").update(title="lazy")
        commit_lazily()
        assert synchronous_commit() == "off"
    assert synchronous_commit() == "on" and Thread.objects.get(pk="t-begin-11").title == "lazy"
    commit_lazily()  # outside a transaction: nothing to say, nothing sent
    assert synchronous_commit() == "on"


def test_statements_sent_ahead_outside_a_transaction_can_commit_lazily_in_their_round_trip(django_user_model):
    alice = django_user_model.objects.create_user("alice-begin")
    Thread.objects.create(id="t-begin-12", owner=alice, agent="banking")
    with traced() as trips:
        with read_ahead([(_TITLE, ("t-begin-12",), {"title": "claimed"}), (_THREAD, ("t-begin-12",))],
                        lazy_commit=True):
            assert _TITLE.update("t-begin-12", title="claimed") == 1
            assert _THREAD.one("t-begin-12").title == "claimed"
    assert len(trips) == 1 and len(sent(trips[0])) == 3
    assert "set_config('synchronous_commit', 'off', true)" in sent(trips[0])[0]
    assert synchronous_commit() == "on"  # local to that round trip's own transaction
    # one statement alone is sent ahead too when it is to commit lazily
    with traced() as trips, read_ahead([(_TITLE, ("t-begin-12",), {"title": "again"})], lazy_commit=True):
        assert _TITLE.update("t-begin-12", title="again") == 1
    assert [len(sent(t)) for t in trips] == [2]
    assert Thread.objects.get(pk="t-begin-12").title == "again" and synchronous_commit() == "on"


def test_an_unanswered_write_goes_with_the_next_statement_which_sees_it(django_user_model):
    alice = django_user_model.objects.create_user("alice-ahead")
    with traced() as trips, transaction.atomic():
        Thread.objects.create(id="t-ahead-1", owner=alice, agent="banking")
        with unanswered():
            _TITLE.update("t-ahead-1", title="queued")
        seen = _THREAD.one("t-ahead-1").title
    assert seen == "queued"
    assert [len(sent(t)) for t in trips] == [2, 2, 1]  # BEGIN and the INSERT; the UPDATE and the read; COMMIT


def test_writes_queued_last_go_with_the_commit_and_are_committed(django_user_model):
    alice = django_user_model.objects.create_user("alice-ahead")
    with traced() as trips, transaction.atomic():
        assert _THREAD.one("t-ahead-2") is None
        made = _THREAD_ROW.add(id="t-ahead-2", owner=alice, agent="banking")
        audit = _AUDIT_ROW.add(action=AuditEvent.Action.POLICY_CHANGED, object_ref="t-ahead-2")
    assert [len(sent(t)) for t in trips] == [2, 3]  # BEGIN and the read; both INSERTs and COMMIT
    assert sent(trips[1])[-1] == "COMMIT"
    assert made.pk == "t-ahead-2" and audit.pk is None  # the key it was given; none read back
    assert Thread.objects.filter(pk="t-ahead-2").exists()
    assert AuditEvent.objects.filter(object_ref="t-ahead-2").count() == 1


def test_a_queued_write_that_fails_fails_its_transaction_at_the_next_statement(django_user_model):
    alice = django_user_model.objects.create_user("alice-ahead")
    Thread.objects.create(id="t-ahead-3", owner=alice, agent="banking")
    with pytest.raises(IntegrityError), transaction.atomic():
        Thread.objects.create(id="t-ahead-4", owner=alice, agent="banking")
        _THREAD_ROW.add(id="t-ahead-3", owner=alice, agent="banking")  # taken: refused, later
        Thread.objects.count()
    assert not Thread.objects.filter(pk="t-ahead-4").exists()  # the whole transaction rolled back
    with pytest.raises(IntegrityError), transaction.atomic():  # queued last: the COMMIT fails
        Thread.objects.create(id="t-ahead-5", owner=alice, agent="banking")
        _THREAD_ROW.add(id="t-ahead-3", owner=alice, agent="banking")
    assert not Thread.objects.filter(pk="t-ahead-5").exists()
    assert connection.connection.info.transaction_status == 0


def test_a_rollback_drops_what_was_queued_and_a_savepoints_undoes_its_own(django_user_model):
    alice = django_user_model.objects.create_user("alice-ahead")
    with traced() as trips, pytest.raises(RuntimeError), transaction.atomic():
        _THREAD_ROW.add(id="t-ahead-6", owner=alice, agent="banking")
        raise RuntimeError("before anything was sent")
    assert trips == [] and not Thread.objects.filter(pk="t-ahead-6").exists()
    with transaction.atomic():
        Thread.objects.create(id="t-ahead-7", owner=alice, agent="banking")
        with pytest.raises(RuntimeError), transaction.atomic():
            _THREAD_ROW.add(id="t-ahead-8", owner=alice, agent="banking")
            raise RuntimeError("inside the savepoint")
        _THREAD_ROW.add(id="t-ahead-9", owner=alice, agent="banking")
    assert set(Thread.objects.filter(pk__startswith="t-ahead-").values_list("pk", flat=True)) == {
        "t-ahead-7", "t-ahead-9"}


def test_outside_a_transaction_an_unanswered_write_runs_at_once(django_user_model):
    alice = django_user_model.objects.create_user("alice-ahead")
    with traced() as trips:
        _THREAD_ROW.add(id="t-ahead-10", owner=alice, agent="banking")
        with unanswered():
            _TITLE.update("t-ahead-10", title="at once")
    assert [len(sent(t)) for t in trips] == [1, 1]
    assert Thread.objects.get(pk="t-ahead-10").title == "at once"
