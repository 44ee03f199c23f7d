"""A request its groups cannot approve (nobody in them may decide it, or fewer than it needs) is
said in the requester's chat: the live card (CUSTOM approval_request) and the reload's snapshot
carry `outOfReach`, never for a request that can be decided."""

import json

import pytest
from django.contrib.auth.models import Group

from agents import services, snapshots
from agents.models import Run
from approvals import services as approval_services
from approvals.models import ApprovalRequest, AuditEvent
from tests.conftest import stream_events
from tests.helpers import TRANSFER_ARGS, finance_decides_transfers, finance_member, run_prompt

pytestmark = pytest.mark.django_db(transaction=True)


def paused_transfer_chat(demo, fake_llm, requester="alice"):
    """A chat whose run paused on a transfer finance decides: (thread, the live card, the request)."""
    fake_llm.push({"tool_calls": [{"id": "call_tm", "name": "transfer_money", "arguments": json.dumps(TRANSFER_ARGS)}]})
    thread = services.create_thread(demo[requester], "banking")
    assert run_prompt(thread, demo[requester], "Send bob 500").status == Run.Status.INTERRUPTED
    live = [e["value"] for e in stream_events(thread.pk)
            if e.get("type") == "CUSTOM" and e.get("name") == "approval_request"]
    assert len(live) == 1
    return thread, live[0], ApprovalRequest.objects.get(thread_ref=thread.pk)


def snapshot_card(thread):
    (card,) = snapshots.thread_snapshot(thread.pk)["approvals"]
    return card


def test_a_group_with_nobody_who_may_decide_is_said_live_and_after_a_reload(demo, fake_llm):
    finance_decides_transfers(demo["admin"])
    Group.objects.get(name="finance").user_set.clear()
    thread, live, req = paused_transfer_chat(demo, fake_llm)
    assert AuditEvent.objects.filter(request=req, action=AuditEvent.Action.NO_DECIDERS).exists()
    assert live["outOfReach"] == {"adminsTold": True}
    assert snapshot_card(thread)["outOfReach"] == {"adminsTold": True}
    # someone who may decide joins: a reload no longer says it
    finance_member("fiona", "fiona@example.com")
    assert "outOfReach" not in snapshot_card(thread)


def test_the_requester_alone_in_the_group_cannot_approve_their_own(demo, fake_llm):
    finance_decides_transfers(demo["admin"])
    finance = Group.objects.get(name="finance")
    finance.user_set.set([demo["alice"]])  # four eyes: her own request is not hers to decide
    thread, live, _req = paused_transfer_chat(demo, fake_llm)
    assert live["outOfReach"] == {"adminsTold": True}
    assert live["canDecide"] is False


def test_a_quorum_larger_than_the_group_is_said(demo, fake_llm):
    approval_services.save_policy("transfer_money", {
        "mode": "always", "approver_kind": "group", "approver_group": Group.objects.get(name="finance"),
        "required_approvals": 2}, demo["admin"])
    thread, live, req = paused_transfer_chat(demo, fake_llm)  # finance: finn alone
    assert AuditEvent.objects.filter(request=req, action=AuditEvent.Action.TOO_FEW_DECIDERS).exists()
    assert live["outOfReach"] == {"adminsTold": True}
    assert snapshot_card(thread)["outOfReach"] == {"adminsTold": True}


def test_a_shortage_that_came_later_is_said_without_claiming_the_admins_know(demo, fake_llm):
    """A change no signal announces (an update() in SQL, which the product makes none of) leaves the
    admins unwarned until the request's reminder: the card does not claim they know."""
    from django.contrib.auth.models import User

    finance_decides_transfers(demo["admin"])
    thread, live, req = paused_transfer_chat(demo, fake_llm)
    assert "outOfReach" not in live
    User.objects.filter(pk=demo["finn"].pk).update(is_active=False)  # no one left; nobody warned yet
    assert snapshot_card(thread)["outOfReach"] == {"adminsTold": False}


def test_a_shortage_a_membership_change_made_is_told_to_the_admins_at_once(demo, fake_llm):
    finance_decides_transfers(demo["admin"])
    thread, live, req = paused_transfer_chat(demo, fake_llm)
    demo["finn"].groups.remove(Group.objects.get(name="finance"))  # no one left: the admins are told as it commits
    assert snapshot_card(thread)["outOfReach"] == {"adminsTold": True}


def test_a_request_that_can_be_decided_says_nothing_of_the_kind(demo, fake_llm):
    finance_decides_transfers(demo["admin"])
    thread, live, req = paused_transfer_chat(demo, fake_llm)
    assert "outOfReach" not in live and "outOfReach" not in snapshot_card(thread)
    # decided, it is no longer a waiting request at all
    Group.objects.get(name="finance").user_set.clear()
    ApprovalRequest.objects.filter(pk=req.pk).update(status=ApprovalRequest.Status.REJECTED)
    assert "outOfReach" not in snapshot_card(thread)


def test_an_agui_client_hears_it_in_approval_status_too(demo, fake_llm):
    """A stock AG-UI client gets CUSTOM approval_status for a call someone else decides; its message
    said "waiting for a decision by finance" for a request nobody in finance may decide."""
    from agents.agui import custom_events

    finance_decides_transfers(demo["admin"])
    Group.objects.get(name="finance").user_set.clear()
    _thread, _live, req = paused_transfer_chat(demo, fake_llm)
    value = custom_events.approval_status(req).value
    assert value["outOfReach"] == {"adminsTold": True}
    assert value["message"].endswith("nobody can approve this request right now. The admins have been told.")
    finance_member("fiona", "fiona@example.com")
    value = custom_events.approval_status(ApprovalRequest.objects.get(pk=req.pk)).value
    assert "outOfReach" not in value and "waiting for a decision by finance" in value["message"]
