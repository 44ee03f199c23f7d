"""A request escalates once. Before, a policy change that routed an escalated request to another group
cleared its escalation, and the next sweep escalated it again: a second `escalated` audit row, mail and
inbox notice to a group that had been told already. A reroute keeps the escalation (nothing resets it)."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail
from django.utils import timezone

from approvals import services
from approvals.models import ApprovalRequest, AuditEvent
from tests.helpers import transfer_request

pytestmark = pytest.mark.django_db


def _policy(admin, group, escalation):
    services.save_policy("transfer_money", {
        "mode": "always", "approver_kind": "group", "approver_group": Group.objects.get(name=group),
        "timeout_seconds": 3600, "escalation_group": Group.objects.get(name=escalation)}, admin)


@pytest.fixture
def escalated(demo, django_capture_on_commit_callbacks):
    User.objects.create_user("tess", email="tess@example.com").groups.add(Group.objects.create(name="treasury"))
    User.objects.create_user("ada", email="ada@example.com").groups.add(Group.objects.create(name="audit"))
    demo["admin"].email = demo["admin"].email or "admin@example.com"
    demo["admin"].save()
    _policy(demo["admin"], "finance", "oncall")
    req = transfer_request(demo["alice"])
    ApprovalRequest.objects.filter(pk=req.pk).update(escalate_at=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert services.process_deadlines(req.pk) == ["escalated"]
    return req


@pytest.mark.parametrize("escalation", ["oncall", "audit"])
def test_a_rerouted_escalated_request_does_not_escalate_again(demo, escalated, escalation,
                                                              django_capture_on_commit_callbacks):
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        _policy(demo["admin"], "treasury", escalation)
    req = ApprovalRequest.objects.get(pk=escalated.pk)
    assert req.approver_group.name == "treasury"
    assert req.escalated_at is not None and req.escalation_group.name == escalation
    # the group escalated to decides at once; a new one is told by the reroute, once, as an escalation
    assert services.can_decide(demo["admin"], req) == (escalation == "oncall")
    assert services.can_decide(User.objects.get(username="ada"), req) == (escalation == "audit")
    escalation_mails = [m.to for m in mail.outbox if m.subject.endswith("Escalated: transfer_money needs a decision")]
    assert escalation_mails == ([] if escalation == "oncall" else [["ada@example.com"]])
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert services.process_deadlines(req.pk) == []
    assert AuditEvent.objects.filter(request=req, action="escalated").count() == 1
    assert mail.outbox == []
