"""A low-risk request whose policy approves it at its deadline approves the call as it was asked, and
nothing else: an edit needs the quorum of the request. Before, one approver of a quorum of two edited
the arguments, and the deadline approved (and ran) that edit with one approval of two."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail
from django.utils import timezone

from approvals import services
from approvals.models import ApprovalRequest, AuditEvent
from tests.helpers import transfer_request

pytestmark = pytest.mark.django_db


def _due(req):
    ApprovalRequest.objects.filter(pk=req.pk).update(expires_at=timezone.now() - timedelta(seconds=1))


@pytest.fixture
def low_risk(demo):
    """A transfer two of finance approve, or its deadline (low risk), as the policy in force says."""
    services.save_policy("transfer_money", {
        "mode": "always", "approver_kind": "group", "approver_group": Group.objects.get(name="finance"),
        "required_approvals": 2, "risk": "low", "timeout_seconds": 3600, "timeout_action": "approve"}, demo["admin"])
    req = transfer_request(demo["alice"])
    assert (req.required_approvals, req.risk, req.timeout_action) == (2, "low", "approve")
    return req


def test_an_edit_one_approver_made_is_not_approved_by_the_deadline(demo, low_risk, login):
    edited = {**low_risk.arguments, "amount": 400.0}
    assert services.decide(low_risk.pk, demo["finn"], "approve", arguments=edited).status == "pending"
    page = login("admin").get(f"/inbox/{low_risk.pk}/").content.decode()
    assert "then rejected automatically" in page and "then approved automatically" not in page
    _due(low_risk)
    assert services.expire(low_risk.pk)
    req = ApprovalRequest.objects.get(pk=low_risk.pk)
    assert req.status == "expired" and req.final_arguments == edited  # nothing runs
    after = AuditEvent.objects.get(request=req, action="expired").after
    assert after["status"] == "expired"
    assert "edited" in after["reason"] and "not approved automatically" in req.feedback


def test_the_call_as_asked_is_approved_by_the_deadline(demo, low_risk):
    assert services.decide(low_risk.pk, demo["finn"], "approve").status == "pending"  # 1 of 2, as asked
    _due(low_risk)
    assert services.expire(low_risk.pk)
    req = ApprovalRequest.objects.get(pk=low_risk.pk)
    assert req.status == "approved" and req.final_arguments == req.arguments


def test_the_reminder_of_an_edited_request_says_it_will_not_be_approved_by_itself(
        demo, low_risk, django_capture_on_commit_callbacks):
    fay = User.objects.create_user("fay", email="fay@example.com")
    fay.groups.add(low_risk.approver_group)
    services.decide(low_risk.pk, demo["finn"], "approve", arguments={**low_risk.arguments, "amount": 400.0})
    ApprovalRequest.objects.filter(pk=low_risk.pk).update(remind_at=timezone.now() - timedelta(seconds=1))
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert services.remind(low_risk.pk)
    bodies = "\n".join(m.body for m in mail.outbox)
    assert "then it is rejected automatically" in bodies and "approved automatically" not in bodies


def test_a_policy_that_no_longer_approves_at_the_deadline_applies_to_waiting_requests(demo, low_risk):
    """The same class: the policy in force says what runs unattended. A policy changed to reject at the
    deadline left its waiting requests to approve themselves; a change the other way loosens none."""
    services.save_policy("transfer_money", {"timeout_action": "reject"}, demo["admin"])
    req = ApprovalRequest.objects.get(pk=low_risk.pk)
    assert req.timeout_action == "reject" and not req.approves_at_deadline
    assert AuditEvent.objects.filter(request=req, action="policy_changed", after__timeout_action="reject").exists()
    services.save_policy("transfer_money", {"timeout_action": "approve"}, demo["admin"])
    assert ApprovalRequest.objects.get(pk=low_risk.pk).timeout_action == "reject"  # never loosened
    _due(low_risk)
    assert services.expire(low_risk.pk)
    assert ApprovalRequest.objects.get(pk=low_risk.pk).status == "expired"
