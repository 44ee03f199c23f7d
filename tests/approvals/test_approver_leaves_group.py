"""An approval of a quorum counts only while its author may still decide the request, by the rule that
decides who may approve now (approvals.access.may_decide), at the moment the quorum is judged. Before,
finn approved, was taken out of finance, and one more approval made the quorum of two: his still counted.
Only a switched-off account's approval stopped counting (its own rule, beside this one)."""

import pytest
from django.contrib.auth.models import Group, User

from approvals import selectors, services
from approvals.models import AuditEvent
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db


@pytest.fixture
def members(demo):
    req = make_request("alice", required=2)
    fay = User.objects.create_user("fay", email="fay@example.com")
    gus = User.objects.create_user("gus", email="gus@example.com")
    for member in (fay, gus):
        member.groups.add(req.approver_group)
    return req, demo["finn"], fay, gus


def _leave_finance(finn):
    finn.groups.remove(Group.objects.get(name="finance"))


def _give_alices_address(finn):  # four eyes by address: his account is now another of alice's
    finn.email = "ALICE@example.com "
    finn.save()


@pytest.mark.parametrize("lose", [_leave_finance, _give_alices_address])
def test_an_approval_stops_counting_once_its_author_may_no_longer_decide(members, api, login, lose):
    req, finn, fay, gus = members
    assert services.decide(req.pk, finn, "approve").status == "pending"
    lose(finn)
    # shown as not counting while it waits: the request page, the reading pane and the API alike
    q = selectors.quorum(approval=selectors.with_decisions(approval=req))
    assert (q["have"], [d.user for d in q["set_aside"]]) == (0, [finn])
    assert api("admin").get(f"/api/approvals/{req.pk}/").json()["approvals"] == 0
    page = login("admin").get(f"/inbox/{req.pk}/").content.decode()
    assert "Approvals 0 of 2" in page
    assert "approval no longer counted: they may no longer decide this request" in page
    assert "2 approvals (0 so far)" in login("admin").get(f"/inbox/{req.pk}/?partial=preview").content.decode()

    assert services.decide(req.pk, fay, "approve").status == "pending"  # 1 of 2: finn's does not count
    assert AuditEvent.objects.filter(request=req, action="withdrawn", before__approved_by=["finn"]).exists()
    assert services.decide(req.pk, gus, "approve").status == "approved"


def test_a_withdrawn_approval_stays_withdrawn_when_its_author_may_decide_again(members):
    req, finn, fay, gus = members
    services.decide(req.pk, finn, "approve")
    _leave_finance(finn)
    services.decide(req.pk, fay, "approve")  # judged now: finn's is withdrawn for good
    finn.groups.add(Group.objects.get(name="finance"))
    q = selectors.quorum(approval=selectors.with_decisions(approval=req))
    assert (q["have"], [d.user for d in q["set_aside"]]) == (1, [finn])
    assert services.decide(req.pk, finn, "approve").status == "approved"  # he may approve again, anew


def test_an_approval_given_as_escalation_counts_only_while_escalated(members):
    """The escalation group decides once escalated; a policy change that drops the escalation takes that
    right back, and the approvals it gave with it."""
    req, finn, fay, gus = members
    ops = Group.objects.create(name="ops")
    olga = User.objects.create_user("olga", email="olga@example.com")
    olga.groups.add(ops)
    from django.utils import timezone
    type(req).objects.filter(pk=req.pk).update(escalation_group=ops, escalated_at=timezone.now())
    assert services.decide(req.pk, olga, "approve").status == "pending"
    type(req).objects.filter(pk=req.pk).update(escalated_at=None)
    assert services.decide(req.pk, fay, "approve").status == "pending"
    assert services.decide(req.pk, gus, "approve").status == "approved"


def test_a_decided_requests_approvals_stay_as_they_were_counted(members, login):
    req, finn, fay, gus = members
    services.decide(req.pk, finn, "approve")
    services.decide(req.pk, fay, "approve")
    _leave_finance(finn)
    assert "Approvals 2 of 2" in login("admin").get(f"/inbox/{req.pk}/").content.decode()
