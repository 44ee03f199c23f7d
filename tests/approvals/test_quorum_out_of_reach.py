"""A quorum larger than the people who may give it: a policy asking finance (finn alone) for two
approvals was saved without a word, and each of its requests waited, looking like any other, until its
deadline. The policy page and the API say so now, and each such request tells the admins once per stage
(an audit row too_few_deciders, a mail to staff, a staff notice), as a group with nobody does."""

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail
from django.utils import timezone

from approvals import services
from approvals.models import ApprovalRequest, AuditEvent, ToolPolicy
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db


def _alerts():
    return [m for m in mail.outbox if "admin@example.com" in m.to and "Too few can decide" in m.subject]


def _rows(req):
    return AuditEvent.objects.filter(request=req, action="too_few_deciders")


def test_a_request_needing_more_approvals_than_its_group_has_people_tells_the_admins_once(
        demo, told, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        req = make_request("alice", required=2)  # finance: finn alone
    assert [r.after for r in _rows(req)] == [{"groups": ["finance"], "as": "approver", "needed": 2, "can": 1}]
    assert len(_alerts()) == 1 and "needs 2 approvals" in _alerts()[0].body and "only 1 person" in _alerts()[0].body
    assert [k for k, _ in told] == ["approval.too_few_deciders"]
    assert not AuditEvent.objects.filter(request=req, action="no_deciders").exists()  # finn may decide
    ApprovalRequest.objects.filter(pk=req.pk).update(remind_at=timezone.now() - timedelta(seconds=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert services.remind(req.pk)
    assert _rows(req).count() == 1 and len(_alerts()) == 1 and len(told) == 1  # once


def test_a_quorum_the_group_can_give_says_nothing(demo, told, django_capture_on_commit_callbacks):
    User.objects.create_user("fay", email="fay@example.com").groups.add(Group.objects.get(name="finance"))
    with django_capture_on_commit_callbacks(execute=True):
        req = make_request("alice", required=2)
    assert not _rows(req).exists() and not _alerts() and not told


def test_a_members_own_request_has_one_fewer_who_may_decide_it(demo, told, django_capture_on_commit_callbacks):
    User.objects.create_user("fay", email="fay@example.com").groups.add(Group.objects.get(name="finance"))
    with django_capture_on_commit_callbacks(execute=True):
        req = make_request("finn", required=2)  # fay alone may: four eyes keep finn out
    assert [(r.after["can"], r.after["needed"]) for r in _rows(req)] == [(1, 2)]


def test_an_escalation_is_counted_with_both_groups(demo, told, django_capture_on_commit_callbacks):
    treasury = Group.objects.create(name="treasury")
    User.objects.create_user("tess", email="tess@example.com").groups.add(treasury)
    with django_capture_on_commit_callbacks(execute=True):
        reached = make_request("alice", required=2)
        short = make_request("alice", required=3)
    for req in (reached, short):
        ApprovalRequest.objects.filter(pk=req.pk).update(escalation_group=treasury,
                                                         escalate_at=timezone.now() - timedelta(seconds=1))
        with django_capture_on_commit_callbacks(execute=True):
            assert services.escalate(req.pk)
    assert [r.after["as"] for r in _rows(reached)] == ["approver"]  # finn and tess: two, once escalated
    assert sorted((r.after["as"], r.after["can"]) for r in _rows(short)) == [("approver", 1), ("escalation", 2)]
    assert _rows(short).get(after__as="escalation").after["groups"] == ["finance", "treasury"]


def _policy(**values):
    finance = Group.objects.get(name="finance")
    return ToolPolicy.objects.create(tool_name="transfer_money", mode="always", approver_kind="group",
                                     approver_group=finance, **values)


def _page(client, demo):
    client.force_login(demo["admin"])
    resp = client.get("/policies/transfer_money/")
    assert resp.status_code == 200
    return resp.content.decode()


def test_the_policy_page_and_api_say_which_quorums_cannot_be_reached(client, demo, api):
    treasury = Group.objects.create(name="treasury")
    User.objects.create_user("tess", email="tess@example.com").groups.add(treasury)
    _policy(required_approvals=2, escalation_group=treasury, conditions=[
        {"name": "large", "when": {"path": "args.amount", "op": "gt", "value": 1000}, "action": "gate",
         "route": {"group": "treasury", "approvals": 3}},
        {"name": "otherwise", "action": "allow"}])
    page = _page(client, demo)
    assert 'id="quorum-short"' in page
    assert ("This policy asks for 2 approvals; finance has 1 active member: its requests can be approved only once "
            "they escalate to treasury.") in page
    assert ("Rule 1 (large) asks for 3 approvals; treasury has 1 active member: its requests can never be approved. "
            "Add people to the group or ask for fewer approvals.") in page  # escalating to itself adds nobody
    said = api("admin").get("/api/policies/transfer_money/").json()["quorum_warnings"]
    assert len(said) == 2 and said[1].startswith("Rule 1 (large) asks for 3 approvals")


def test_a_policy_its_groups_can_satisfy_has_no_warning(client, demo, api):
    _policy(required_approvals=1)
    assert 'id="quorum-short"' not in _page(client, demo)
    assert api("admin").get("/api/policies/transfer_money/").json()["quorum_warnings"] == []
    demo["finn"].is_active = False  # switched off, finance has nobody left
    demo["finn"].save()
    assert "its requests can never be approved" in _page(client, demo)


def test_an_escalation_group_too_small_to_make_up_the_quorum_is_said(client, demo):
    treasury = Group.objects.create(name="treasury")
    User.objects.create_user("tess", email="tess@example.com").groups.add(treasury)
    _policy(required_approvals=3, escalation_group=treasury)
    assert ("This policy asks for 3 approvals; finance has 1 active member, and 2 with treasury once escalated: "
            "its requests can never be approved.") in _page(client, demo)


def test_the_policy_list_marks_the_tools_whose_approvals_cannot_be_given(client, demo, django_assert_max_num_queries):
    _policy(required_approvals=2)  # finance: finn alone
    client.force_login(demo["admin"])
    with django_assert_max_num_queries(30):  # every tool listed; each set of groups counted once
        page = client.get("/policies/").content.decode()
    rows = dict(re.findall(r'<tr data-tool="([^"]+)">(.*?)</tr>', page, re.S))
    marked = sorted(name for name, row in rows.items() if "quorum-short" in row)
    assert marked == ["transfer_money"], marked
    assert "This policy asks for 2 approvals; finance has 1 active member" in rows["transfer_money"]
