"""Two admins on one policy: a save based on a stale read is refused, not a silent overwrite. Admin A
opened /policies/transfer_money/, admin B added a deny rule through the API, A raised the risk and
saved: "saved", and B's deny rule was gone. The console's form carries the version it was drawn
from; the REST API gives an ETag and honours If-Match (412 policy_changed). Clients that send no
version save as before."""

import json
import re

import pytest
from django.contrib.auth.models import Group, Permission, User
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from approvals import services
from approvals.models import AuditEvent, ToolPolicy
from tests.inbox_helpers import user

pytestmark = pytest.mark.django_db

P = "/api/policies/transfer_money/"
DENY = [{"name": "block big", "when": {"path": "args.amount", "op": "gt", "value": 10000}, "action": "deny"},
        {"name": "rest", "action": "gate"}]


def form(**overrides):
    data = {"mode": "always", "conditions": "[]", "approver_kind": "group", "approver_group": "finance",
            "required_approvals": "1", "timeout_seconds": "", "timeout_action": "reject", "risk": "critical",
            "reminder_fraction": "0.5", "escalation_group": "", "escalation_fraction": "",
            "allowed_decisions": ["approve", "edit", "reject"]}
    data.update(overrides)
    return data


def version_on(body):
    return re.search(r'<input type="hidden" name="version" value="([0-9a-f]+)">', body).group(1)


@pytest.fixture
def admin_a(client, demo):
    client.force_login(demo["admin"])
    return client


@pytest.fixture
def admin_b(demo):
    boss = User.objects.create_user("boss", "boss@example.com", "x", is_staff=True)
    boss.user_permissions.add(*Permission.objects.filter(codename__endswith="_toolpolicy"))  # an admin who edits policies
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=boss).key}")
    return client


def test_a_console_save_over_a_change_made_since_the_page_opened_is_refused(admin_a, admin_b):
    services.save_policy("transfer_money", {"mode": "always", "conditions": [],
                                             "approver_group": Group.objects.get(name="finance")}, user("admin"))
    opened = version_on(admin_a.get("/policies/transfer_money/").content.decode())
    assert admin_b.patch(P, {"mode": "conditional", "conditions": DENY}, format="json").status_code == 200

    resp = admin_a.post("/policies/transfer_money/", {**form(), "version": opened, "action": "save"})
    assert resp.status_code == 409
    body = resp.content.decode()
    assert re.search(r"Not saved: boss changed this policy \(.+\) after you opened it\.", body)
    stale = body[body.index('id="policy-stale"'):body.index("</ul>", body.index('id="policy-stale"'))]
    assert "<li>review: now <bdi>Ask when a rule says so" in stale and "<li>conditions: " in stale and "block big" in stale
    assert '<option value="critical" selected>' in body  # A's draft is kept in the form
    row = ToolPolicy.objects.get(tool_name="transfer_money")
    assert row.mode == "conditional" and row.conditions == DENY and row.risk != "critical"  # B's rule stands
    assert not AuditEvent.objects.filter(action="policy_changed", actor__username="admin").exists()

    # the page now carries the policy's present version: saving again is a choice made knowing it
    resp = admin_a.post("/policies/transfer_money/", {**form(mode="conditional", conditions=json.dumps(DENY)),
                                                       "version": version_on(body), "action": "save"})
    assert resp.status_code == 302
    row.refresh_from_db()
    assert (row.mode, row.conditions, row.risk) == ("conditional", DENY, "critical")


def test_a_simulated_draft_keeps_the_version_it_was_based_on(admin_a, admin_b):
    """The draft shown again by the simulator must not take the newer version: its next save would
    overwrite the change it never showed."""
    opened = version_on(admin_a.get("/policies/transfer_money/").content.decode())
    assert admin_b.patch(P, {"mode": "conditional", "conditions": DENY}, format="json").status_code == 201
    body = admin_a.post("/policies/transfer_money/", {**form(), "version": opened, "action": "simulate",
                                                       "limit": "5"}).content.decode()
    assert version_on(body) == opened
    # a draft with a field refused is told of the change too, beside its field's error
    resp = admin_a.post("/policies/transfer_money/", {**form(required_approvals="0"), "version": opened,
                                                       "action": "save"})
    assert resp.status_code == 409 and 'id="policy-stale"' in resp.content.decode()
    assert 'id="p-required-error"' in resp.content.decode()
    assert admin_a.post("/policies/transfer_money/", {**form(), "version": opened, "action": "save"}).status_code == 409
    assert ToolPolicy.objects.get(tool_name="transfer_money").conditions == DENY


