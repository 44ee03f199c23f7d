"""Approvals that someone else decides, over AG-UI: alice's transfer waits for the finance group.

Her client gets no interrupt it cannot answer (CUSTOM approval_status says who decides), her
response stays open while finance reviews and carries the continuation (its own RUN_STARTED with
parentRunId after the paused run's RUN_FINISHED), and a plain POST later (no new message, no
resume) streams what happened since and follows what is still waiting.
"""

import json
import uuid

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from agents import presenters
from agents.agui import relay
from agents.models import Message, Run
from approvals import services as approval_services
from approvals.models import ApprovalRequest
from tests.agents.test_agui import PROMPT, post, run_input, sse_events, user_msg
from tests.conftest import wait_for_event

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
KEEPALIVE = ": keep-alive\n\n"


@pytest.fixture
def alice(demo):
    from rest_framework.authtoken.models import Token

    return {"HTTP_AUTHORIZATION": f"Bearer {Token.objects.get_or_create(user=demo['alice'])[0].key}"}


def frames(chunk):
    return [json.loads(f[len("data: "):]) for f in chunk.split("\n\n") if f.startswith("data: ")]


def read(resp, on_event=None, on_keepalive=None):
    """Every event of the response as the client gets it; `on_event(event)` / `on_keepalive(events)`
    run (in a thread: they may use the ORM) as they arrive."""
    assert resp.status_code == 200 and resp["Content-Type"] == "text/event-stream"

    async def collect():
        got = []
        async for chunk in resp.streaming_content:
            text = chunk.decode()
            if text == KEEPALIVE:
                if on_keepalive:
                    await sync_to_async(on_keepalive)(got)
                continue
            for event in frames(text):
                got.append(event)
                if on_event:
                    await sync_to_async(on_event)(event)
        return got

    return async_to_sync(collect)()


def finn_approves(demo, approval_id):
    approval_services.decide(approval_id, demo["finn"], "approve")


def held_by_client(thread_id):
    """The messages a stock client holds after the paused run: its ids are the ones our events gave."""
    return [presenters.agui_message(m).model_dump(mode="json", by_alias=True, exclude_none=True)
            for m in Message.objects.filter(thread_id=thread_id)]


def check_paused(events, run_id):
    """The paused run as the requester sees it: information, not an interrupt."""
    assert events[0]["type"] == "RUN_STARTED" and events[0]["runId"] == run_id
    status = [e for e in events if e["type"] == "CUSTOM" and e["name"] == "approval_status"]
    request = ApprovalRequest.objects.get(run_ref=run_id)
    assert len(status) == 1 and status[0]["value"]["approvalId"] == request.pk
    assert status[0]["value"]["toolCallId"] == request.tool_call_ref
    assert status[0]["value"]["decidedBy"] == "finance"
    assert "finance" in status[0]["value"]["message"] and status[0]["value"]["message"].startswith("Transfer 500.00 USD")
    end = next(e for e in events if e["type"] == "RUN_FINISHED")
    assert end["runId"] == run_id and "outcome" not in end  # nothing for this client to answer
    assert events.index(status[0]) < events.index(end)  # nothing but a new RUN_STARTED may follow RUN_FINISHED
    return request


def check_continuation(events, paused_run_id):
    """RUN_STARTED(parentRunId) … the transfer's result … RUN_FINISHED, after the paused run's end."""
    starts = [i for i, e in enumerate(events) if e["type"] == "RUN_STARTED" and e.get("parentRunId") == paused_run_id]
    assert len(starts) == 1, [e["type"] for e in events]
    tail = events[starts[0]:]
    assert events[starts[0] - 1]["type"] == "RUN_FINISHED" and events[starts[0] - 1]["runId"] == paused_run_id
    assert tail[1]["type"] == "MESSAGES_SNAPSHOT"
    response = [e for e in tail if e["type"] == "CUSTOM" and e["name"] == "approval_response"]
    assert len(response) == 1 and response[0]["value"]["approved"] is True
    assert tail[-1]["type"] == "RUN_FINISHED" and tail[-1]["runId"] == tail[0]["runId"]
    continuation = Run.objects.get(parent_run_id=paused_run_id)
    assert tail[0]["runId"] == continuation.pk and continuation.status == Run.Status.SUCCEEDED
    return tail


