"""A resume that only cancels interrupts already closed (decided in the inbox, in another tab,
by an earlier resume): nothing is left to answer, so the model is not asked again. It used to
start a turn on the conversation as it stood, which repeated the model's last call and, under an
"always allow" grant, ran it a second time."""

import uuid

import pytest

from agents import presenters
from agents.models import Message, Run
from tests.agents.test_agui import post, run_input, sse_events, user_msg
from tests.conftest import wait_for_event

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
CANCEL = "Cancel my subscription sub_123"


def held_by_client(thread_id):
    """Every message of the thread as an AG-UI client holding the whole conversation sends it."""
    return [presenters.agui_message(m).model_dump(mode="json", by_alias=True, exclude_none=True)
            for m in Message.objects.filter(thread_id=thread_id).order_by("created_at")]


def cancel(interrupt_id):
    return [{"interruptId": interrupt_id, "status": "cancelled"}]


def test_a_stale_cancel_after_an_always_allow_asks_no_model_and_runs_nothing(
        celery_worker_live, fake_llm, client, token_headers):
    alice = token_headers("alice")
    thread_id = f"thread-{uuid.uuid4()}"
    first = sse_events(post(client, "banking", run_input(thread_id, [user_msg(CANCEL)]), **alice))
    interrupt = first[-1]["outcome"]["interrupts"][0]
    done = sse_events(post(client, "banking", run_input(thread_id, resume=[
        {"interruptId": interrupt["id"], "status": "resolved",
         "payload": {"approved": True, "alwaysAllowInThread": True}}]), **alice))
    assert done[-1]["type"] == "RUN_FINISHED"
    runs, results, asked = Run.objects.count(), Message.objects.filter(role="tool").count(), len(fake_llm.requests)

    # the whole conversation held: a run of the client's id says what became of the interrupt
    run_id = f"run-{uuid.uuid4()}"
    stale = sse_events(post(client, "banking", run_input(
        thread_id, held_by_client(thread_id), resume=cancel(interrupt["id"]), run_id=run_id), **alice))
    assert [e["type"] for e in stale] == ["RUN_STARTED", "CUSTOM", "RUN_FINISHED"]
    assert stale[0]["runId"] == stale[-1]["runId"] == run_id
    assert stale[1]["name"] == "approval_response" and stale[1]["value"]["approved"] is True
    assert "outcome" not in stale[-1] or stale[-1]["outcome"]["type"] == "success"  # clears the client's interrupts

    # nothing held: the runs it has not seen, rebuilt; none of them new
    replayed = sse_events(post(client, "banking", run_input(thread_id, resume=cancel(interrupt["id"])), **alice))
    assert replayed[-1]["type"] == "RUN_FINISHED" and replayed[-1]["runId"] == done[-1]["runId"]
    assert (Run.objects.count(), Message.objects.filter(role="tool").count(), len(fake_llm.requests)) == (
        runs, results, asked)
    assert not Run.objects.filter(pk=run_id).exists()


def decided_elsewhere(client, api, alice, decision):
    """alice's cancellation, paused for her, then decided through the REST API (the inbox, another
    tab) while her client holds the interrupt: (thread id, the first run's events, the interrupt,
    the messages the client held), once the continuation has ended."""
    thread_id = f"thread-{uuid.uuid4()}"
    first = sse_events(post(client, "banking", run_input(thread_id, [user_msg(CANCEL)]), **alice))
    interrupt = first[-1]["outcome"]["interrupts"][0]
    held = held_by_client(thread_id)
    answer = api("alice").post(f"/api/approvals/{interrupt['id']}/decide/", {"decision": decision}, format="json")
    assert answer.status_code == 200, answer.content
    wait_for_event(thread_id, lambda e: e["type"] == "RUN_FINISHED" and e.get("runId") != first[0]["runId"])
    return thread_id, first, interrupt, held


def test_a_stale_cancel_after_the_inbox_decided_replays_the_continuation(
        celery_worker_live, fake_llm, client, api, token_headers):
    alice = token_headers("alice")
    thread_id, first, interrupt, held = decided_elsewhere(client, api, alice, "approve")
    runs, asked = Run.objects.count(), len(fake_llm.requests)

    stale = sse_events(post(client, "banking", run_input(thread_id, held, resume=cancel(interrupt["id"])), **alice))
    continuation = Run.objects.get(parent_run_id=first[0]["runId"])
    assert [e["runId"] for e in stale if e["type"] == "RUN_STARTED"] == [continuation.pk]
    snapshot = next(e["messages"] for e in stale if e["type"] == "MESSAGES_SNAPSHOT")  # rebuilt from the database
    assert any(m["role"] == "tool" and m["toolCallId"] == interrupt["toolCallId"] for m in snapshot)
    assert any(e["type"] == "CUSTOM" and e["name"] == "approval_response" for e in stale)
    assert stale[-1]["type"] == "RUN_FINISHED" and (stale[-1].get("outcome") or {}).get("type") != "interrupt"
    assert (Run.objects.count(), len(fake_llm.requests)) == (runs, asked)


def test_a_stale_cancel_with_a_new_message_is_a_turn_on_that_message(
        celery_worker_live, fake_llm, client, api, token_headers):
    """The official client's way past an interrupt decided elsewhere, with something new to say."""
    alice = token_headers("alice")
    thread_id, _first, interrupt, _held = decided_elsewhere(client, api, alice, "reject")
    fake_llm.push({"text": "Nothing was cancelled."})
    turn = sse_events(post(client, "banking", run_input(
        thread_id, [*held_by_client(thread_id), user_msg("What happened?")], resume=cancel(interrupt["id"])), **alice))
    assert turn[-1]["type"] == "RUN_FINISHED"
    assert Run.objects.filter(pk=turn[0]["runId"]).exists()
    assert fake_llm.requests[-1]["messages"][-1] == {"role": "user", "content": "What happened?"}
