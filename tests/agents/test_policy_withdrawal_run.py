"""A policy saved while a call waits withdraws the request it now blocks. Its run then ended
'cancelled' as after the person's own Stop: the chat said "Stopped." though nobody stopped anything,
and the model was never asked, so nobody told the person why the transfer would not happen. A
withdrawal by someone other than the chat's owner is told to the model (with the reason), which
answers; the person's own Stop still ends the run without asking it."""

import json

import pytest

from agents import services
from agents.models import Run, Thread
from approvals import services as approval_services
from approvals.models import ApprovalRequest
from tests.helpers import TRANSFER_ARGS, run_here

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("transfers_to_finance")]

def paused_transfer(demo, fake_llm):
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    fake_llm.push({"tool_calls": [{"id": "c1", "name": "transfer_money", "arguments": json.dumps(TRANSFER_ARGS)}]})
    first = run_here(services.start_run(thread, demo["alice"], "Pay Bob 500").pk)
    assert first.status == "interrupted"
    return thread, first


def test_a_call_a_policy_withdrew_is_told_to_the_model_which_answers(demo, fake_llm):
    thread, first = paused_transfer(demo, fake_llm)
    approval_services.save_policy("transfer_money", {"mode": "deny", "approver_kind": "requester",
                                                     "approver_group": None}, demo["admin"])
    assert ApprovalRequest.objects.get(thread_ref=thread.id).status == "cancelled"
    fake_llm.push("The transfer is no longer allowed, so I did not make it.")
    cont = run_here(Run.objects.get(parent_run=first).pk)
    assert cont.status == "succeeded"
    told = next(m["content"] for m in fake_llm.requests[-1]["messages"] if m.get("tool_call_id") == "c1")
    assert told.startswith("Error: transfer_money was cancelled and not executed: ") and "policy" in told
    assert thread.messages.filter(role="assistant").last().content == \
        "The transfer is no longer allowed, so I did not make it."


def test_the_persons_own_stop_still_ends_the_run_without_asking_the_model(demo, fake_llm):
    thread, first = paused_transfer(demo, fake_llm)
    asked = len(fake_llm.requests)
    assert services.cancel_run(Run.objects.get(pk=first.pk), demo["alice"])
    cont = run_here(Run.objects.get(parent_run=first).pk)
    assert cont.status == "cancelled" and len(fake_llm.requests) == asked
