"""How many statements one request costs (README "Performance"): ceilings, so that a change that
adds look-ups to the AG-UI POST, a resume or a decision is noticed. No worker runs: the run's task
is published and left in this session's own queue (the resumed run is then run here, in-process)."""

import json
import uuid

import pytest
from django.test import RequestFactory
from django.utils import timezone
from rest_framework.authtoken.models import Token

from agents import services, transitions
from agents.agui import endpoint
from agents.models import Message, Run, ToolCall
from agents.runtime import runner
from approvals.models import ApprovalRequest
from tests.helpers import paused_transfer, run_prompt
from tests.pg_trace import sent, traced


def agui_request(user, thread_id, text="hello", resume=None):
    token, _ = Token.objects.get_or_create(user=user)
    body = {"threadId": thread_id, "runId": f"run-{uuid.uuid4()}", "state": {}, "tools": [], "context": [],
            "messages": [{"id": f"m-{uuid.uuid4()}", "role": "user", "content": text}] if resume is None else []}
    if resume is not None:
        body["resume"] = resume
    return RequestFactory().post("/agui/banking/", data=json.dumps(body), content_type="application/json",
                                 HTTP_AUTHORIZATION=f"Bearer {token.key}")


@pytest.mark.django_db(transaction=True)
def test_a_new_threads_first_post_costs_at_most_13_statements(demo, django_assert_max_num_queries):
    """Was 24: the run id is refused by its primary key, the message counter is saved with the
    title, the thread-id claim needs no savepoint of its own, a new thread has nothing pending to
    look up and its MESSAGES_SNAPSHOT is the messages just stored. 17, then 15: nor does the
    thread's creation inside the POST's transaction (SAVEPOINT / RELEASE). 12: the thread is made
    in its first run's transaction (one BEGIN and COMMIT fewer) and not read again under a lock.
    13: the account's runs of the last hour are counted (AGUI_MAX_RUNS_PER_HOUR, one LIMITed count)."""
    thread_id = f"t-{uuid.uuid4()}"
    request = agui_request(demo["alice"], thread_id, "Hi there")
    with django_assert_max_num_queries(13):
        plan = endpoint.prepare(request, "banking")
    assert plan.error is None and plan.run_id and Run.objects.get(pk=plan.run_id).stream_id
    snapshot = plan.after_start[0]
    stored = Message.objects.get(thread_id=thread_id)
    assert [(m.id, m.content) for m in snapshot.messages] == [(stored.id, "Hi there")] and stored.seq == 1
    assert services.Thread.objects.get(pk=thread_id).title == "Hi there"


@pytest.mark.django_db(transaction=True)
def test_a_taken_run_id_is_still_refused_by_start_run(demo):
    thread = services.create_thread(demo["alice"], "banking")
    taken = services.start_run(thread, demo["alice"], "first")
    Run.objects.filter(pk=taken.pk).update(status=Run.Status.SUCCEEDED)
    with pytest.raises(services.RunConflict) as refused:
        services.start_run(thread, demo["alice"], "again", run_id=taken.pk)
    assert refused.value.code == "run_exists"
    assert list(Message.objects.filter(thread=thread).values_list("content", "seq")) == [("first", 1)]
    services.start_run(thread, demo["alice"], "then", run_id="a-fresh-run-id")
    assert list(Message.objects.filter(thread=thread).values_list("content", "seq")) == [("first", 1), ("then", 2)]


