"""A policy saved while a call waits withdraws the request it now blocks. Its run then ended
'cancelled' as after the person's own Stop: the chat said "Stopped." though nobody stopped anything,
and the model was never asked, so nobody told the person why the transfer would not happen. A
withdrawal by someone other than the chat's owner is told to the model (with the reason), which
answers; the person's own Stop still ends the run without asking it."""

import json

import pytest
from django.utils import translation

from agents import presenters, services
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


# --- a call approved under one policy, executed under another ------------------------------------


def approved_transfer(demo, fake_llm):
    """alice's transfer, approved by finn; its continuation queued and not yet run."""
    thread, first = paused_transfer(demo, fake_llm)
    req = ApprovalRequest.objects.get(thread_ref=thread.id)
    assert approval_services.decide(req.pk, demo["finn"], "approve").status == "approved"
    return thread, first, req


def told_about(fake_llm, call_id):
    return next(m["content"] for m in fake_llm.requests[-1]["messages"] if m.get("tool_call_id") == call_id)


def test_an_approved_call_the_policy_now_denies_is_not_executed(demo, fake_llm):
    """Approved, then the tool switched to deny before the continuation ran (a sibling call still
    waiting, a busy worker): the decision is not a licence to run what the policy in force blocks."""
    from agents.catalog.models import Transfer
    from agents.models import ToolCall

    thread, first, req = approved_transfer(demo, fake_llm)
    approval_services.save_policy("transfer_money", {"mode": "deny", "approver_kind": "requester",
                                                     "approver_group": None}, demo["admin"])
    fake_llm.push("The transfer is blocked now, so it was not made.")
    cont = run_here(Run.objects.get(parent_run=first).pk)
    assert cont.status == "succeeded"
    assert not Transfer.objects.exists()
    call = ToolCall.objects.get(pk="c1")
    assert call.status == "failed" and call.attempts == 0  # never claimed: nothing ran
    told = told_about(fake_llm, "c1")
    assert told == "Error: It was approved, but the rules for this tool no longer allow it, so it was not run.", told
    assert ApprovalRequest.objects.get(pk=req.pk).status == "approved"  # what the reviewer decided stays so
    # the person reads it in their language, without the "Error: " the model reads
    with translation.override("fr"):
        outcome = presenters.tool_outcome(call)
    assert outcome["status"] == "failed" and "Error" not in outcome["message"]
    assert outcome["message"] != presenters.tool_outcome(call)["message"]


def test_an_approved_call_a_rule_on_the_requesters_groups_now_denies_is_not_executed(demo, fake_llm):
    """A deny rule reading the requester's groups: the requester put in "frozen" after the approval."""
    from django.contrib.auth.models import Group

    from agents.catalog.models import Transfer

    frozen = Group.objects.create(name="frozen")
    approval_services.save_policy("transfer_money", {
        "mode": "conditional", "approver_kind": "group", "approver_group": Group.objects.get(name="finance"),
        "conditions": [{"name": "frozen accounts", "when": {"path": "user.groups", "op": "contains", "value": "frozen"},
                        "action": "deny"}, {"name": "the rest", "action": "gate"}]}, demo["admin"])
    thread, first, req = approved_transfer(demo, fake_llm)
    demo["alice"].groups.add(frozen)
    fake_llm.push("Your account is frozen, so the transfer was not made.")
    run_here(Run.objects.get(parent_run=first).pk)
    assert not Transfer.objects.exists()
    assert "no longer allow it, so it was not run" in told_about(fake_llm, "c1")


def test_an_approved_call_the_policy_still_allows_runs(demo, fake_llm):
    """The re-check refuses only a block: a policy changed in another way (higher risk) runs the call."""
    from django.contrib.auth.models import Group

    from agents.catalog.models import Transfer

    thread, first, req = approved_transfer(demo, fake_llm)
    approval_services.save_policy("transfer_money", {"mode": "always", "approver_kind": "group", "risk": "high",
                                                     "approver_group": Group.objects.get(name="finance")}, demo["admin"])
    fake_llm.push("Done.")
    run_here(Run.objects.get(parent_run=first).pk)
    assert Transfer.objects.count() == 1
