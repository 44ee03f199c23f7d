"""agui_project.queries: one(), a row by its key without the ORDER BY that first() adds; Prepared,
a read compiled once."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from agents.models import Thread
from agents.services import create_thread
from agui_project.queries import Prepared, one

pytestmark = pytest.mark.django_db


def test_one_reads_the_row_or_none_without_ordering(demo):
    thread = create_thread(demo["alice"], "banking")
    with CaptureQueriesContext(connection) as sql:
        assert one(Thread.objects.filter(pk=thread.pk)) == thread
        assert one(Thread.objects.filter(pk="no-such-thread")) is None
        assert one(Thread.objects.filter(pk=thread.pk).values_list("agent", flat=True)) == "banking"
    assert len(sql.captured_queries) == 3
    assert not any("ORDER BY" in q["sql"] for q in sql.captured_queries)
    assert all("LIMIT 1" in q["sql"] for q in sql.captured_queries)


# --- Prepared: a read compiled once --------------------------------------------------------------

def _fields(obj):
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


def test_prepared_rows_are_the_orms_with_their_related_rows(demo):
    """The same instances QuerySet iteration makes: every field converted by the backend (aware
    datetimes, JSON), the select_related rows cached, a missing reverse one-to-one cached as
    missing (no query to find out), in one statement each time."""
    from rest_framework.authtoken.models import Token

    from people.models import Profile

    Profile.objects.update_or_create(user=demo["finn"], defaults={"language": "fr"})
    Profile.objects.filter(user=demo["alice"]).delete()
    tokens = {name: Token.objects.get_or_create(user=demo[name])[0].key for name in ("alice", "finn")}
    read = Prepared(Token, lambda key: Token.objects.select_related("user", "user__profile").filter(key=key))
    for name, key in tokens.items():
        orm = Token.objects.select_related("user", "user__profile").get(key=key)
        with CaptureQueriesContext(connection) as sql:
            got = read.one(key)
            assert _fields(got) == _fields(orm) and _fields(got.user) == _fields(orm.user)
            assert got.created.tzinfo is not None and got.user.date_joined.tzinfo is not None
            if name == "finn":
                assert got.user.profile.language == "fr"
            else:
                with pytest.raises(Profile.DoesNotExist):
                    _ = got.user.profile
        assert len(sql.captured_queries) == 1, sql.captured_queries
    assert read.one("no-such-key") is None
    # the same compiled SQL, another value: not a cached row
    assert read.one(tokens["finn"]).user.username == "finn"


def test_prepared_json_fields_and_several_values(demo):
    thread = create_thread(demo["alice"], "banking")
    Thread.objects.filter(pk=thread.pk).update(title="ünïcode 'quoted' %s")
    read = Prepared("agents.Thread", lambda pk, agent: Thread.objects.filter(pk=pk, agent=agent), arity=2)
    got = read.one(thread.pk, "banking")
    assert _fields(got) == _fields(Thread.objects.get(pk=thread.pk)) and got.title == "ünïcode 'quoted' %s"
    assert read.one(thread.pk, "ops") is None
    assert read.all(thread.pk, "banking") == [got]
    with pytest.raises(TypeError):
        read.one(thread.pk)


def test_prepared_values_are_the_tuples_values_list_gives(demo):
    """A values_list() read: the same tuples, in the same order, with the backend's converters
    (JSON, aware datetimes); constants of the query (an IN list) stay in the SQL."""
    from agents.models import Message
    from agents.services import add_message

    thread, other = create_thread(demo["alice"], "banking"), create_thread(demo["alice"], "banking")
    add_message(thread, "user", "first")
    add_message(thread, "assistant", "", tool_calls=[{"id": "c1", "type": "function",
                                                      "function": {"name": "f", "arguments": "{}"}}])
    add_message(thread, "tool", "ünïcode %s result", tool_call_id="c1")
    add_message(other, "user", "someone else's thread")

    def orm(pk):
        return Message.objects.filter(thread_id=pk, role__in=("user", "tool")).values_list(
            "id", "role", "content", "tool_call_id", "tool_calls", "created_at")

    read = Prepared(Message, orm)
    got = read.all(thread.pk)
    assert got == list(orm(thread.pk)) and [g[1] for g in got] == ["user", "tool"]
    assert got[0][5].tzinfo is not None and isinstance(got[0], tuple)
    assert read.all(other.pk) == list(orm(other.pk)) and len(read.all(other.pk)) == 1
    assert read.all("no-such-thread") == []
    assert read.one(thread.pk) == got[0]
    for refused in (lambda pk: Message.objects.filter(thread_id=pk).values_list("id", flat=True),
                    lambda pk: Message.objects.filter(thread_id=pk).values_list("id", named=True),
                    lambda pk: Message.objects.filter(thread_id=pk).values("id")):
        with pytest.raises(ValueError):
            Prepared(Message, refused).all(thread.pk)


@pytest.mark.django_db(transaction=True)  # outside the test's own transaction
def test_prepared_refuses_what_it_cannot_keep(demo):
    """A value the field transforms does not reach the SQL as sent: refused when compiled, instead
    of running the stand-in. A locking read outside a transaction: refused, as the ORM refuses it."""
    from django.contrib.auth.models import User

    with pytest.raises(ValueError):
        Prepared(User, lambda pk: User.objects.filter(pk=pk)).one("1")  # an integer key: the text becomes int
    locked = Prepared(Thread, lambda pk: Thread.objects.select_for_update().filter(pk=pk))
    thread = create_thread(demo["alice"], "banking")
    with transaction.atomic():
        assert locked.one(thread.pk) == thread
    with pytest.raises(RuntimeError):
        locked.one(thread.pk)


# --- prefetched: rows handed to a relation as prefetch_related() would ----------------------------

def test_prefetched_rows_are_what_the_relation_gives_without_a_query(demo):
    """The rows of a Prepared read, handed to a request's decisions, are what `.all()` yields (no
    query, the users with them), as after prefetch_related; a further filter on the relation
    still reads only that request's rows."""
    from approvals import selectors
    from approvals.models import ApprovalRequest, Decision
    from tests.helpers import transfer_request

    first, other = transfer_request(demo["alice"]), transfer_request(demo["alice"])
    for user in ("finn", "bob"):
        Decision.objects.create(request=first, user=demo[user], decision="approve", arguments={}, arguments_hash="x")
    Decision.objects.create(request=other, user=demo["finn"], decision="reject", feedback="no")
    approval = ApprovalRequest.objects.get(pk=first.pk)
    assert selectors.with_decisions(approval=approval) is approval
    orm = list(ApprovalRequest.objects.prefetch_related("decisions__user").get(pk=first.pk).decisions.all())
    with CaptureQueriesContext(connection) as sql:
        got = list(approval.decisions.all())
        assert [(d.pk, d.user.username) for d in got] == [(d.pk, d.user.username) for d in orm]
        assert [d.user.username for d in got] == ["finn", "bob"]  # in the order they were made
    assert sql.captured_queries == []
    assert [d.decision for d in approval.decisions.filter(decision="reject")] == []  # not the other request's