@pytest.mark.django_db(transaction=True)
def test_a_decision_over_the_api_costs_at_most_8_statements_and_its_wake_up_in_a_worker_8(
        demo, api, monkeypatch, django_assert_max_num_queries, django_assert_num_queries):
    """Was 29: the API looks up the row without its decisions, the continuation is announced from
    the row it made, the chat's notice reads the thread's owner with the call. Then 25; webhooks add
    two reads after the commit (the endpoints in force, the request's callback_url): 27. Then 24:
    with one approval required there is no earlier approval to look for nor a quorum to count,
    and the call is not read again under the run's lock (its update is conditional). 23: the
    response reads the decisions joined to their users (one query, not two). 20: the request is
    read once, under its lock, not also through the visible list before and whole again after.
    19: the outside agent's call (the webhooks' callback_url) comes with that locked row. Then the
    wake-up (the call's status, the continuation) became a worker's task: 10 for the request, and
    10 for the task (the decided request read again, then the nine the request used to make). 9:
    where the continuation's events begin is stored by its claim, not by an UPDATE of its own. And
    9 for the request: whether the decider is in the request's groups comes with its locked read.
    8 for the task: whether a call still waits and whether the run was continued, in one statement.
    8 for the request: a one-approval request's only decision is the one just made, not read back."""
    run, req = paused_transfer(demo["alice"], "call-q")
    client = api("finn")
    woken = []
    monkeypatch.setattr("agents.tasks.continue_decided.delay", woken.append)
    with django_assert_max_num_queries(8):
        resp = client.post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve"}, format="json")
    assert resp.status_code == 200 and resp.json()["status"] == "approved"
    assert [d["user"] for d in resp.json()["decisions"]] == ["finn"]
    # the decision as made answers as the stored one reads
    assert resp.json()["decisions"] == client.get(f"/api/approvals/{req.pk}/").json()["decisions"]
    assert woken == [req.pk]
    assert ToolCall.objects.get(pk="call-q").status == ToolCall.Status.AWAITING_APPROVAL  # the worker's to move
    with django_assert_max_num_queries(8):
        ran = services.continue_decided(req.pk)
    continuation = Run.objects.get(parent_run=run)
    assert [r.pk for r in ran] == [continuation.pk]
    assert continuation.status == Run.Status.QUEUED and not continuation.stream_id and ran[0].stream_id
    assert ToolCall.objects.get(pk="call-q").status == ToolCall.Status.APPROVED
    with django_assert_num_queries(1):  # the claim stores it
        assert transitions.claim_run(continuation.pk, timezone.now(), ran[0])
    continuation.refresh_from_db()
    assert continuation.status == Run.Status.RUNNING and continuation.stream_id == ran[0].stream_id


@pytest.mark.django_db(transaction=True)
def test_a_message_on_an_existing_thread_opens_no_transaction_for_an_empty_state(demo, django_assert_max_num_queries):
    """No state sent: nothing to write before the run's own transaction (an empty BEGIN/COMMIT
    took SQLite's write lock on every POST). 17 statements (was 18: what waits for the requester's
    answer is looked up only for an empty resume[], not for every message); 18 with the count of the
    account's runs of the last hour (AGUI_MAX_RUNS_PER_HOUR)."""
    thread_id = f"t-{uuid.uuid4()}"
    first = endpoint.prepare(agui_request(demo["alice"], thread_id, "one"), "banking")
    Run.objects.filter(pk=first.run_id).update(status=Run.Status.SUCCEEDED)
    request = agui_request(demo["alice"], thread_id, "two")
    with django_assert_max_num_queries(18) as captured:
        plan = endpoint.prepare(request, "banking")
    statements = [q["sql"].split()[0] for q in captured.captured_queries]
    assert statements.count("BEGIN") <= 1 and statements.count("COMMIT") <= 1
    assert [m.content for m in plan.after_start[0].messages] == ["one", "two"]


def paused_on_the_requester(demo, fake_llm):
    """A run paused on cancel_subscription, which the requester herself confirms (AG-UI resume)."""
    fake_llm.push({"tool_calls": [{"id": "call_cs", "name": "cancel_subscription",
                                   "arguments": json.dumps({"subscription_id": "sub_123"})}]})
    thread = services.create_thread(demo["alice"], "banking")
    paused = run_prompt(thread, demo["alice"], "Cancel my subscription sub_123")
    assert paused.status == Run.Status.INTERRUPTED
    return thread, paused, ApprovalRequest.objects.get(thread_ref=thread.pk, status=ApprovalRequest.Status.PENDING)