def test_group_review_is_followed_in_the_same_response(celery_worker_live, fake_llm, client, demo, alice,
                                                       settings, monkeypatch):
    settings.AGUI_SSE_REVIEW_WAIT_SECONDS = 30
    monkeypatch.setattr(relay, "KEEPALIVE_SECONDS", 0.3)
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    decided = []

    def after_pause(got):  # a keep-alive after the paused run's end: the response waits; finn decides now
        if got and got[-1]["type"] == "RUN_FINISHED" and not decided:
            decided.append(True)
            finn_approves(demo, ApprovalRequest.objects.get(run_ref=run_id).pk)

    events = read(post(client, "banking", run_input(thread_id, [user_msg(PROMPT)], run_id=run_id), **alice),
                  on_keepalive=after_pause)
    assert decided, "the response ended at the paused run instead of waiting for finance"
    check_paused(events, run_id)
    tail = check_continuation(events, run_id)
    results = [e for e in tail if e["type"] == "TOOL_CALL_RESULT"]
    assert len(results) == 1 and results[0]["content"].startswith("Transferred 500.00 USD")
    assert any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in tail)  # the model's answer came in too
    assert Run.objects.filter(thread_id=thread_id).count() == 2


def test_past_the_wait_a_plain_post_streams_what_happened(celery_worker_live, fake_llm, client, demo, alice,
                                                          settings):
    settings.AGUI_SSE_REVIEW_WAIT_SECONDS = 0.5
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    first = read(post(client, "banking", run_input(thread_id, [user_msg(PROMPT)], run_id=run_id), **alice))
    request = check_paused(first, run_id)
    assert first[-1]["type"] == "RUN_FINISHED"  # nobody decided within the wait: the response ended there

    # she comes back while finance still reviews: the paused run again, then the decision as it comes
    settings.AGUI_SSE_REVIEW_WAIT_SECONDS = 30
    decided = []

    def on_event(event):
        if event["type"] == "RUN_FINISHED" and not decided:
            decided.append(True)
            finn_approves(demo, request.pk)

    back = run_input(thread_id, held_by_client(thread_id))
    events = read(post(client, "banking", back, **alice), on_event=on_event)
    check_paused(events, run_id)
    check_continuation(events, run_id)
    assert not Run.objects.filter(pk=back["runId"]).exists()  # not a new turn: the client's runId names no run


def test_decided_while_away_a_plain_post_replays_the_continuation(celery_worker_live, fake_llm, client, demo,
                                                                  alice):
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    first = read(post(client, "banking", run_input(thread_id, [user_msg(PROMPT)], run_id=run_id), **alice))
    request = check_paused(first, run_id)
    held = held_by_client(thread_id)
    finn_approves(demo, request.pk)
    continuation = wait_for_event(thread_id, lambda e: e["type"] == "RUN_STARTED" and e.get("parentRunId") == run_id)[0]
    wait_for_event(thread_id, lambda e: e["type"] == "RUN_FINISHED" and e["runId"] == continuation["runId"])

    events = sse_events(post(client, "banking", run_input(thread_id, held), **alice))
    assert [e["type"] for e in events] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "CUSTOM", "RUN_FINISHED"]
    assert events[0]["runId"] == continuation["runId"] and events[0]["parentRunId"] == run_id
    assert events[2]["name"] == "approval_response" and events[2]["value"]["approvalId"] == request.pk
    tool = [m for m in events[1]["messages"] if m["role"] == "tool"]
    assert len(tool) == 1 and tool[0]["content"].startswith("Transferred 500.00 USD")
    assert events[1]["messages"][-1]["role"] == "assistant"  # the model's answer to the result
    assert Run.objects.filter(thread_id=thread_id).count() == 2

    # having seen it all, the same plain POST is a turn again, as before (nothing is replayed twice)
    again = run_input(thread_id, held_by_client(thread_id))
    turn = sse_events(post(client, "banking", again, **alice))
    assert turn[0]["runId"] == again["runId"] and Run.objects.filter(pk=again["runId"]).exists()


def test_requester_routed_calls_stay_interrupts(celery_worker_live, fake_llm, client, alice):
    thread_id = f"thread-{uuid.uuid4()}"
    events = sse_events(post(client, "banking", run_input(thread_id, [user_msg("Cancel my subscription sub_123")]),
                             **alice))
    assert not [e for e in events if e["type"] == "CUSTOM" and e["name"] == "approval_status"]
    outcome = events[-1]["outcome"]
    assert outcome["type"] == "interrupt" and outcome["interrupts"][0]["metadata"]["approver"] == {"kind": "requester"}


