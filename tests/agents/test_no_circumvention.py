"""No circumvention: after a reviewer rejects a call, the same call (same tool, equivalent arguments by
their hash) in the same thread is refused at once with the earlier feedback and not sent to the
reviewers again, until the user writes. Driven through the runner with the strict fake model."""

import json

import pytest

from agents import presenters, services
from agents.models import Message, Run, Thread, ToolCall
from agents.runtime import runner
from approvals import services as approval_services
from approvals.models import ApprovalRequest
from tests.helpers import TRANSFER_ARGS, run_here

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("transfers_to_finance")]

def transfer(call_id, arguments):
    return {"tool_calls": [{"id": call_id, "name": "transfer_money", "arguments": arguments}]}


def tool_message(request_json, call_id):
    return next(m["content"] for m in request_json["messages"] if m.get("tool_call_id") == call_id)


def test_a_rejected_call_is_not_asked_again_until_the_user_writes(demo, fake_llm):
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    fake_llm.push(transfer("c1", json.dumps(TRANSFER_ARGS)))
    first = run_here(services.start_run(thread, demo["alice"], "Pay Bob 500").pk)
    assert first.status == "interrupted"
    [req] = ApprovalRequest.objects.filter(thread_ref=thread.id)
    approval_services.decide(req.pk, demo["finn"], "reject", feedback="Not before the invoice arrives")

    # the continuation: the model tries the very same transfer again (keys in another order, 500.0)
    again = json.dumps({"currency": "USD", "amount": 500.0, "to_account": "0987654321",
                        "from_account": "1234567890"})
    fake_llm.push(transfer("c2", again), "I will not send it; the reviewer wants the invoice first.")
    cont = run_here(Run.objects.get(parent_run=first).pk)
    assert cont.status == "succeeded"
    assert ApprovalRequest.objects.filter(thread_ref=thread.id).count() == 1  # nobody was asked again
    call = ToolCall.objects.get(pk="c2")
    assert call.status == "repeated" and call.feedback == "Not before the invoice arrives"
    told = tool_message(fake_llm.requests[-1], "c2")
    assert "already rejected this same call" in told and "not sent for review again" in told
    assert '"Not before the invoice arrives"' in told
    # the person reads a sentence of their own, not the model's instructions
    outcome = presenters.tool_outcome(call)
    assert outcome["status"] == "rejected" and "already rejected earlier in this chat" in outcome["message"]
    assert "Do not" not in outcome["message"]

    # other arguments are another call: asked as usual
    fake_llm.push(transfer("c3", json.dumps({**TRANSFER_ARGS, "amount": 450})))
    other = run_here(services.start_run(thread, demo["alice"], "Then pay 450").pk)
    assert other.status == "interrupted" and ToolCall.objects.get(pk="c3").status == "awaiting_approval"
    approval_services.cancel(ApprovalRequest.objects.get(tool_call_ref="c3").pk)
    run_here(Run.objects.get(parent_run=other).pk)  # a withdrawn call ends the run without the model

    # once the user has written since the rejection, the same call goes to the reviewers again
    fake_llm.push(transfer("c4", json.dumps(TRANSFER_ARGS)))
    later = run_here(services.start_run(thread, demo["alice"], "The invoice is here now, please send the 500").pk)
    assert later.status == "interrupted"
    assert ToolCall.objects.get(pk="c4").status == "awaiting_approval"
    assert ApprovalRequest.objects.filter(thread_ref=thread.id, tool_call_ref="c4", status="pending").exists()
    assert not Message.objects.filter(thread=thread, tool_call_id="c4").exists()


def test_a_rejection_in_another_thread_does_not_count(demo, fake_llm):
    mine = Thread.objects.create(owner=demo["alice"], agent="banking")
    fake_llm.push(transfer("d1", json.dumps(TRANSFER_ARGS)))
    first = run_here(services.start_run(mine, demo["alice"], "Pay Bob 500").pk)
    approval_services.decide(ApprovalRequest.objects.get(tool_call_ref="d1").pk, demo["finn"], "reject",
                             feedback="No")
    fake_llm.push("Understood.")
    run_here(Run.objects.get(parent_run=first).pk)

    other = Thread.objects.create(owner=demo["alice"], agent="banking")
    fake_llm.push(transfer("d2", json.dumps(TRANSFER_ARGS)))
    assert run_here(services.start_run(other, demo["alice"], "Pay Bob 500").pk).status == "interrupted"
    assert ToolCall.objects.get(pk="d2").status == "awaiting_approval"


def test_the_offline_model_retells_a_repeat_and_a_guidance_without_the_instructions():
    from agents.llm.scripted.common import guidance, retell

    class Call:
        name, feedback = "transfer_money", "Ask Bob first"

    class Earlier:
        feedback = "Not before the invoice arrives"

    told = retell(runner.repeat_text(Call, Earlier))
    assert told == "it was already rejected earlier in this chat (\u201cNot before the invoice arrives\u201d), so I did not ask again."
    assert guidance(runner.guidance_text(Call)) == "Ask Bob first"
    assert guidance("Done. Transferred 5.00 USD") is None