@pytest.mark.django_db(transaction=True)
def test_an_agui_resume_costs_at_most_21_statements_and_its_continuation_27(
        demo, fake_llm, django_assert_max_num_queries):
    """The POST with resume[] was 36: the thread's approvals and questions were read once to see
    whether anything waited (asked now only for an empty resume[]) and again, all of them ever, to
    check the answers (now what the answers name and what is pending); the run id was looked up
    twice after the answers; questions were read back when none was answered; then the decision's
    and the call's savings (the decide API's test). The continuation in the worker was 35: the
    requester is not looked up when nobody edited, the queued text is looked at before its lock
    is taken (an empty BEGIN IMMEDIATE), and the settled call is not read back twice after it ran:
    30. Then 28: each stored message advances the thread's counter with UPDATE ... RETURNING
    instead of an update and a read back. The POST, 29, then 28: what was answered is not read
    back for the response (the decisions return the rows they locked and changed). 26: the run id
    is not looked up again after check() refused a taken one, nor the continuation after the answers
    (this thread announced it). 22: the answers, their calls' fates and the continuation in one
    transaction, without savepoints (a BEGIN, a COMMIT and two savepoints' round trips fewer). 21:
    whether a call of the run still waits and whether it was continued, asked in one statement.
    The continuation, 25: its call claimed in one statement that locks the run (was a transaction
    of four: BEGIN, the run's lock, the claim, COMMIT). 26: the model's answer is stored with the run's
    row locked and only while it is still running (Runner.ours: a worker stuck past its lease and
    woken after recovery took its run over filed a second request for a call, which then ran twice).
    27: the approved call's policy is read again before it runs (Runner.blocked_now: a policy that
    became a deny after the decision blocks it). On PostgreSQL the POST makes one more, after its
    commit and the continuation's hand-over: the wait for the flush (queries.flush_after_hand_over)."""
    from django.db import connection

    thread, paused, req = paused_on_the_requester(demo, fake_llm)
    request = agui_request(demo["alice"], thread.pk, resume=[
        {"interruptId": req.pk, "status": "resolved", "payload": {"approved": True}}])
    with django_assert_max_num_queries(21 + (connection.vendor == "postgresql")) as captured:  # + the flush's wait
        plan = endpoint.prepare(request, "banking")
    statements = [q["sql"].split()[0] for q in captured.captured_queries]
    assert statements.count("BEGIN") == statements.count("COMMIT") == 1 and "SAVEPOINT" not in statements
    assert plan.error is None
    continuation = Run.objects.get(parent_run=paused)
    assert continuation.pk == plan.run_id and continuation.status == Run.Status.QUEUED and continuation.stream_id
    responses = [e for e in plan.after_start if getattr(e, "name", "") == "approval_response"]
    assert [(e.value["approvalId"], e.value["approved"]) for e in responses] == [(req.pk, True)]

    fake_llm.push({"text": "Done: it is cancelled."})
    with django_assert_max_num_queries(27):
        assert runner.run_agent(continuation.pk)
    assert Run.objects.get(pk=continuation.pk).status == Run.Status.SUCCEEDED
    assert ToolCall.objects.get(pk="call_cs").status == ToolCall.Status.SUCCEEDED
    assert list(Message.objects.filter(run=continuation).order_by("seq").values_list("role", "content")) == [
        ("tool", "Subscription sub_123 (Premium) is cancelled."), ("assistant", "Done: it is cancelled.")]


