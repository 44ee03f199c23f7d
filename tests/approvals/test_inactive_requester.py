"""A requester whose account is switched off: tools act for the requester, so their pending calls may be
rejected (the paused run ends) but never approved. Before, finance approved a transfer of someone who had
left, and it ran as them; a low-risk request set to approve at its deadline approved itself the same way."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from approvals import services
from approvals.models import ApprovalRequest, AuditEvent
from tests.helpers import transfer_request
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db


def _switch_off(user):
    user.is_active = False
    user.save()


@pytest.mark.parametrize("edit", [None, {"amount": 60.0}])
def test_an_approval_for_a_switched_off_requester_is_refused(api, demo, edit):
    req = transfer_request(demo["alice"], amount=50.0)
    _switch_off(demo["alice"])
    body = {"decision": "approve", **({"arguments": {**req.arguments, **edit}} if edit else {})}
    resp = api("finn").post(f"/api/approvals/{req.pk}/decide/", body, format="json")
    assert resp.status_code == 409, resp.content
    assert resp.json()["code"] == "requester_inactive"
    req.refresh_from_db()
    assert req.status == "pending" and req.final_arguments is None and not req.decisions.exists()
    resp = api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "reject", "feedback": "has left"},
                            format="json")
    assert resp.status_code == 200, resp.content
    assert ApprovalRequest.objects.get(pk=req.pk).status == "rejected"


def test_a_switched_off_requesters_request_is_not_approved_by_its_deadline(demo):
    req = make_request("alice", risk="low")
    ApprovalRequest.objects.filter(pk=req.pk).update(timeout_action="approve",
                                                     expires_at=timezone.now() - timedelta(seconds=1))
    _switch_off(demo["alice"])
    assert services.expire(req.pk)
    assert ApprovalRequest.objects.get(pk=req.pk).status == "expired"
    assert AuditEvent.objects.filter(request=req, action="expired").exists()


def test_a_reactivated_requesters_request_is_approvable_again(demo):
    req = transfer_request(demo["alice"], amount=50.0)
    _switch_off(demo["alice"])
    with pytest.raises(services.RequesterInactive):
        services.decide(req.pk, demo["finn"], "approve")
    demo["alice"].is_active = True
    demo["alice"].save()
    assert services.decide(req.pk, demo["finn"], "approve").status == "approved"


def test_an_approval_stops_counting_while_its_approvers_account_is_switched_off(demo, login):
    """As a held decision of an account switched off is dropped: finn's approval, then finn switched off,
    made a quorum of two with fay's alone."""
    fay = User.objects.create_user("fay", email="fay@example.com")
    gus = User.objects.create_user("gus", email="gus@example.com")
    req = make_request("alice", required=2)
    for member in (fay, gus):
        member.groups.add(req.approver_group)
    assert services.decide(req.pk, demo["finn"], "approve").status == "pending"
    _switch_off(demo["finn"])
    assert services.decide(req.pk, fay, "approve").status == "pending"  # 1 of 2: finn's no longer counts
    page = login("admin").get(f"/inbox/{req.pk}/").content.decode()
    assert "Approvals 1 of 2" in page and "approval no longer counted" in page
    assert services.decide(req.pk, gus, "approve").status == "approved"
    _switch_off(fay)  # a quorum reached stays as it was
    demo["finn"].is_active = True
    demo["finn"].save()
    page = login("admin").get(f"/inbox/{req.pk}/").content.decode()
    assert "Approvals 2 of 2" in page  # finn's approval, withdrawn when fay's found it switched off
    assert AuditEvent.objects.filter(request=req, action="withdrawn", before__approved_by=["finn"]).exists()


def test_the_request_page_says_a_switched_off_requesters_call_can_only_be_rejected(demo, login):
    """The page offered Approve (and an editor) as for anyone; only the click said, as an error, that the
    account was switched off. It now says so first and offers Reject alone."""
    req = transfer_request(demo["alice"], amount=50.0)
    _switch_off(demo["alice"])
    finn = login("finn")
    page = finn.get(f"/inbox/{req.pk}/").content.decode()
    assert "alice's account is switched off, so this call cannot run for them: you can only reject it." in page
    assert 'id="approve"' not in page and 'id="reject"' in page
    assert 'readonly aria-describedby="requester-off"' in page
    preview = finn.get(f"/inbox/{req.pk}/?partial=preview").content.decode()
    assert "alice's account is switched off: reject only." in preview and 'data-decide="approve"' not in preview
    assert 'data-decide="reject"' in preview


def test_an_approval_set_aside_for_a_switched_off_approver_says_why(demo, login):
    req = make_request("alice", required=2)
    services.decide(req.pk, demo["finn"], "approve")
    _switch_off(demo["finn"])
    page = login("admin").get(f"/inbox/{req.pk}/").content.decode()
    assert "approval no longer counted: their account is switched off" in page


def test_the_inbox_row_says_a_requesters_account_is_switched_off(demo, login):
    req = transfer_request(demo["alice"], amount=50.0)
    _switch_off(demo["alice"])
    rows = login("finn").get("/inbox/?partial=rows").content.decode()
    assert f'data-approval-id="{req.pk}"' in rows
    assert 'data-requester-off="alice"' in rows and "account switched off" in rows
