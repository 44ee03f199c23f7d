"""Deleting a person or a group in the admin: one with history (requests asked, decisions made,
audit rows, policies and requests routed to a group) is switched off, not deleted, and the admin's
page says so at once instead of loading every row of that history first."""

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from approvals.models import Decision
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(client, demo):
    client.force_login(demo["admin"])
    return client


def history_rows_read(queries):
    """Statements that read the approval history's rows themselves (more than whether one exists)."""
    return [q["sql"] for q in queries if '"approvals_' in q["sql"] and "LIMIT 1" not in q["sql"]]


def test_a_person_with_history_is_switched_off_not_deleted(admin, demo):
    alice = demo["alice"]
    for _ in range(3):
        req = make_request("alice")
        Decision.objects.create(request=req, user=demo["finn"], decision="approve")
    with CaptureQueriesContext(connection) as queries:
        page = admin.get(f"/admin/auth/user/{alice.pk}/delete/")
    body = page.content.decode()
    # Django's page loaded every request and audit row (29 s for 50,000 requests) to say that a
    # superuser "doesn't have permission to delete the following types of objects: approval request"
    assert page.status_code == 200 and "permission" not in body
    assert "Switch the account off instead" in body and "approval requests name alice as requester" in body
    assert history_rows_read(queries) == []
    admin.post(f"/admin/auth/user/{alice.pk}/delete/", {"post": "yes"})
    assert User.objects.filter(pk=alice.pk).exists()

    finn = admin.get(f"/admin/auth/user/{demo['finn'].pk}/delete/").content.decode()
    assert "decisions name finn as reviewer" in finn

    chosen = admin.post("/admin/auth/user/", {"action": "delete_selected", "_selected_action": [alice.pk, demo["bob"].pk]})
    assert "Switch the account off instead" in chosen.content.decode()


def test_a_group_that_decided_requests_keeps_its_name(admin, demo):
    finance = Group.objects.get(name="finance")
    make_request("alice", group="finance")
    with CaptureQueriesContext(connection) as queries:
        body = admin.get(f"/admin/auth/group/{finance.pk}/delete/").content.decode()
    assert "approval requests name finance as deciding group" in body and "permission" not in body
    assert "Take its members out instead" in body
    assert history_rows_read(queries) == []


def test_a_person_without_history_is_deleted_as_before(admin, demo):
    newcomer = User.objects.create_user("newcomer")
    body = admin.get(f"/admin/auth/user/{newcomer.pk}/delete/").content.decode()
    assert "Are you sure" in body
    admin.post(f"/admin/auth/user/{newcomer.pk}/delete/", {"post": "yes"})
    assert not User.objects.filter(pk=newcomer.pk).exists()


def group_form(group, name):
    return {"name": name, "permissions": list(group.permissions.values_list("pk", flat=True))}


