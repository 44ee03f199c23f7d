"""A quorum counts people, not accounts: two accounts with one address (case and spaces aside, as four
eyes reads it: access.same_person) are one approver. Before, a finance member's second account, also
in finance, gave the second approval of a request that needs two, so one person alone moved money
that policy said two people must approve."""

import pytest

from approvals import selectors, services
from approvals.models import ApprovalRequest, arguments_hash
from tests.helpers import finance_member
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db


@pytest.fixture
def finn_again(demo):
    """finn's second account, in finance too, under his address written otherwise."""
    return finance_member("finn.two", " FINN@example.com")


def test_a_second_account_does_not_make_a_quorum_of_two(demo, finn_again, fay):
    req = make_request("alice", group="finance", required=2)
    assert services.decide(req.pk, demo["finn"], "approve").status == "pending"
    with pytest.raises(services.AlreadyApproved):
        services.decide(req.pk, finn_again, "approve")
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"
    assert services.decide(req.pk, fay, "approve").status == "approved"


def test_the_quorum_counts_an_approval_per_person(demo, finn_again, fay):
    """Also as read (the page's 'Approvals n of m'), whatever wrote the rows."""
    req = make_request("alice", group="finance", required=2)
    for user in (demo["finn"], finn_again):
        req.decisions.create(user=user, decision="approve", arguments=req.arguments,
                             arguments_hash=arguments_hash(req.arguments))
    req = ApprovalRequest.objects.get(pk=req.pk)
    assert selectors.quorum(approval=selectors.with_decisions(approval=req))["have"] == 1


def test_a_request_one_account_approved_is_not_waiting_for_the_other(demo, finn_again, fay, client):
    req = make_request("alice", group="finance", required=2)
    services.decide(req.pk, demo["finn"], "approve")
    client.force_login(finn_again)
    assert f'data-approval-id="{req.pk}"' not in client.get("/inbox/?partial=rows").content.decode()
    client.force_login(fay)
    assert f'data-approval-id="{req.pk}"' in client.get("/inbox/?partial=rows").content.decode()


def test_the_request_page_tells_the_other_account_its_approval_is_given(demo, finn_again, client):
    req = make_request("alice", group="finance", required=2)
    services.decide(req.pk, demo["finn"], "approve")
    client.force_login(finn_again)
    assert "You have approved these arguments; 1 more approval must come from someone else." in \
        client.get(f"/inbox/{req.pk}/").content.decode()