@pytest.mark.django_db(transaction=True)
def test_on_postgresql_a_continuation_claims_and_reads_in_two_round_trips_where_it_took_four(demo, fake_llm):
    """The worker's claim of the continuation and the read of the run it claimed go together, then
    the thread's state and the decided calls (queries.read_ahead): four statements, two round trips."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("statements go together on PostgreSQL only")
    thread, paused, req = paused_on_the_requester(demo, fake_llm)
    plan = endpoint.prepare(agui_request(demo["alice"], thread.pk, resume=[
        {"interruptId": req.pk, "status": "resolved", "payload": {"approved": True}}]), "banking")
    seen = []

    def record(execute, sql, params, many, context):
        seen.append((sql.split()[0], sql.split(" FROM ")[1].split()[0] if " FROM " in sql else sql.split()[1],
                     getattr(connection.connection, "_pipeline", None) is not None))
        return execute(sql, params, many, context)

    fake_llm.push({"text": "Done: it is cancelled."})
    with traced() as trips, connection.execute_wrapper(record):
        assert runner.run_agent(plan.run_id)
    assert seen[:4] == [("UPDATE", '"agents_run"', True), ("SELECT", '"agents_run"', True),
                        ("SELECT", '"state_sharedstate"', True), ("SELECT", '"agents_toolcall"', True)], seen[:6]
    assert not seen[4][2]  # the call's claim after them, on its own
    # the run's claim commits without waiting for the WAL's flush; so do the call's claim and the
    # tool's own transaction, cancel_subscription's effects being rows of this database (its result
    # waits for them: tests/agents/test_lazy_tool_commits.py)
    assert "set_config('synchronous_commit', 'off', true)" in sent(trips[0])[0] and len(sent(trips[0])) == 3
    lazy = [sent(trip) for trip in trips[1:] if any("synchronous_commit" in statement for statement in sent(trip))]
    assert len(lazy) == 2 and '"claimed_at" = $' in lazy[0][1] and lazy[1][:2] == ["BEGIN", "SET LOCAL synchronous_commit TO OFF"]
    assert Run.objects.get(pk=plan.run_id).status == Run.Status.SUCCEEDED
    assert list(Message.objects.filter(run_id=plan.run_id).order_by("seq").values_list("role", "content")) == [
        ("tool", "Subscription sub_123 (Premium) is cancelled."), ("assistant", "Done: it is cancelled.")]
    # a second delivery of the task claims nothing, and runs nothing
    assert not runner.run_agent(plan.run_id)


@pytest.mark.django_db(transaction=True)
def test_a_run_task_reads_its_owners_language_and_the_queued_text_in_one_statement_each(
        demo, settings, django_assert_num_queries):
    """The worker's first read of every run task: the language of the chat's owner (people.Profile),
    LANGUAGE_CODE when there is no profile, an empty choice, or no such run."""
    from agents import selectors
    from people.models import Profile

    settings.LANGUAGE_CODE = "en"
    thread = services.create_thread(demo["alice"], "banking")
    run = Run.objects.create(thread=thread, queued_messages=[["m-1", "user", "and then?", ""]])
    Profile.objects.filter(user=demo["alice"]).delete()
    with django_assert_num_queries(1):
        assert selectors.run_language(run.pk) == "en"
    Profile.objects.create(user=demo["alice"], language="")
    assert selectors.run_language(run.pk) == "en"
    Profile.objects.filter(user=demo["alice"]).update(language="fr")
    Profile.objects.update_or_create(user=demo["bob"], defaults={"language": "de"})
    other = Run.objects.create(thread=services.create_thread(demo["bob"], "banking"))
    with django_assert_num_queries(2):
        assert selectors.run_language(run.pk) == "fr" and selectors.run_language(other.pk) == "de"
    assert selectors.run_language("no-such-run") == "en"
    with django_assert_num_queries(1):
        assert selectors.queued_messages(run.pk) == [["m-1", "user", "and then?", ""]]
    assert selectors.queued_messages(other.pk) == [] and selectors.queued_messages("no-such-run") == []


@pytest.mark.django_db(transaction=True)
def test_a_run_task_reads_its_owners_language_with_the_run_it_claims(demo, fake_llm, settings):
    """The task speaks the chat owner's language (what people read: here the model's error) and
    reads it with the claimed run: no statement of its own (it was the task's first read)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from agents import tasks
    from people.models import Profile

    settings.LANGUAGE_CODE = "en"
    Profile.objects.update_or_create(user=demo["alice"], defaults={"language": "fr"})
    thread = services.create_thread(demo["alice"], "banking")
    run = Run.objects.create(thread=thread)
    fake_llm.push({"error": 400, "error_message": "no such model"})
    with CaptureQueriesContext(connection) as queries:
        tasks.run_agent(run.pk)
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED and run.error.startswith("Le fournisseur du modèle a refusé la requête")
    reads = [q["sql"] for q in queries.captured_queries if "people_profile" in q["sql"]]
    assert len(reads) == 1 and '"agents_run"."forwarded_props"' in reads[0]  # the run's own read
    # no profile: LANGUAGE_CODE
    Profile.objects.filter(user=demo["alice"]).delete()
    other = Run.objects.create(thread=thread)
    fake_llm.push({"error": 400, "error_message": "no such model"})
    tasks.run_agent(other.pk)
    other.refresh_from_db()
    assert other.error.startswith("The model's provider refused the request")


@pytest.mark.django_db(transaction=True)
def test_a_decision_asks_in_one_statement_whether_a_call_of_its_run_still_waits(demo, django_assert_num_queries):
    from agents import selectors

    run, _req = paused_transfer(demo["alice"], "call-w")
    other, _other_req = paused_transfer(demo["alice"], "call-o")
    with django_assert_num_queries(1):
        assert selectors.has_waiting_calls(run.pk)
    ToolCall.objects.filter(pk="call-w").update(status=ToolCall.Status.APPROVED)
    assert not selectors.has_waiting_calls(run.pk) and selectors.has_waiting_calls(other.pk)
    ToolCall.objects.filter(pk="call-w").update(status=ToolCall.Status.AWAITING_INPUT)  # a question to the person
    assert selectors.has_waiting_calls(run.pk)


@pytest.mark.django_db(transaction=True)
def test_a_resume_reads_what_its_answers_name_and_what_is_pending(demo):
    """Compiled for up to four answers, the ORM's read beyond: the same rows either way."""
    from django.db.models import Q

    from tests.helpers import transfer_request

    thread = services.create_thread(demo["alice"], "banking")
    made = [transfer_request(demo["alice"]) for _ in range(7)]
    ApprovalRequest.objects.filter(pk__in=[r.pk for r in made]).update(thread_ref=thread.pk)
    ApprovalRequest.objects.filter(pk__in=[r.pk for r in made[:5]]).update(status=ApprovalRequest.Status.REJECTED)
    for ids in ([made[0].pk], [made[0].pk, "no-such-id"], [r.pk for r in made[:4]], [r.pk for r in made[:5]], []):
        orm = ApprovalRequest.objects.filter(thread_ref=thread.pk).filter(
            Q(pk__in=ids) | Q(status=ApprovalRequest.Status.PENDING))
        got = services._named_or_pending(ApprovalRequest, "thread_ref", thread.pk, ids)
        assert sorted(r.pk for r in got) == sorted(r.pk for r in orm)
    named = services._named_or_pending(ApprovalRequest, "thread_ref", thread.pk, [made[0].pk])
    assert sorted(r.pk for r in named) == sorted([made[0].pk, made[5].pk, made[6].pk])  # the two pending
    assert not services._named_or_pending(ApprovalRequest, "thread_ref", "another-thread", [made[0].pk])


@pytest.mark.django_db(transaction=True)
def test_on_postgresql_a_decisions_continuation_made_in_a_worker_commits_without_waiting_for_the_flush(
        demo, api, monkeypatch):
    """The call's fate and its continuation (made again from the committed decision should the
    server lose them) say so with their transaction's BEGIN, in its first round trip."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's synchronous_commit")
    run, req = paused_transfer(demo["alice"], "call-lazy")
    monkeypatch.setattr("agents.tasks.continue_decided.delay", lambda request_id: None)
    client = api("finn")
    with traced() as trips:
        assert client.post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve"}, format="json").status_code == 200
    assert not any("synchronous_commit" in statement for trip in trips for statement in sent(trip))  # the decision waits
    with traced() as trips:
        ran = services.continue_decided(req.pk)
    assert [r.parent_run_id for r in ran] == [run.pk]
    lazy = [sent(trip) for trip in trips if "SET LOCAL synchronous_commit TO OFF" in sent(trip)]
    assert len(lazy) == 1 and lazy[0][:2] == ["BEGIN", "SET LOCAL synchronous_commit TO OFF"] and len(lazy[0]) == 3
    assert ToolCall.objects.get(pk="call-lazy").status == ToolCall.Status.APPROVED


@pytest.mark.django_db(transaction=True)
def test_on_postgresql_a_resume_and_its_continuation_take_few_round_trips(demo, fake_llm, monkeypatch):
    """Round trips, read from libpq's trace (not counting psycopg's preparing of a statement): the
    resume's request until its COMMIT (its reads ahead, then one transaction: the answers' locks,
    the decision, its audit row, the call's fate and the continuation), and the worker's
    continuation until the call's result is committed (the claims, the run, its state and calls,
    the tool's own transaction, the result). Were 13 and 13: a transaction's BEGIN goes with its
    first statement; what nobody reads the answer of (the paused run's resume id, the decision, the
    request's decided fields, the audit row, the continuation, the tool's message under the id it
    drew) goes with the next statement or the COMMIT; the paused run's lock, the call's fate and
    what then stands of the run go together, in that order. The worker's 11th: the approved call's
    policy read again before it runs (Runner.blocked_now: a policy now a deny blocks it)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("round trips to PostgreSQL")
    thread, paused, req = paused_on_the_requester(demo, fake_llm)
    request = agui_request(demo["alice"], thread.pk, resume=[
        {"interruptId": req.pk, "status": "resolved", "payload": {"approved": True}}])
    connection.ensure_connection()  # its statements by their text, not a name prepared in an earlier test
    monkeypatch.setattr(connection.connection, "prepare_threshold", None)
    with traced() as web:
        plan = endpoint.prepare(request, "banking")
    assert plan.error is None
    fake_llm.push({"text": "Done: it is cancelled."})
    with traced() as worker:
        assert runner.run_agent(plan.run_id)
    web, worker = ([sent(t) for t in trips if sent(t)] for trips in (web, worker))
    committed = next((i for i, trip in enumerate(web) if "COMMIT" in trip), None)
    assert committed is not None and committed + 1 == 5, web
    assert web[1][0] == "BEGIN" and len(web[0]) == 6  # the reads ahead: token, thread, run id, history, answers
    # the answers' locks; the decision, its audit row, the call; the run's lock, the call's fate, what stands;
    # the continuation and COMMIT, which does not wait for the flush: the wait follows the continuation's hand-over
    assert [len(trip) for trip in web[1:5]] == [3, 4, 3, 3], web
    assert web[4][1:] == ["SET LOCAL synchronous_commit TO OFF", "COMMIT"], web
    assert web[5][0].startswith('UPDATE "agents_run" SET "stream_id"') and "pg_logical_emit_message" in web[6][0], web
    # the tool's own transaction commits first, then the result: the call's outcome, the counter and
    # the message (its INSERT with the COMMIT; a statement prepared earlier shows as "(prepared)")
    commits = [i for i, trip in enumerate(worker) if trip[-1] == "COMMIT"]
    stored = commits[1]
    assert stored + 1 == 11 and len(worker[stored]) == 2, worker
    assert any('FROM "approvals_toolpolicy"' in statement for trip in worker for statement in trip), worker
    assert ToolCall.objects.get(pk="call_cs").status == ToolCall.Status.SUCCEEDED
