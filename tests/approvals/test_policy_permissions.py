"""Who may change a tool's policy. The staff flag alone (an account the admin site refuses, holding no
permission on tool policies) loosened any tool's review through the console and the API: "admins are
staff". Every admin still reads the policies and simulates drafts; a save asks the permission to
change the policy (to add it, for a tool still on its code defaults) and a revert the permission to
delete it, as the admin site asks, checked once where the console's and the API's saves meet
(approvals/policy_versions)."""

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.core.exceptions import PermissionDenied
from rest_framework.test import APIClient

from approvals import policy_versions, selectors, services
from approvals.models import AuditEvent, Mode, ToolPolicy
from tests.inbox_helpers import user

pytestmark = pytest.mark.django_db

TOOL = "transfer_money"
LOOSER = {"mode": "never"}


def form(**overrides):
    data = {"mode": "never", "conditions": "[]", "approver_kind": "group", "approver_group": "finance",
            "required_approvals": "1", "timeout_seconds": "", "timeout_action": "reject", "risk": "critical",
            "reminder_fraction": "0.5", "escalation_group": "", "escalation_fraction": "",
            "allowed_decisions": ["approve", "edit", "reject"], "action": "save-loosening"}
    data.update(overrides)
    return data


@pytest.fixture
def stan(demo):
    return User.objects.create_user("stan", "stan@example.com", "pw", is_staff=True)


def grant(account, *codenames):
    account.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=account.pk)  # permissions are cached per object


def api(account):
    client = APIClient()
    client.force_authenticate(account)
    return client


@pytest.fixture
def stored(demo):
    return services.save_policy(TOOL, {"mode": Mode.ALWAYS, "conditions": [],
                                       "approver_group": Group.objects.get(name="finance")}, user("admin"))


def mode_now():
    return selectors.policy_for(tool_name=TOOL).mode


def test_staff_without_the_permissions_reads_policies_but_the_api_refuses_its_changes(stan, stored):
    client = api(stan)
    assert client.get("/api/policies/").status_code == 200
    assert client.get(f"/api/policies/{TOOL}/").json()["mode"] == Mode.ALWAYS
    for method, path, body in (("patch", f"/api/policies/{TOOL}/", LOOSER),
                               ("put", f"/api/policies/{TOOL}/", LOOSER),
                               ("delete", f"/api/policies/{TOOL}/", None),
                               ("post", "/api/policies/", {"tool_name": "delete_file", **LOOSER})):
        resp = getattr(client, method)(path, body, format="json")
        assert resp.status_code == 403, (method, resp.content)
        assert resp.json()["code"] == "permission_denied"
        assert "permissions on tool policies" in resp.json()["message"]
    assert mode_now() == Mode.ALWAYS and not ToolPolicy.objects.filter(tool_name="delete_file").exists()
    assert not AuditEvent.objects.filter(actor=stan).exists()


def test_the_console_shows_such_an_account_the_policy_without_save_or_revert_and_refuses_a_forged_save(
        client, stan, stored):
    client.force_login(stan)
    page = client.get(f"/policies/{TOOL}/").content.decode()
    assert 'id="read-only-policy"' in page
    assert 'id="save-policy"' not in page and 'id="revert-form"' not in page
    assert client.post(f"/policies/{TOOL}/", form()).status_code == 403
    assert client.post(f"/policies/{TOOL}/", {"action": "revert"}).status_code == 403
    assert mode_now() == Mode.ALWAYS and ToolPolicy.objects.filter(tool_name=TOOL).exists()
    simulated = client.post(f"/policies/{TOOL}/", form(action="simulate"))  # a draft judged, nothing saved
    assert simulated.status_code == 200 and mode_now() == Mode.ALWAYS


def test_the_permissions_the_admin_site_asks_for_open_each_change(client, stan, stored):
    changer = grant(stan, "change_toolpolicy")
    assert api(changer).patch(f"/api/policies/{TOOL}/", {"risk": "high"}, format="json").status_code == 200
    # a tool still on its code defaults has no row to change: saving it adds one
    resp = api(changer).patch("/api/policies/delete_file/", {"risk": "high"}, format="json")
    assert resp.status_code == 403 and not ToolPolicy.objects.filter(tool_name="delete_file").exists()
    assert api(changer).delete(f"/api/policies/{TOOL}/").status_code == 403
    client.force_login(changer)
    page = client.get(f"/policies/{TOOL}/").content.decode()
    assert 'id="save-policy"' in page and 'id="revert-form"' not in page
    assert client.post(f"/policies/{TOOL}/", form()).status_code == 302 and mode_now() == Mode.NEVER

    admin = grant(changer, "add_toolpolicy", "delete_toolpolicy")
    assert api(admin).patch("/api/policies/delete_file/", {"risk": "high"}, format="json").status_code == 201
    assert api(admin).delete(f"/api/policies/{TOOL}/").status_code == 204


def test_a_superuser_changes_policies_as_before(demo, stored):
    assert api(demo["admin"]).patch(f"/api/policies/{TOOL}/", LOOSER, format="json").status_code == 200
    assert mode_now() == Mode.NEVER


def test_the_check_is_where_every_save_meets(stan, stored, demo):
    with pytest.raises(PermissionDenied):
        policy_versions.save_policy(TOOL, {"mode": Mode.NEVER}, stan)
    with pytest.raises(PermissionDenied):
        policy_versions.delete_policy(TOOL, stan)
    with pytest.raises(PermissionDenied):  # an account switched off keeps its permissions but not their use
        off = grant(User.objects.create_user("gone", is_staff=True, is_active=False), "change_toolpolicy")
        policy_versions.save_policy(TOOL, {"mode": Mode.NEVER}, off)
    assert mode_now() == Mode.ALWAYS