def test_her_answer_while_finance_still_reviews_is_acknowledged_and_followed(
        celery_worker_live, fake_llm, client, demo, alice, settings, monkeypatch):
    """One run pauses on two calls: hers (an interrupt) and finance's (a status). Her answer is
    acknowledged as a run of its own (the client's runId), and the same response then follows
    finance's review into the continuation; before, it ended with RUN_ERROR awaiting_other_approvers."""
    settings.AGUI_SSE_REVIEW_WAIT_SECONDS = 30
    monkeypatch.setattr(relay, "KEEPALIVE_SECONDS", 0.3)
    transfer = {"id": "call_transfer_mixed", "name": "transfer_money", "arguments": json.dumps(
        {"from_account": "1234567890", "to_account": "0987654321", "amount": 20})}
    cancel = {"id": "call_cancel_mixed", "name": "cancel_subscription", "arguments": json.dumps(
        {"subscription_id": "sub_123"})}
    fake_llm.push({"text": "Both need an approval first.", "tool_calls": [transfer, cancel]})
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    # read(): with keep-alives every 0.3 s, a slow first run may carry one before its events
    first = read(post(client, "banking", run_input(thread_id, [user_msg("Pay bob 20 and cancel sub_123")],
                                                   run_id=run_id), **alice))
    [interrupt] = first[-1]["outcome"]["interrupts"]  # hers only
    assert interrupt["toolCallId"] == cancel["id"]
    status = next(e["value"] for e in first if e["type"] == "CUSTOM" and e["name"] == "approval_status")
    assert status["toolCallId"] == transfer["id"] and status["decidedBy"] == "finance"

    decided = []

    def after_ack(got):
        if got and got[-1]["type"] == "RUN_FINISHED" and not decided:
            decided.append(True)
            finn_approves(demo, status["approvalId"])

    answer_id = f"run-{uuid.uuid4()}"
    events = read(post(client, "banking", run_input(thread_id, run_id=answer_id, resume=[
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]), **alice),
        on_keepalive=after_ack)
    ack = events[:events.index(next(e for e in events if e["type"] == "RUN_FINISHED")) + 1]
    assert [e["type"] for e in ack] == ["RUN_STARTED", "CUSTOM", "CUSTOM", "RUN_FINISHED"]
    assert ack[0]["runId"] == ack[-1]["runId"] == answer_id and "outcome" not in ack[-1]
    assert ack[1]["name"] == "approval_response" and ack[1]["value"]["approvalId"] == interrupt["id"]
    assert ack[2]["name"] == "approval_status" and ack[2]["value"]["approvalId"] == status["approvalId"]
    rest = events[len(ack):]
    assert rest[0]["type"] == "RUN_STARTED" and rest[0]["parentRunId"] == run_id and rest[0]["runId"] != answer_id
    results = {e["toolCallId"]: e["content"] for e in rest if e["type"] == "TOOL_CALL_RESULT"}
    assert results[transfer["id"]].startswith("Transferred 20.00 USD")
    assert results[cancel["id"]].startswith("Subscription sub_123")
    assert rest[-1]["type"] == "RUN_FINISHED" and rest[-1]["runId"] == rest[0]["runId"]
    assert not Run.objects.filter(pk=answer_id).exists()
    assert Run.objects.get(parent_run_id=run_id).status == Run.Status.SUCCEEDED


def test_a_client_cut_off_before_the_answer_gets_it_on_its_next_plain_post(celery_worker_live, fake_llm, client,
                                                                            alice):
    """A stream cut mid-run (Daphne restarted, the network) and a run that ended meanwhile: the client
    holds only the message it wrote, whose id is its own, not one our events gave. The same plain POST
    replays that run; it used to be a new turn, the model asked again with nothing new to answer."""
    fake_llm.push({"text": "Your balance is 5432.10 USD."})
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    asked = user_msg("What is my balance?")
    sse_events(post(client, "banking", run_input(thread_id, [asked], run_id=run_id), **alice))

    again = run_input(thread_id, [asked])  # all it holds: the answer never reached it
    events = sse_events(post(client, "banking", again, **alice))
    assert [e["type"] for e in events] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert events[0]["runId"] == run_id
    assert events[1]["messages"][-1]["content"] == "Your balance is 5432.10 USD."
    assert list(Run.objects.filter(thread_id=thread_id).values_list("pk", flat=True)) == [run_id]  # no new turn

    # once it holds the answer, a plain POST is a turn, as before
    fake_llm.push({"text": "Anything else?"})
    turn = sse_events(post(client, "banking", run_input(thread_id, held_by_client(thread_id)), **alice))
    assert turn[0]["runId"] != run_id and Run.objects.filter(thread_id=thread_id).count() == 2


def test_a_run_that_ended_without_an_answer_is_retried_by_a_plain_post(celery_worker_live, fake_llm, client, alice):
    """A run that failed before saying anything has nothing to replay: the client's plain POST with its
    own message is the retry it means."""
    fake_llm.push({"error": 400, "error_message": "no such model"})
    thread_id, run_id = f"thread-{uuid.uuid4()}", f"run-{uuid.uuid4()}"
    asked = user_msg("What is my balance?")
    first = sse_events(post(client, "banking", run_input(thread_id, [asked], run_id=run_id), **alice))
    assert first[-1]["type"] == "RUN_ERROR"
    assert not Message.objects.filter(thread_id=thread_id).exclude(role=Message.Role.USER).exists()

    fake_llm.push({"text": "Your balance is 5432.10 USD."})
    retry = run_input(thread_id, [asked])
    events = sse_events(post(client, "banking", retry, **alice))
    assert events[0]["runId"] == retry["runId"] and events[-1]["type"] == "RUN_FINISHED"