def test_prepared_integer_keys(demo):
    """Integer stand-ins for integer keys (a user's membership of a group): the same rows as the
    ORM's, a key sent as text taken as the ORM takes it, a constant of the query left alone."""
    from django.contrib.auth.models import Group, User

    finance = Group.objects.get(name="finance")
    member = Prepared("auth.User_groups", lambda user, group: User.groups.through.objects.filter(
        user_id=user, group_id=group, group__name__startswith="fin"), arity=2, types=(int, int))
    rows = User.groups.through.objects.filter(group=finance)
    assert rows.exists()
    for row in rows:
        assert member.one(row.user_id, finance.pk) == row and member.one(str(row.user_id), finance.pk) == row
    assert member.one(demo["alice"].pk, finance.pk) is None  # not in finance
    assert member.one(demo["finn"].pk, finance.pk + 10_000) is None
    with pytest.raises(ValueError):
        Prepared(Thread, lambda pk: Thread.objects.filter(pk=pk), types=(bytes,))


# --- PreparedUpdate: an UPDATE compiled once ------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_prepared_update_writes_what_the_orms_update_writes(demo):
    """Each value prepared for its column as QuerySet.update prepares it (JSON, an aware datetime,
    None, text with quotes), an expression compiled in, the filter's constants kept; the number of
    rows changed, 0 when the filter finds none; one statement each time."""
    from django.db.models import F
    from django.utils import timezone

    from agents.models import ToolCall
    from agui_project.queries import PreparedUpdate
    from tests.helpers import paused_transfer

    _run, _req = paused_transfer(demo["alice"], "call-a")
    paused_transfer(demo["alice"], "call-b")
    move = PreparedUpdate(ToolCall, lambda pk, thread: ToolCall.objects.filter(
        pk=pk, thread_id=thread, status__in=["awaiting_approval", "approved"]), arity=2)
    call = ToolCall.objects.get(pk="call-a")
    when = timezone.now()
    with CaptureQueriesContext(connection) as sql:
        changed = move.update("call-a", call.thread_id, status="approved", final_arguments={"amount": 5, "ü": [1, None]},
                              feedback="it's 'fine' %s", claimed_at=when, resume=None, attempts=F("attempts") + 2)
    assert changed == 1 and len(sql.captured_queries) == 1
    after = ToolCall.objects.get(pk="call-a")
    assert (after.status, after.final_arguments, after.feedback, after.claimed_at, after.resume, after.attempts) == (
        "approved", {"amount": 5, "ü": [1, None]}, "it's 'fine' %s", when, None, call.attempts + 2)
    assert ToolCall.objects.get(pk="call-b").status == "awaiting_approval"  # only the row it names
    assert move.update("call-a", "another-thread", status="executing") == 0
    assert move.update("call-b", ToolCall.objects.get(pk="call-b").thread_id, status="executing",
                       final_arguments=[1], feedback="", claimed_at=None, resume={"k": "v"},
                       attempts=F("attempts") + 2) == 1  # the same statement, other values
    assert ToolCall.objects.get(pk="call-b").resume == {"k": "v"} and len(move._compiled) == 2  # two shapes
    ToolCall.objects.filter(pk="call-a").update(status="succeeded")
    assert move.update("call-a", call.thread_id, status="executing") == 0  # not in a status it leaves
    # a relation set to a model instance is written by its key, as the ORM writes it; a plain column refuses one
    by_pk = PreparedUpdate(ToolCall, lambda pk: ToolCall.objects.filter(pk=pk))
    other_run = ToolCall.objects.get(pk="call-b").run
    assert by_pk.update("call-a", run=other_run) == 1 and ToolCall.objects.get(pk="call-a").run_id == other_run.pk
    with pytest.raises(TypeError):
        by_pk.update("call-a", feedback=other_run)


