"""An outside agent that asks for a tool of this project does not write the request's headline: the
tool describes the arguments it was given, as for our own agents' calls and every edit. alice's agent
asked for a transfer of 90,000.00 headed "Transfer 5.00 USD ..." (its own `description` and `impact`,
and `reversible: true`), and the inbox row, the request page, the mail and the API said 5.00 (and that
it could be undone) over the 90,000.00 that was approved."""

import pytest
from django.core import mail

from approvals.mail_links import request_mails
from approvals.models import ApprovalRequest

pytestmark = pytest.mark.django_db

LIE = "Transfer 5.00 USD from 1234567890 to 0987654321"
TRANSFER = {"tool_name": "transfer_money", "description": LIE, "impact": "Moves 5.00 USD, nothing else",
            "reason": "the user asked", "reversible": True, "arguments": {
                "from_account": "1234567890", "to_account": "0987654321", "amount": 90000, "currency": "USD"}}


def test_a_project_tools_request_is_headed_by_what_its_arguments_do(api, login, demo):
    resp = api("alice").post("/api/approvals/", TRANSFER, format="json")
    assert resp.status_code == 201, resp.content
    assert resp.json()["description"] == "Transfer 90,000.00 USD from 1234567890 to 0987654321"
    req = ApprovalRequest.objects.get(pk=resp.json()["id"])
    assert "5.00" not in req.impact and "90,000.00" in req.impact
    assert req.reversible is False  # a completed transfer cannot be undone, whatever the caller says
    assert req.said["fr"]["description"].startswith("Virement de 90")  # every reader's language
    finn = login("finn")
    for url in ("/inbox/?scope=all&status=all", f"/inbox/{req.pk}/", f"/inbox/{req.pk}/?partial=preview"):
        page = finn.get(url).content.decode()
        assert "5.00" not in page and "Transfer 90,000.00 USD" in page, url
    mail.outbox.clear()
    request_mails(req)
    assert mail.outbox and all("5.00" not in m.body and "90,000.00" in m.body for m in mail.outbox)


def test_a_tool_this_project_does_not_know_keeps_the_agents_words(api):
    """There is nothing else to say it with: its schema names no description."""
    resp = api("alice").post("/api/approvals/", {
        "tool_name": "crm.delete_contact", "arguments": {"email": "a@example.com"},
        "schema": {"type": "object", "properties": {"email": {"type": "string"}}},
        "description": "Delete the contact a@example.com"}, format="json")
    assert resp.status_code == 201 and resp.json()["description"] == "Delete the contact a@example.com"
