"""An outside agent's request whose arguments a reviewer edited keeps the agent's own headline (there
are no other words for it), which described the call as asked: the inbox row, the reading pane, the
request page and the mail said "Delete the contact a@example.com" over an edit to b@example.com, with
no mark anywhere on the list. Each now says that the arguments were edited."""

import pytest
from django.core import mail

from approvals import mail as approval_mail
from approvals import services
from approvals.mail_links import request_mails
from approvals.models import ApprovalRequest

pytestmark = pytest.mark.django_db

NOTE = "own words, written for the arguments it asked; a reviewer has edited them since."
MAIL_NOTE = "The line above is the agent's own words, written for the arguments it asked"


def _asked(api, email="a@example.com"):
    resp = api("alice").post("/api/approvals/", {
        "tool_name": "crm.delete_contact", "arguments": {"email": email},
        "schema": {"type": "object", "properties": {"email": {"type": "string"}}},
        "description": f"Delete the contact {email}"}, format="json")
    assert resp.status_code == 201, resp.content
    req = ApprovalRequest.objects.get(pk=resp.json()["id"])
    ApprovalRequest.objects.filter(pk=req.pk).update(required_approvals=2)  # the edit waits for a second
    return req


def _pages(client, req):
    return {url: client.get(url).content.decode() for url in (
        "/inbox/?scope=all&status=all&partial=rows", f"/inbox/{req.pk}/?partial=preview", f"/inbox/{req.pk}/")}


def test_an_edited_outside_request_says_so_everywhere(api, login, demo):
    req = _asked(api)
    services.decide(req.pk, demo["rita"], "approve", arguments={"email": "b@example.com"})
    req.refresh_from_db()
    assert req.status == "pending" and req.description == "Delete the contact a@example.com"
    for url, page in _pages(login("finn"), req).items():
        assert "edited-mark" in page, url
        assert NOTE in page, url
    mail.outbox.clear()
    request_mails(req)
    assert mail.outbox and all(MAIL_NOTE in m.body and "b@example.com" in m.body for m in mail.outbox)
    mail.outbox.clear()
    approval_mail.reminder(req, ["finn@example.com"])
    assert [MAIL_NOTE in m.body for m in mail.outbox] == [True]


def test_a_request_nobody_edited_has_no_mark(api, login, demo):
    req = _asked(api, "c@example.com")
    for url, page in _pages(login("finn"), req).items():
        assert "edited-mark" not in page and NOTE not in page, url
    mail.outbox.clear()
    request_mails(req)
    assert mail.outbox and not any(MAIL_NOTE in m.body for m in mail.outbox)


def test_an_edited_own_tools_row_is_marked(api, login, demo):
    """Our own tools describe the edit anew; the row still says the arguments are not as asked."""
    from tests.inbox_helpers import make_request

    req = make_request("alice", required=2)
    services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 250})
    rows = login("admin").get("/inbox/?scope=all&status=all&partial=rows").content.decode()
    row = rows.split(f'data-approval-id="{req.pk}"')[1].split("</tr>")[0]
    assert "edited-mark" in row and "what runs is not what the agent asked" in row


def test_an_outside_request_is_edited_on_its_page(api, login, demo):
    """Its page said the tool could not be edited, while the API took edits against its schema."""
    req = _asked(api, "d@example.com")
    ApprovalRequest.objects.filter(pk=req.pk).update(required_approvals=1)
    finn = login("finn")
    page = finn.get(f"/inbox/{req.pk}/").content.decode()
    assert 'id="not-editable"' not in page and 'id="approval-schema"' in page
    resp = finn.post(f"/inbox/{req.pk}/", {"action": "approve", "arguments_json": '{"email": "e@example.com"}'})
    assert resp.status_code == 302, resp.content.decode()[:500]
    req.refresh_from_db()
    assert req.status == "modified" and req.final_arguments == {"email": "e@example.com"}


@pytest.mark.parametrize("agent", ["own", "outside"])
def test_an_edit_back_to_the_arguments_asked_leaves_no_mark_whatever_its_key_order(api, login, demo, agent):
    """The list asks the database whether the arguments are as asked; JSON on SQLite is text, and an
    edit back to them with its keys in another order was marked on the list and not on the page."""
    from tests.inbox_helpers import make_request

    if agent == "own":
        from django.contrib.auth.models import Group

        req = make_request("alice", required=2)
        demo["rita"].groups.add(Group.objects.get(name="finance"))
        services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 250})
    else:
        ApprovalRequest.objects.filter(pk=_asked(api, "f@example.com").pk).update(
            arguments={"email": "f@example.com", "note": "x"},
            schema={"type": "object", "properties": {"email": {"type": "string"}, "note": {"type": "string"}}})
        req = ApprovalRequest.objects.get(description="Delete the contact f@example.com")
        services.decide(req.pk, demo["finn"], "approve", arguments={"email": "g@example.com", "note": "x"})
    services.decide(req.pk, demo["rita"], "approve", arguments=dict(reversed(list(req.arguments.items()))))
    req.refresh_from_db()
    assert req.status == "pending" and req.final_arguments == req.arguments and not req.edited
    for url, page in _pages(login("admin"), req).items():
        assert "edited-mark" not in page, url


def test_the_list_and_the_page_agree_on_a_number_written_otherwise(api, login, demo):
    """500 edited to 500.0 is an edit by digest (what an approval approves, the page's mark, the
    status): PostgreSQL's jsonb equality, where 500 = 500.0, left the list's row unmarked."""
    req = _asked(api, "f@example.com")
    ApprovalRequest.objects.filter(pk=req.pk).update(
        arguments={"email": "f@example.com", "limit": 500},
        schema={"type": "object", "properties": {"email": {"type": "string"}, "limit": {"type": "number"}}})
    services.decide(req.pk, demo["rita"], "approve", arguments={"email": "f@example.com", "limit": 500.0})
    req.refresh_from_db()
    assert req.final_arguments == {"email": "f@example.com", "limit": 500.0} and req.edited
    pages = _pages(login("finn"), req)
    row = pages["/inbox/?scope=all&status=all&partial=rows"].split(f'data-approval-id="{req.pk}"')[1].split("</tr>")[0]
    assert "edited-mark" in row
    assert "edited-mark" in pages[f"/inbox/{req.pk}/"]