def test_a_console_save_of_an_unchanged_policy_and_one_without_a_version_save(admin_a, admin_b):
    opened = version_on(admin_a.get("/policies/transfer_money/").content.decode())  # code defaults, no row
    # B saves what the policy already says: nothing changed, A's page is not stale
    assert admin_b.patch(P, {}, format="json").status_code == 201
    resp = admin_a.post("/policies/transfer_money/", {**form(), "version": opened, "action": "save"})
    assert resp.status_code == 302
    assert ToolPolicy.objects.get(tool_name="transfer_money").risk == "critical"
    # a form sent without a version (an older page, a script) saves as before
    resp = admin_a.post("/policies/transfer_money/", {**form(risk="high"), "action": "save"})
    assert resp.status_code == 302 and ToolPolicy.objects.get(tool_name="transfer_money").risk == "high"


def test_a_console_revert_over_a_change_made_since_is_refused(admin_a, admin_b):
    services.save_policy("transfer_money", {"mode": "always", "conditions": [],
                                             "approver_group": Group.objects.get(name="finance")}, user("admin"))
    opened = version_on(admin_a.get("/policies/transfer_money/").content.decode())
    assert admin_b.patch(P, {"mode": "conditional", "conditions": DENY}, format="json").status_code == 200
    resp = admin_a.post("/policies/transfer_money/", {"action": "revert", "version": opened}, follow=True)
    assert "Not saved: boss changed this policy" in resp.content.decode()
    assert "It was not reverted" in resp.content.decode()
    assert ToolPolicy.objects.get(tool_name="transfer_money").conditions == DENY


def test_the_api_gives_an_etag_and_refuses_a_change_based_on_an_old_one(api, admin_b):
    admin = api("admin")
    first = admin.get(P)
    etag = first.headers["ETag"]
    assert re.fullmatch(r'"[0-9a-f]{20}"', etag)
    assert admin_b.patch(P, {"mode": "conditional", "conditions": DENY}, format="json").status_code == 201

    resp = admin.patch(P, {"risk": "critical"}, format="json", HTTP_IF_MATCH=etag)
    assert resp.status_code == 412, resp.content
    assert resp.json()["code"] == "policy_changed" and resp.json()["changed_by"] == "boss"
    assert resp.json()["message"].startswith("boss changed this policy at ")
    row = ToolPolicy.objects.get(tool_name="transfer_money")
    assert row.conditions == DENY and row.risk != "critical"
    assert admin.put(P, {"mode": "always", "approver_group": "finance"}, format="json", HTTP_IF_MATCH=etag).status_code == 412
    assert admin.delete(P, HTTP_IF_MATCH=etag).status_code == 412
    assert ToolPolicy.objects.get(tool_name="transfer_money").conditions == DENY

    # with the ETag of the policy as it stands (the 412's, or a new GET's) the change is made
    fresh = resp.headers["ETag"]
    assert fresh == admin.get(P).headers["ETag"] != etag
    saved = admin.patch(P, {"risk": "critical"}, format="json", HTTP_IF_MATCH=fresh)
    assert saved.status_code == 200 and saved.json()["conditions"] == DENY and saved.json()["risk"] == "critical"
    assert saved.headers["ETag"] == admin.get(P).headers["ETag"] != fresh


def test_api_clients_that_send_no_precondition_save_as_before(api, admin_b):
    admin = api("admin")
    assert admin_b.patch(P, {"mode": "conditional", "conditions": DENY}, format="json").status_code == 201
    assert admin.patch(P, {"risk": "critical"}, format="json").status_code == 200
    assert admin.patch(P, {"risk": "high"}, format="json", HTTP_IF_MATCH="*").status_code == 200
    assert admin.delete(P).status_code == 204
