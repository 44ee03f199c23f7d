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


@pytest.mark.parametrize("address", ["Alice+Finance@Example.com", " alice+a+b@example.com"])
def test_a_sub_address_of_the_requester_is_her_mailbox_too(demo, client, mailoutbox, address,
                                                           django_capture_on_commit_callbacks):
    """alice+finance@example.com is delivered to alice@example.com (RFC 5233): an account under it was
    another person, approved alice's requests and was mailed their one-click Approve links."""
    from approvals import access, inbox

    second = finance_member("alice.plus", address)
    assert access.same_person(second, demo["alice"]) and access.mail_key(address) == "alice@example.com"
    req = _request(django_capture_on_commit_callbacks)
    assert sorted(m.to[0] for m in mailoutbox) == ["finn@example.com"]
    with pytest.raises(services.Forbidden):
        services.decide(req.pk, second, "approve")
    assert not ApprovalRequest.objects.filter(inbox.mine(second), pk=req.pk).exists()
    client.force_login(second)
    assert client.get(f"/api/approvals/{req.pk}/").json()["can_decide"] is False
    # and the other way round: her request from the tagged account, her plain one in finance
    User.objects.filter(pk=demo["alice"].pk).update(email="x@example.com")
    plain = finance_member("alice.plain", "alice@example.com")
    with django_capture_on_commit_callbacks(execute=True):
        own = make_request(second, group="finance")
    assert not ApprovalRequest.objects.filter(inbox.mine(plain), pk=own.pk).exists()
    with pytest.raises(services.Forbidden):
        services.decide(own.pk, plain, "approve")


@pytest.mark.parametrize("address", ["alicia@example.com", "+alice@example.com", "alice@example+x.com"])
def test_other_addresses_stay_other_people(demo, address, django_capture_on_commit_callbacks):
    """No tag, a tag with nothing before it, a plus after the @: not alice's mailbox, in Python and SQL alike."""
    from approvals import access, inbox

    other = finance_member("someone", address)
    assert not access.same_person(other, demo["alice"])
    req = _request(django_capture_on_commit_callbacks)
    assert ApprovalRequest.objects.filter(inbox.mine(other), pk=req.pk).exists()
    assert services.decide(req.pk, other, "approve").status == "approved"