# --- PreparedInsert: create() compiled once ------------------------------------------------------

def _stored(obj):
    """The row as the database holds it, read back through the ORM."""
    return _fields(type(obj).objects.get(pk=obj.pk))


def test_prepared_insert_writes_the_row_create_writes(demo):
    """Each model the hot paths add to: an auto key given back (Decision, AuditEvent) or a key of
    its own default (Run, Message); relations, JSON, choices and the auto_now_add time as create()
    stores them; the instance saved (not adding, its database), equal to its row."""
    from agents.models import Message, Run, Thread, ThreadIdClaim, ToolCall
    from agui_project.queries import PreparedInsert
    from approvals.models import ApprovalRequest, AuditEvent, Decision
    from tests.helpers import transfer_request

    req = transfer_request(demo["alice"])
    thread = create_thread(demo["alice"], "banking")

    def paused():  # a continuation's parent: each has one continuation at most
        return Run.objects.create(thread=thread, status=Run.Status.INTERRUPTED, forwarded_props={"k": [1, "ü"]})

    seqs = iter(range(7, 100))
    parent = paused()
    assistant = Message.objects.create(thread=thread, run=parent, seq=1, role="assistant", content="")
    cases = [
        (AuditEvent, lambda: dict(action="decided", request=req, actor=demo["finn"], object_ref=str(req.pk),
                                  tool_name="t", before={"status": "pending"}, after=None)),
        (Decision, lambda: dict(request=req, user=demo["finn"], decision="approve", arguments={"amount": 5},
                                arguments_hash="abc", feedback="fine")),
        (Run, lambda: dict(thread_id=thread.pk, parent_run=paused(), forwarded_props={"k": [1, "ü"]},
                           client_tools=[{"name": "x"}], context=[])),
        (Message, lambda: dict(thread=thread, seq=next(seqs), role="tool", content="done", tool_calls=None,
                               tool_call_id="call-1")),
        (Thread, lambda: dict(id=f"t-{next(seqs)}", owner=demo["alice"], agent="banking", title="Hi")),
        (ThreadIdClaim, lambda: dict(id=f"c-{next(seqs)}", owner=demo["alice"])),
        (ToolCall, lambda: dict(id=f"call-{next(seqs)}", thread=thread, run=parent, name="transfer_money",
                                message=assistant, raw_arguments='{"amount": 5}')),
        (ApprovalRequest, lambda: dict(tool_name="transfer_money", arguments={"amount": 5, "to": "ü"},
                                       requester=demo["alice"], description="Send 5", risk="high",
                                       thread_ref=thread.pk, tool_call_ref="call-x")),
    ]
    for model, fields in cases:
        made, orm = PreparedInsert(model).create(**fields()), model.objects.create(**fields())
        assert not made._state.adding and made._state.db == "default" and made.pk is not None
        assert _fields(made) == _stored(made)
        skip = {model._meta.pk.attname, "created_at", "updated_at", "claimed_at", "parent_run_id", "seq", "run_id"}
        assert {k: v for k, v in _stored(made).items() if k not in skip} == \
            {k: v for k, v in _stored(orm).items() if k not in skip}
        assert getattr(made, "created_at", None) or made.claimed_at


