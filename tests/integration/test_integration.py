"""The whole path with real parts: REST -> Celery worker (real Redis) -> openai client -> fake model
-> paused call -> reviewer decision -> continuation run."""

from decimal import Decimal

import pytest

from agents.catalog.models import Account, Transfer
from agents.models import Run, ToolCall
from tests.conftest import stream_events, wait_for_event

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PROMPT = "Transfer $500 from account 1234567890 to account 0987654321"


def finished(run_id):
    return lambda e: e["type"] in ("RUN_FINISHED", "RUN_ERROR") and e.get("runId", run_id) == run_id


def continuation_finished(parent_id):
    state = {}

    def match(e):
        if e["type"] == "RUN_STARTED" and e.get("parentRunId") == parent_id:
            state["run"] = e["runId"]
        return "run" in state and e["type"] in ("RUN_FINISHED", "RUN_ERROR") and e.get("runId", state["run"]) == state["run"]

    return match


def start_transfer(api):
    alice = api("alice")
    thread = alice.post("/api/threads/", {"agent": "banking"}, format="json").json()
    resp = alice.post(f"/api/threads/{thread['id']}/messages/", {"content": PROMPT}, format="json")
    assert resp.status_code == 202, resp.content
    run_id = resp.json()["run_id"]
    status, _ = wait_for_event(thread["id"], lambda e: e["type"] == "CUSTOM" and e["name"] == "approval_status")
    event, _ = wait_for_event(thread["id"], finished(run_id))
    # finance decides: alice's stream says so (approval_status) instead of an interrupt she cannot answer
    assert event["type"] == "RUN_FINISHED" and "outcome" not in event, event
    value = status["value"]
    return thread["id"], run_id, {"id": value["approvalId"], "toolCallId": value["toolCallId"],
                                  "message": value["message"], "approver": value["approver"]}


def test_edit_amount_then_approve_executes_once_with_edited_amount(celery_worker_live, fake_llm, api):
    thread_id, run_id, interrupt = start_transfer(api)
    assert interrupt["message"].startswith("Transfer 500.00 USD from 1234567890 to 0987654321: waiting for")
    assert interrupt["approver"] == {"kind": "group", "group": "finance"}
    assert api("alice").get(f"/api/runs/{run_id}/").json()["status"] == "interrupted"

    finn = api("finn", keyword="Bearer")
    pending = finn.get("/api/approvals/?status=pending").json()["results"]
    assert [p["id"] for p in pending] == [interrupt["id"]]
    assert pending[0]["arguments"]["amount"] == 500.0 and pending[0]["thread"] == thread_id

    resp = finn.post(f"/api/approvals/{interrupt['id']}/decide/",
                     {"decision": "approve", "arguments": {**pending[0]["arguments"], "amount": 450}}, format="json")
    assert resp.status_code == 200, resp.content
    assert resp.json()["status"] == "modified"

    event, _ = wait_for_event(thread_id, continuation_finished(run_id))
    assert event["type"] == "RUN_FINISHED", event
    transfer = Transfer.objects.get()
    assert transfer.amount == Decimal("450.00")
    assert Account.objects.get(number="1234567890").balance == Decimal("4982.10")
    assert Account.objects.get(number="0987654321").balance == Decimal("1450.00")
    assert ToolCall.objects.get(pk=interrupt["toolCallId"]).status == "succeeded"

    types = [e["type"] for e in stream_events(thread_id)]
    assert types.count("RUN_STARTED") == 2 and types.count("TOOL_CALL_RESULT") == 1
    result = next(e for e in stream_events(thread_id) if e["type"] == "TOOL_CALL_RESULT")
    assert "Transferred 450.00 USD" in result["content"] and "amount: 500.00 USD -> 450.00 USD" in result["content"]
    # the model's last request carried the tool result, and the reply was persisted
    last_request = fake_llm.requests[-1]["messages"]
    assert last_request[-1]["role"] == "tool" and "450.00" in last_request[-1]["content"]
    messages = api("alice").get(f"/api/threads/{thread_id}/messages/").json()
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert Run.objects.filter(thread_id=thread_id, status="succeeded").count() == 1


def test_reject_executes_nothing_and_the_model_hears_the_feedback(celery_worker_live, fake_llm, api):
    thread_id, run_id, interrupt = start_transfer(api)
    resp = api("finn").post(f"/api/approvals/{interrupt['id']}/decide/",
                            {"decision": "reject", "feedback": "Wrong destination account"}, format="json")
    assert resp.status_code == 200 and resp.json()["status"] == "rejected"
    event, _ = wait_for_event(thread_id, continuation_finished(run_id))
    assert event["type"] == "RUN_FINISHED"
    assert not Transfer.objects.exists()
    assert Account.objects.get(number="1234567890").balance == Decimal("5432.10")
    tool_msg = fake_llm.requests[-1]["messages"][-1]
    assert tool_msg["role"] == "tool"
    assert "Wrong destination account" in tool_msg["content"] and "rejected" in tool_msg["content"]
    assert ToolCall.objects.get(pk=interrupt["toolCallId"]).status == "rejected"


def test_model_unreachable_ends_the_run_with_run_error(celery_worker_live, fake_llm, api):
    fake_llm.push({"error": 503})
    fake_llm.push({"error": 503})  # the SDK retries once
    alice = api("alice")
    thread = alice.post("/api/threads/", {"agent": "banking"}, format="json").json()
    run_id = alice.post(f"/api/threads/{thread['id']}/messages/", {"content": "hello"}, format="json").json()["run_id"]
    event, _ = wait_for_event(thread["id"], finished(run_id))
    assert event["type"] == "RUN_ERROR" and event["code"] == "model_unavailable"
    assert alice.get(f"/api/runs/{run_id}/").json()["status"] == "failed"


def test_healthz_counts_the_live_worker(celery_worker_live, client):
    resp = client.get("/healthz")
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["db"] == "ok" and body["redis"] == "ok" and body["workers"] >= 1


def test_stop_cancels_a_streaming_run_and_the_thread_stays_usable(celery_worker_live, fake_llm, api):
    fake_llm.push({"text": " ".join(f"word{i}" for i in range(400)), "delay": 0.02})
    alice = api("alice")
    thread = alice.post("/api/threads/", {"agent": "banking"}, format="json").json()["id"]
    run_id = alice.post(f"/api/threads/{thread}/messages/", {"content": "talk a lot"}, format="json").json()["run_id"]
    wait_for_event(thread, lambda e: e["type"] == "TEXT_MESSAGE_CONTENT")
    resp = alice.post(f"/api/runs/{run_id}/cancel/")
    assert resp.status_code == 202, resp.content
    event, _ = wait_for_event(thread, finished(run_id))
    assert event["type"] == "RUN_FINISHED" and event["outcome"] == {"type": "cancelled"}
    types = [e["type"] for e in stream_events(thread)]
    assert types.count("TEXT_MESSAGE_START") == types.count("TEXT_MESSAGE_END") == 1
    assert alice.get(f"/api/runs/{run_id}/").json()["status"] == "cancelled"
    assert alice.post(f"/api/runs/{run_id}/cancel/").status_code == 409
    # the partial answer is kept, and the thread takes the next message
    messages = alice.get(f"/api/threads/{thread}/messages/").json()
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"].startswith("word0")
    nxt = alice.post(f"/api/threads/{thread}/messages/", {"content": "hello"}, format="json")
    assert nxt.status_code == 202
    event, _ = wait_for_event(thread, finished(nxt.json()["run_id"]))
    assert event["type"] == "RUN_FINISHED"
