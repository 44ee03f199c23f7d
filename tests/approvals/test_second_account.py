"""Four eyes across a person's accounts: an account with the requester's address (case and spaces aside)
is the same person. Before, alice's second account in finance approved alice's transfers in the inbox, the
API showed it could, and the request mail sent the one-click Approve link to alice's own mailbox."""

import pytest
from django.contrib.auth.models import User

from approvals import services
from approvals.models import ApprovalRequest
from tests.helpers import finance_member
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db


@pytest.fixture
def alice_at_finance(demo):
    """alice's second account, in finance, under her address written otherwise."""
    return finance_member("alice.fin", "Alice@Example.com ")


def _request(captured):
    with captured(execute=True):
        return make_request("alice", group="finance")


def test_a_second_account_of_the_requester_may_not_decide(demo, alice_at_finance, client, mailoutbox,
                                                          django_capture_on_commit_callbacks):
    req = _request(django_capture_on_commit_callbacks)
    assert sorted(m.to[0] for m in mailoutbox) == ["finn@example.com"]  # no link to alice's mailbox
    with pytest.raises(services.Forbidden):
        services.decide(req.pk, alice_at_finance, "approve")
    client.force_login(alice_at_finance)
    rows = client.get("/inbox/?scope=all").content.decode()
    assert f'value="{req.pk}"' not in rows  # no box to select it for a bulk decision
    assert client.get(f"/api/approvals/{req.pk}/").json()["can_decide"] is False
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"
    client.force_login(demo["finn"])
    assert f'value="{req.pk}"' in client.get("/inbox/?scope=all").content.decode()
    assert services.decide(req.pk, demo["finn"], "approve").status == "approved"


def test_accounts_without_an_address_are_not_one_person(demo, django_capture_on_commit_callbacks):
    User.objects.filter(username__in=["alice", "finn"]).update(email="")
    req = _request(django_capture_on_commit_callbacks)
    assert services.decide(req.pk, User.objects.get(username="finn"), "approve").status == "approved"


def test_the_requesters_address_is_read_as_four_eyes_reads_it_in_every_list(demo, alice_at_finance,
                                                                             django_capture_on_commit_callbacks):
    """The waiting list compared the requester's stored address case-blind but with its spaces, while
    deciding and the mails trim them: a requester stored as " alice@example.com" had her request
    listed as waiting for her second account, which may not decide it."""
    from approvals import inbox

    User.objects.filter(username="alice").update(email=" alice@example.com")
    req = _request(django_capture_on_commit_callbacks)
    assert not ApprovalRequest.objects.filter(inbox.mine(alice_at_finance), pk=req.pk).exists()
    assert ApprovalRequest.objects.filter(inbox.mine(demo["finn"]), pk=req.pk).exists()
