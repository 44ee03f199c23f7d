"""An edit is described anew: the request's headline (`description`, `impact`, in every language)
is what its current arguments do. With two approvals required, a reviewer who changed a transfer of
100.00 to 90,000.00 (to their own account) and approved left the request headed "Transfer 100.00
USD ..." in the inbox list, on the request page and in bulk selection, where the second reviewer
approved what the headline did not say."""

import re

import pytest
from django.contrib.auth.models import Group

from agents.catalog.banking import transfer_money
from agents.runtime.tools import said_in_every_language
from approvals import policy
from approvals import services as approval_services
from approvals.models import ApprovalRequest

pytestmark = pytest.mark.django_db
ARGS = {"from_account": "1234567890", "to_account": "0987654321", "amount": 100.0, "currency": "USD"}


@pytest.fixture
def two_to_approve(demo):
    finance = Group.objects.get(name="finance")
    demo["bob"].groups.add(finance)
    approval_services.save_policy("transfer_money", {
        "mode": "always", "approver_kind": "group", "approver_group": finance, "required_approvals": 2,
        "risk": "high"}, demo["admin"])
    said = said_in_every_language(transfer_money, ARGS)
    return approval_services.request(
        tool_name="transfer_money", arguments=ARGS, requester=demo["alice"],
        verdict=policy.evaluate("transfer_money", ARGS, {"user": demo["alice"]}),
        description=said["en"]["description"], impact=said["en"]["impact"], said=said, thread_ref="t-1")


def test_the_headline_says_what_the_edited_arguments_do(api, demo, two_to_approve):
    req = two_to_approve
    assert "100.00" in req.description
    edited = {**ARGS, "amount": 90000.0}
    resp = api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve", "arguments": edited},
                            format="json")
    assert resp.status_code == 200 and resp.json()["status"] == "pending", resp.content
    row = ApprovalRequest.objects.get(pk=req.pk)
    assert "90,000.00" in row.description and "100.00" not in row.description
    assert "90,000.00" in row.impact
    assert all(re.search(r"90\D?000[.,]00", words["description"]) for words in row.said.values()), row.said
    # what the second reviewer reads: the API, the list and the request page
    assert "90,000.00" in api("bob").get(f"/api/approvals/{req.pk}/").json()["description"]
    client = api("bob")
    client.force_login(demo["bob"])
    assert "90,000.00" in client.get("/inbox/?status=pending").content.decode()
    page = client.get(f"/inbox/{req.pk}/").content.decode()
    assert "Transfer 90,000.00 USD" in page and "Transfer 100.00 USD" not in page


def test_an_edit_back_to_the_asked_arguments_is_described_as_asked(api, demo, two_to_approve):
    req = two_to_approve
    api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve", "arguments": {
        **ARGS, "amount": 250.0}}, format="json")
    resp = api("bob").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve", "arguments": ARGS},
                           format="json")
    assert resp.status_code == 200, resp.content
    assert "100.00" in ApprovalRequest.objects.get(pk=req.pk).description


def test_an_api_approval_may_name_the_arguments_it_read(api, demo, two_to_approve):
    req = two_to_approve
    read = api("bob").get(f"/api/approvals/{req.pk}/").json()["arguments_hash"]
    api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve", "arguments": {
        **ARGS, "amount": 90000.0}}, format="json")
    late = api("bob").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve", "arguments_hash": read},
                           format="json")
    assert late.status_code == 409 and late.json()["code"] == "arguments_changed", late.content
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"
    now = api("bob").get(f"/api/approvals/{req.pk}/").json()["arguments_hash"]
    done = api("bob").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve", "arguments_hash": now},
                           format="json")
    assert done.status_code == 200 and done.json()["status"] == "modified", done.content


def test_amounts_are_written_as_each_language_writes_numbers():
    """A French page read "Virement de 1500.00 USD" beside a balance of "4 982,10 USD": the
    descriptions format their amounts in the language each is said in."""
    from agents.catalog.support import submit_refund

    said = said_in_every_language(transfer_money, {**ARGS, "amount": 1500.5})
    assert said["en"]["description"].startswith("Transfer 1,500.50 USD")
    assert "1\xa0500,50 USD" in said["fr"]["description"] and "1\xa0500,50 USD" in said["fr"]["impact"]
    assert "1.500,50 USD" in said["pt-br"]["description"] and "1.500,50" in said["id"]["description"]
    refund = said_in_every_language(submit_refund, {"order_id": "12345", "amount": 1299.9, "refund_description": "x"})
    assert "1\xa0299,90" in refund["fr"]["description"] and "1\xa0299,90" in refund["fr"]["impact"]
