"""A mailed link shows its request only to someone who may still decide it. Before, a recipient taken
out of the group (or whose group a policy change took the request from) was refused the decision but
the refusal page still showed the request as it now stands: the arguments another approver had
edited since, the agent's reason, its impact; the inbox and the API answer 404 to them."""


import pytest

from approvals import services
from approvals.models import ApprovalRequest, Decision
from tests.approvals.test_mail_links import _links, _mails_to
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db


def _approve_link(outbox, email):
    return _links(_mails_to(outbox, email)[0])["approve"]


def test_a_recipient_who_left_the_group_reads_nothing_of_the_request(demo, fay, client, mailoutbox,
                                                                     django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        req = make_request("alice", group="finance", required=2, reason="Secret reason 4711")
    link = _approve_link(mailoutbox, "fay@example.com")
    fay.groups.clear()  # moved to another team
    services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 98765.0})
    assert client.get(f"/inbox/{req.pk}/").status_code in (302, 404)  # not signed in: nothing there
    for page in (client.get(link), client.post(link)):
        text = page.content.decode()
        assert page.status_code == 403
        assert "You are no longer among the people who may decide this request." in text
        assert "98765" not in text and "Secret reason 4711" not in text and "amount" not in text
        assert 'id="mail-confirm-button"' not in text
    req.refresh_from_db()
    assert req.status == ApprovalRequest.Status.PENDING
    assert list(Decision.objects.filter(request=req).values_list("user__username", flat=True)) == ["finn"]
