"""An account's requests waiting for a decision are bounded in its chats too, as for outside agents
(AGUI_MAX_PENDING_PER_REQUESTER): one account filed 70 reviewed transfers in 2 s from as many
threads, each mailed to finance. The call past the bound is not sent for review, and the model is
told why."""

import json

import pytest

from agents import services
from agents.models import Run, Thread, ToolCall
from agents.runtime import runner
from approvals.models import ApprovalRequest
from tests.inbox_helpers import make_request

pytestmark = [pytest.mark.django_db(transaction=True)]
TRANSFER = {"from_account": "1234567890", "to_account": "0987654321", "currency": "USD", "amount": 75}


def test_a_call_past_the_accounts_waiting_requests_is_not_sent_for_review(demo, fake_llm, monkeypatch, settings):
    settings.AGUI_MAX_PENDING_PER_REQUESTER = 2
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    make_request("alice")
    make_request("alice")
    fake_llm.push({"text": "Sending it to finance.", "tool_calls": [
        {"id": "call-past-bound", "name": "transfer_money", "arguments": json.dumps(TRANSFER)}]},
        {"text": "You have too many requests waiting."})
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    run = services.start_run(thread, demo["alice"], "Pay 75")
    assert runner.run_agent(run.pk)
    assert Run.objects.get(pk=run.pk).status == "succeeded"
    call = ToolCall.objects.get(pk="call-past-bound")
    assert call.status == "denied"
    told = fake_llm.requests[-1]["messages"][-1]["content"]
    assert told == ("Error: transfer_money was not sent for review: 2 requests of alice are already waiting for a "
                    "decision, the most one account may have. Tell the user; it can be asked again once some are "
                    "decided.")
    assert ApprovalRequest.objects.filter(requester=demo["alice"]).count() == 2  # nobody asked again
    settings.AGUI_MAX_PENDING_PER_REQUESTER = 3  # room again: the same call is sent for review
    fake_llm.push({"text": "Sending it to finance.", "tool_calls": [
        {"id": "call-in-bound", "name": "transfer_money", "arguments": json.dumps(TRANSFER)}]})
    again = services.start_run(thread, demo["alice"], "Pay 75, please")
    assert runner.run_agent(again.pk)
    assert ToolCall.objects.get(pk="call-in-bound").status == "awaiting_approval"
