"""Tools act for the chat's owner: a call of an account switched off runs nothing, whenever it comes.
Before, only an approval of a switched-off requester's request was refused: a transfer finance approved
a moment before the account was switched off still moved the money when its continuation ran, and a run
going on when the account was switched off kept running its tools that need no approval (a balance
read, a note) as the person who had left."""

import json

import pytest

from agents import services
from agents.catalog.models import Transfer
from agents.models import Message, Run, Thread, ToolCall
from agents.runtime import runner
from approvals import services as approval_services
from approvals.models import ApprovalRequest
from tests.helpers import TRANSFER_ARGS, run_here

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("transfers_to_finance")]

def switch_off(user):
    """Without a save: the moment before agents/account_off.py ends the account's runs (an update that
    sends no signal waits for the beat's sweep), when only the runtime's own checks stand."""
    type(user).objects.filter(pk=user.pk).update(is_active=False)


def test_a_transfer_approved_before_its_requester_was_switched_off_does_not_run(demo, fake_llm):
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    fake_llm.push({"tool_calls": [{"id": "c1", "name": "transfer_money", "arguments": json.dumps(TRANSFER_ARGS)}]})
    first = run_here(services.start_run(thread, demo["alice"], "Pay Bob 500").pk)
    assert first.status == "interrupted"
    req = ApprovalRequest.objects.get(thread_ref=thread.id)
    assert approval_services.decide(req.pk, demo["finn"], "approve").status == "approved"
    switch_off(demo["alice"])  # she leaves before the continuation's worker reaches the call
    asked = len(fake_llm.requests)
    assert run_here(Run.objects.get(parent_run=first).pk).status == "cancelled"  # nothing more runs as her
    assert not Transfer.objects.exists()
    call = ToolCall.objects.get(pk="c1")
    assert call.status != "succeeded"
    told = Message.objects.get(thread=thread, role="tool", tool_call_id="c1").content  # the history's result
    assert "switched off" in told and "not executed" in told
    assert len(fake_llm.requests) == asked  # the model is not asked again for an account switched off


def test_a_call_needing_no_approval_does_not_run_for_a_switched_off_owner(demo, fake_llm, monkeypatch):
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    pk = services.start_run(thread, demo["alice"], "What is my balance?").pk
    fake_llm.push({"tool_calls": [{"id": "b1", "name": "check_balance", "arguments": json.dumps(
        {"account": "1234567890"})}]}, "I cannot read it.")
    ran = []
    # switched off while the run runs: between the model's answer and the call
    monkeypatch.setattr(runner.Runner, "execute_call", _spy(runner.Runner.execute_call, ran,
                                                            before=lambda: switch_off(demo["alice"])))
    run_here(pk)
    assert ran == ["b1"]  # the runtime got as far as executing it
    call = ToolCall.objects.get(pk="b1")
    assert call.status != "succeeded" and "switched off" in call.result


def _spy(real, seen, before=lambda: None):
    def spy(self, tc, *args, **kwargs):
        seen.append(tc.pk)
        before()
        return real(self, tc, *args, **kwargs)
    return spy
