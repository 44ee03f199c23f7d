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
