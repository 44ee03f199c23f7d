"""queries.read_ahead: on PostgreSQL several reads by key in one round trip (psycopg's pipeline mode),
each read in the block taking its rows from there once; elsewhere, and for a read under a lock,
nothing is read ahead. The AG-UI POST's checks read their token, thread, run id and held messages so."""

import json
import uuid
from contextlib import contextmanager

import pytest
from django.db import connection, transaction
from django.test import RequestFactory
from django.utils import timezone
from rest_framework.authtoken.models import Token

from agents import selectors, services, transitions
from agents.agui import endpoint, incoming
from agents.models import InputRequest, Run, Thread
from agui_project.auth import header_reads
from agui_project.queries import Prepared, read_ahead
from approvals.models import ApprovalRequest

pytestmark = pytest.mark.django_db

_LOCKED = Prepared(Thread, lambda pk: Thread.objects.select_for_update().filter(pk=pk))
_RUN = Prepared(Run, lambda pk: Run.objects.filter(pk=pk))


@contextmanager
def statements():
    """The SQL of each statement executed, and whether it went in a pipeline (a batch of several)."""
    seen = []

    def record(execute, sql, params, many, context):
        seen.append((sql, getattr(connection.connection, "_pipeline", None) is not None))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield seen


def postgresql_only():
    if connection.vendor != "postgresql":
        pytest.skip("reads go ahead on PostgreSQL only (SQLite reads in-process)")


def test_reads_ahead_go_in_one_pipeline_and_each_read_takes_its_rows_once(demo):
    postgresql_only()
    thread = services.create_thread(demo["alice"], "banking")
    reads = selectors.thread_reads(thread.pk, "no-such-run") + incoming.held_reads(thread.pk)
    with statements() as seen, read_ahead(reads):
        ahead = list(seen)
        assert len(ahead) == 3 and all(piped for _sql, piped in ahead), ahead
        assert selectors.thread_by_id(thread.pk).owner_id == demo["alice"].pk
        assert not selectors.run_exists("no-such-run")
        assert len(seen) == 3  # both answered from what was read ahead: no statement of their own
        Thread.objects.filter(pk=thread.pk).update(title="renamed meanwhile")
        assert selectors.thread_by_id(thread.pk).title == "renamed meanwhile"  # a second read asks again
        assert len(seen) == 5
    assert selectors.thread_by_id(thread.pk).title == "renamed meanwhile"


def test_rows_read_ahead_are_the_rows_read_as_usual(demo):
    postgresql_only()
    thread = services.create_thread(demo["alice"], "banking")
    token = Token.objects.get_or_create(user=demo["alice"])[0]
    services.add_message(thread, "user", "hello")

    class Request:
        META = {"HTTP_AUTHORIZATION": f"Bearer {token.key}"}

    reads = header_reads(Request) + selectors.thread_reads(thread.pk, "r") + incoming.held_reads(thread.pk)
    usual = [read.all(*values) for read, values in reads]
    with read_ahead(reads):
        ahead = [read.all(*values) for read, values in reads]
    for rows, expected in zip(ahead, usual, strict=True):
        assert [_fields(r) for r in rows] == [_fields(r) for r in expected]
    assert ahead[0][0].user.username == "alice"
    assert ahead[-1][0][2] == "hello"


def _fields(row):
    """A row's values: a model instance's fields (not its ORM state), or the tuple itself."""
    return {k: v for k, v in vars(row).items() if k != "_state"} if hasattr(row, "_state") else row


def test_a_read_under_a_lock_is_not_read_ahead_and_the_block_reads_as_usual(demo):
    postgresql_only()
    thread = services.create_thread(demo["alice"], "banking")
    with transaction.atomic(), statements() as seen, read_ahead(selectors.thread_reads(thread.pk, "r") + [
            (_LOCKED, (thread.pk,))]):
        assert seen == []  # nothing went ahead
        assert _LOCKED.one(thread.pk).pk == thread.pk and selectors.thread_by_id(thread.pk).pk == thread.pk
        assert len(seen) == 2


def test_a_resumes_reads_of_what_it_answers_go_ahead_too(demo):
    postgresql_only()
    thread = services.create_thread(demo["alice"], "banking")
    req = ApprovalRequest.objects.create(tool_name="cancel_subscription", arguments={"subscription_id": "sub_1"},
                                         description="Cancel sub_1", requester=demo["alice"],
                                         approver_kind="requester", thread_ref=thread.pk)
    reads = services.resume_reads(thread.pk, [req.pk])
    assert len(reads) == 2  # the approval requests and the questions it may name
    with statements() as seen, read_ahead(reads):
        assert len(seen) == 2 and all(piped for _sql, piped in seen)
        assert [r.pk for r in services._named_or_pending(ApprovalRequest, "thread_ref", thread.pk, [req.pk])] == [
            req.pk]
        assert list(services._named_or_pending(InputRequest, "thread", thread.pk, [req.pk])) == []
        assert len(seen) == 2


