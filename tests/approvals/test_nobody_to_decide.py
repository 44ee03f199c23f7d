"""A request routed to a group where nobody may decide it (no member, every member switched off, or only
the requester, whom four eyes keeps out) waited silently to its deadline. The admins are told now, once
per request and group: an audit row (no_deciders), a mail to staff and ADMINS, and a staff inbox notice."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail
from django.utils import timezone

from approvals import services
from approvals.models import ApprovalRequest, AuditEvent
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db


def _alerts():
    return [m for m in mail.outbox if "admin@example.com" in m.to and "Nobody can decide" in m.subject]


def _nobody(kind, demo):
    group = Group.objects.create(name="treasury")
    if kind == "switched off":
        User.objects.create_user("tess", email="tess@example.com", is_active=False).groups.add(group)
    elif kind == "only the requester":
        demo["alice"].groups.add(group)
        User.objects.create_user("alice2", email=" Alice@Example.com").groups.add(group)  # her second account
    return group


@pytest.mark.parametrize("kind", ["empty", "switched off", "only the requester"])
def test_a_request_nobody_may_decide_tells_the_admins_once(demo, told, kind, django_capture_on_commit_callbacks):
    _nobody(kind, demo)
    with django_capture_on_commit_callbacks(execute=True):
        req = make_request("alice", group="treasury")
    rows = AuditEvent.objects.filter(request=req, action="no_deciders")
    assert [r.after["group"] for r in rows] == ["treasury"]
    assert len(_alerts()) == 1 and "treasury" in _alerts()[0].body
    assert [k for k, _ in told] == ["approval.no_deciders"]
    ApprovalRequest.objects.filter(pk=req.pk).update(remind_at=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert services.remind(req.pk)
    assert rows.count() == 1 and len(_alerts()) == 1 and len(told) == 1  # once


def test_an_escalation_to_a_group_nobody_may_decide_tells_the_admins(demo, told, django_capture_on_commit_callbacks):
    _nobody("switched off", demo)
    req = make_request("alice")  # finance: finn decides
    ApprovalRequest.objects.filter(pk=req.pk).update(escalation_group=Group.objects.get(name="treasury"),
                                                     escalate_at=timezone.now() - timedelta(seconds=1))
    assert not AuditEvent.objects.filter(request=req, action="no_deciders").exists()
    with django_capture_on_commit_callbacks(execute=True):
        assert services.escalate(req.pk)
    assert [r.after for r in AuditEvent.objects.filter(request=req, action="no_deciders")] == [
        {"group": "treasury", "as": "escalation"}]
    assert len(_alerts()) == 1


def test_a_group_emptied_while_its_request_waits_is_found_at_the_next_deadline(demo, told,
                                                                               django_capture_on_commit_callbacks):
    req = make_request("alice")
    assert not _alerts()
    demo["finn"].groups.clear()
    ApprovalRequest.objects.filter(pk=req.pk).update(remind_at=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert services.remind(req.pk)
    assert len(_alerts()) == 1


def test_a_group_someone_may_decide_tells_nobody(demo, told, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        make_request("alice")
    assert not _alerts() and not told and not AuditEvent.objects.filter(action="no_deciders").exists()
