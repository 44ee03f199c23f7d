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