def test_an_update_sent_ahead_gives_its_count_once_and_a_read_after_it_sees_its_write(demo):
    postgresql_only()
    thread = services.create_thread(demo["alice"], "banking")
    run = Run.objects.create(thread=thread)
    started = timezone.now()
    with statements() as seen, read_ahead([transitions.claim_ahead(run.pk, started), (_RUN, (run.pk,))]):
        assert len(seen) == 2 and all(piped for _sql, piped in seen), seen
        assert transitions.claim_run(run.pk, started)  # the count sent ahead: 1
        assert _RUN.one(run.pk).status == Run.Status.RUNNING  # read after the claim, in its round trip
        assert len(seen) == 2
        assert not transitions.claim_run(run.pk, started)  # asked again: already running
        assert len(seen) == 3
    run.refresh_from_db()
    assert (run.status, run.started_at) == (Run.Status.RUNNING, started)  # committed with the round trip
    # a second delivery's claim sent ahead finds nothing to claim
    with read_ahead([transitions.claim_ahead(run.pk, timezone.now()), (_RUN, (run.pk,))]):
        assert not transitions.claim_run(run.pk, timezone.now())


def test_an_update_whose_parameters_differ_is_not_taken_from_ahead(demo):
    postgresql_only()
    thread = services.create_thread(demo["alice"], "banking")
    run = Run.objects.create(thread=thread)
    with statements() as seen, read_ahead([transitions.claim_ahead(run.pk, timezone.now()), (_RUN, (run.pk,))]):
        assert not transitions.claim_run(run.pk, timezone.now())  # another time: asked on its own
        assert len(seen) == 3
    assert Run.objects.get(pk=run.pk).status == Run.Status.RUNNING  # the one sent ahead claimed it


def test_elsewhere_nothing_is_read_ahead(demo):
    if connection.vendor == "postgresql":
        pytest.skip("SQLite (or another database): the reads ask as before")
    thread = services.create_thread(demo["alice"], "banking")
    with statements() as seen, read_ahead(selectors.thread_reads(thread.pk, "r")):
        assert seen == []
        assert selectors.thread_by_id(thread.pk).pk == thread.pk and not selectors.run_exists("r")
        assert len(seen) == 2


def test_the_agui_posts_checks_read_token_thread_run_and_history_in_one_round_trip(demo):
    postgresql_only()
    thread = services.create_thread(demo["alice"], "banking")
    services.add_message(thread, "user", "hello")
    token = Token.objects.get_or_create(user=demo["alice"])[0].key
    body = {"threadId": thread.pk, "runId": f"run-{uuid.uuid4()}", "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": [{"id": "m1", "role": "user", "content": "hello"},
                                               {"id": "m2", "role": "user", "content": "and now?"}]}
    request = RequestFactory().post("/agui/banking/", json.dumps(body), content_type="application/json",
                                    HTTP_AUTHORIZATION=f"Bearer {token}")
    with statements() as seen:
        accepted = endpoint.check(request, "banking")
    assert isinstance(accepted, endpoint.Accepted) and accepted.user == demo["alice"]
    assert [m[2] for m in accepted.new_messages] == ["and now?"]
    piped = [sql for sql, in_pipeline in seen if in_pipeline]
    for table in ('"authtoken_token"', '"agents_thread"', '"agents_run"', '"agents_message"'):
        assert sum(f"FROM {table}" in sql for sql in piped) == 1, (table, piped)
    assert len(piped) == 4 and len(seen) == 4, seen  # and nothing read again on its own


def test_a_new_threads_lone_message_reads_no_history_ahead(demo):
    """A lone message most often starts a thread, which holds nothing: its history is not read."""
    postgresql_only()
    token = Token.objects.get_or_create(user=demo["alice"])[0].key
    body = {"threadId": f"t-{uuid.uuid4()}", "runId": f"run-{uuid.uuid4()}", "state": {}, "tools": [],
            "context": [], "forwardedProps": {}, "messages": [{"id": "m1", "role": "user", "content": "Hi"}]}
    request = RequestFactory().post("/agui/banking/", json.dumps(body), content_type="application/json",
                                    HTTP_AUTHORIZATION=f"Bearer {token}")
    with statements() as seen:
        accepted = endpoint.check(request, "banking")
    assert isinstance(accepted, endpoint.Accepted) and accepted.thread is None
    assert len(seen) == 3 and all(piped for _sql, piped in seen), seen
    assert not any('FROM "agents_message"' in sql for sql, _piped in seen)