def test_prepared_insert_compiles_once_and_runs_one_statement(demo):
    from agui_project.queries import PreparedInsert
    from approvals.models import AuditEvent

    rows = PreparedInsert(AuditEvent)
    rows.create(action="decided", object_ref="1", tool_name="t")
    with CaptureQueriesContext(connection) as sql:
        made = rows.create(action="expired", object_ref="2", tool_name="t")
    assert [q["sql"].split(" ", 1)[0] for q in sql.captured_queries] == ["INSERT"]
    assert AuditEvent.objects.get(pk=made.pk).action == "expired"


def test_prepared_insert_leaves_to_create_what_it_does_not_keep(demo):
    """A model with a post_save receiver gets create() (its receiver is called); an expression as
    a value is refused, not written."""
    from django.db.models import F
    from django.db.models.signals import post_save

    from agui_project.queries import PreparedInsert
    from approvals.models import AuditEvent

    heard = []

    def receiver(sender, instance, created, **kwargs):
        heard.append((instance.object_ref, created))

    post_save.connect(receiver, sender=AuditEvent)
    try:
        PreparedInsert(AuditEvent).create(action="decided", object_ref="heard", tool_name="t")
    finally:
        post_save.disconnect(receiver, sender=AuditEvent)
    assert heard == [("heard", True)]
    with pytest.raises(TypeError), transaction.atomic():
        PreparedInsert(AuditEvent).create(action="decided", object_ref=F("tool_name"), tool_name="t")
    assert not AuditEvent.objects.filter(tool_name="t", action="decided").exclude(object_ref="heard").exists()
