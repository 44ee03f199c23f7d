"""A person taken out of a group, switched off or deleted can leave its waiting requests with nobody who
may decide them. The admins heard of it only at each request's reminder, if it had one, and the admin who
emptied the group was told nothing; both are told as the change is made now."""

import pytest
from django.contrib.auth.models import Group

from approvals.models import AuditEvent
from tests.approvals.test_account_audit import user_form
from tests.inbox_helpers import make_request, user

pytestmark = pytest.mark.django_db


@pytest.fixture
def finance_of_finn(demo):
    finance = Group.objects.get(name="finance")
    for member in finance.user_set.exclude(username="finn"):
        finance.user_set.remove(member)
    return finance


def told(req):
    return list(AuditEvent.objects.filter(request=req, action="no_deciders").values_list("after", flat=True))


def test_the_admin_who_takes_the_last_decider_out_is_told_and_so_are_the_admins(
        admin_client, finance_of_finn, django_capture_on_commit_callbacks):
    req = make_request("alice", group="finance")
    other = make_request("alice", group="reviewers")
    finn = user("finn")
    groups = [g.pk for g in finn.groups.exclude(name="finance")]
    with django_capture_on_commit_callbacks(execute=True):
        page = admin_client.post(f"/admin/auth/user/{finn.pk}/change/", user_form(finn, groups=groups), follow=True)
    said = [str(m) for m in page.context["messages"]]
    assert any("finance now has nobody who may decide its 1 waiting request" in m for m in said), said
    assert told(req) == [{"group": "finance", "as": "approver"}]
    assert told(other) == []


def test_switching_the_last_one_off_in_code_tells_the_admins_once(finance_of_finn, django_capture_on_commit_callbacks):
    req = make_request("alice", group="finance")
    finn = user("finn")
    with django_capture_on_commit_callbacks(execute=True):
        finn.is_active = False
        finn.save()
    with django_capture_on_commit_callbacks(execute=True):
        finn.save()  # saved again: said once
    assert told(req) == [{"group": "finance", "as": "approver"}]


def test_taking_out_one_of_several_says_nothing(demo, django_capture_on_commit_callbacks):
    finance = Group.objects.get(name="finance")
    finance.user_set.add(user("rita"))
    req = make_request("alice", group="finance")
    with django_capture_on_commit_callbacks(execute=True):
        finance.user_set.remove(user("finn"))
    assert told(req) == []