def test_a_group_the_rules_name_is_not_renamed(admin, demo):
    """Tools' code defaults, rules and outside agents' unknown tools name a group by its name: finance
    renamed in the admin left transfers to a new, empty group of the old name, made silently at the
    next transfer, while the people who decide them sat in the renamed one."""
    from approvals import policy
    from approvals import services as approval_services

    finance = Group.objects.get(name="finance")
    refused = admin.post(f"/admin/auth/group/{finance.pk}/change/", group_form(finance, "Finance team"))
    assert refused.status_code == 200 and "transfer_money" in refused.content.decode()
    assert Group.objects.get(pk=finance.pk).name == "finance"
    assert policy.evaluate("transfer_money", {"from_account": "1", "to_account": "2", "amount": 5,
                                              "currency": "USD"}).group == finance

    reviewers = Group.objects.get(name="reviewers")  # where an outside agent's unknown tool goes
    assert admin.post(f"/admin/auth/group/{reviewers.pk}/change/", group_form(reviewers, "QA")).status_code == 200
    assert Group.objects.filter(pk=reviewers.pk, name="reviewers").exists()

    auditors, night = Group.objects.create(name="auditors"), Group.objects.create(name="night shift")
    approval_services.save_policy("send_email", {"mode": "conditional", "approver_kind": "group", "approver_group": auditors,
                                                 "conditions": [{"name": "late", "when": {"path": "args.to", "op": "eq", "value": "x"}, "action": "gate",
                                                                 "route": {"group": "night shift"}}]}, demo["admin"])
    said = admin.post(f"/admin/auth/group/{night.pk}/change/", group_form(night, "nights")).content.decode()
    assert "send_email" in said and Group.objects.filter(pk=night.pk, name="night shift").exists()

    # a group a policy names only in its own fields (not by name) is renamed: the policy follows it
    assert admin.post(f"/admin/auth/group/{auditors.pk}/change/", group_form(auditors, "Audit")).status_code == 302
    assert Group.objects.get(pk=auditors.pk).name == "Audit"

    # a saved policy is in force instead of the code defaults: finance is then named by its relation
    approval_services.save_policy("transfer_money", {"mode": "always", "approver_kind": "group",
                                                     "approver_group": finance}, demo["admin"])
    assert admin.post(f"/admin/auth/group/{finance.pk}/change/", group_form(finance, "Treasury")).status_code == 302
    assert policy.evaluate("transfer_money", {"from_account": "1", "to_account": "2", "amount": 5,
                                              "currency": "USD"}).group.name == "Treasury"


def test_a_group_the_rules_name_is_not_deleted(admin, demo):
    """Deleted, a group a rule routes to by its name came back empty at the next request it routed
    (policy._named_group), which waited there unseen; renaming it was refused already."""
    from approvals import services as approval_services

    auditors, night = Group.objects.create(name="auditors"), Group.objects.create(name="night shift")
    approval_services.save_policy("send_email", {"mode": "conditional", "approver_kind": "group", "approver_group": auditors,
                                                 "conditions": [{"name": "late", "when": {"path": "args.to", "op": "eq", "value": "x"}, "action": "gate",
                                                                 "route": {"group": "night shift"}}]}, demo["admin"])
    body = admin.get(f"/admin/auth/group/{night.pk}/delete/").content.decode()
    assert ("the rules of the policy of send_email name night shift: deleted, its requests would go to a new, "
            "empty group of that name") in body
    admin.post(f"/admin/auth/group/{night.pk}/delete/", {"post": "yes"})
    assert Group.objects.filter(pk=night.pk).exists()
    chosen = admin.post("/admin/auth/group/", {"action": "delete_selected", "_selected_action": [night.pk],
                                               "post": "yes"})
    assert chosen.status_code in (200, 302) and Group.objects.filter(pk=night.pk).exists()
    spare = Group.objects.create(name="spare")  # named by nothing: deleted as before
    admin.post(f"/admin/auth/group/{spare.pk}/delete/", {"post": "yes"})
    assert not Group.objects.filter(pk=spare.pk).exists()


def test_a_group_a_rules_condition_tests_is_not_renamed(admin, demo):
    """`deny when user.groups contains "frozen"`: renamed in the admin, the rule tested a name nobody
    had any more, and the frozen accounts' transfers went to review as anyone's."""
    from approvals import policy
    from approvals import services as approval_services

    frozen = Group.objects.create(name="frozen")
    demo["alice"].groups.add(frozen)
    approval_services.save_policy("transfer_money", {
        "mode": "conditional", "approver_kind": "group", "approver_group": Group.objects.get(name="finance"),
        "conditions": [{"name": "frozen accounts", "when": {"any": [
            {"path": "user.groups", "op": "contains", "value": "frozen"}]}, "action": "deny"},
            {"name": "the rest", "action": "gate"}]}, demo["admin"])
    refused = admin.post(f"/admin/auth/group/{frozen.pk}/change/", group_form(frozen, "frozen-accounts"))
    assert refused.status_code == 200 and "transfer_money" in refused.content.decode()
    assert Group.objects.get(pk=frozen.pk).name == "frozen"
    args = {"from_account": "1234567890", "to_account": "0987654321", "amount": 5, "currency": "USD"}
    assert policy.evaluate("transfer_money", args, {"user": demo["alice"]}).action == "deny"
