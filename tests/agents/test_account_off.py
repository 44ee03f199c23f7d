"""An account switched off leaves nothing waiting to act for it, whichever way it was switched off.

Before, its pending requests stayed in every reviewer's inbox until their deadline (an approval refused
with requester_inactive, nobody told why until they tried) and its paused runs stayed paused for good.
Now its pending requests are withdrawn (the reason on the request, in its audit row and on its page), its
queued runs never start and a paused one ends cancelled without asking the model again: on the save's
commit (the admin's form or action, a script), or by the beat's sweep for an update that sent no signal."""

import json

import pytest
from django.contrib.auth.models import User

from agents import services, tasks
from agents.models import Message, Run, Thread, ToolCall
from approvals import services as approval_services
from approvals.models import REQUESTER_OFF, ApprovalRequest, AuditEvent
from tests.helpers import TRANSFER_ARGS, run_continuation, run_here, transfer_request

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("transfers_to_finance")]


def paused(demo, fake_llm):
    """alice's run paused on a transfer finance decides: (the run, its pending request)."""
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    fake_llm.push({"tool_calls": [{"id": "c1", "name": "transfer_money", "arguments": json.dumps(TRANSFER_ARGS)}]})
    run = run_here(services.start_run(thread, demo["alice"], "Pay Bob 500").pk)
    assert run.status == "interrupted"
    return run, ApprovalRequest.objects.get(thread_ref=thread.id, status="pending")


def assert_withdrawn(req):
    req.refresh_from_db()
    assert req.status == "cancelled" and req.feedback == REQUESTER_OFF and req.decided_by is None
    audit = AuditEvent.objects.get(request=req, action="cancelled")
    assert audit.after["feedback"] == REQUESTER_OFF and audit.actor is None


def test_switched_off_by_a_save_its_requests_are_withdrawn_and_its_paused_run_ends(demo, fake_llm, login):
    run, req = paused(demo, fake_llm)
    asked = len(fake_llm.requests)
    alice = demo["alice"]
    alice.is_active = False
    alice.save()  # as a script or a management command does
    assert_withdrawn(req)
    with pytest.raises(approval_services.NotPending):  # nobody approves it any more, nor needs to
        approval_services.decide(req.pk, demo["finn"], "approve")
    cont = run_continuation(run)
    assert cont.status == "cancelled"
    assert len(fake_llm.requests) == asked  # the model was not asked anything for her
    assert ToolCall.objects.get(pk="c1").status == "cancelled"
    told = Message.objects.get(thread=run.thread, role="tool", tool_call_id="c1").content
    assert "cancelled and not executed" in told  # the history stays a valid conversation
    page = login("finn").get(f"/inbox/{req.pk}/").content.decode()
    assert "Withdrawn: alice's account was switched off, so the call will not run for them." in page


def test_the_admins_action_switches_accounts_off_and_ends_their_work(demo, login):
    alice = demo["alice"]
    outside = transfer_request(alice)  # no run of ours: an agent running elsewhere asked
    queued = services.start_run(Thread.objects.create(owner=alice, agent="banking"), alice, "hello")
    bobs = transfer_request(demo["bob"])
    resp = login("admin").post("/admin/auth/user/", {"action": "switch_off", "_selected_action": [alice.pk]})
    assert resp.status_code == 302
    assert not User.objects.get(pk=alice.pk).is_active
    assert_withdrawn(outside)
    assert Run.objects.get(pk=queued.pk).status == "cancelled"
    assert ApprovalRequest.objects.get(pk=bobs.pk).status == "pending"  # nobody else's


def test_an_update_that_sends_no_signal_is_found_by_the_beats_sweep(demo):
    req = transfer_request(demo["alice"])
    User.objects.filter(pk=demo["alice"].pk).update(is_active=False)  # a bulk update, a directory sync
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"
    tasks.withdraw_switched_off()
    assert_withdrawn(req)
    tasks.withdraw_switched_off()  # again: nothing left to do, nothing raised
    assert AuditEvent.objects.filter(request=req, action="cancelled").count() == 1


def test_an_account_switched_on_again_before_the_sweep_keeps_its_requests(demo):
    req = transfer_request(demo["alice"])
    User.objects.filter(pk=demo["alice"].pk).update(is_active=False)
    User.objects.filter(pk=demo["alice"].pk).update(is_active=True)
    tasks.withdraw_switched_off()
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"


def test_a_run_that_starts_for_an_account_switched_off_ends_without_asking_the_model(demo, fake_llm):
    """Before the sweep has come (an update that sent no signal), the worker's own check stands."""
    queued = services.start_run(Thread.objects.create(owner=demo["alice"], agent="banking"), demo["alice"], "hello")
    User.objects.filter(pk=demo["alice"].pk).update(is_active=False)
    assert run_here(queued.pk).status == "cancelled"
    assert fake_llm.requests == []
