"""Who could decide, and who made it so: account and membership changes are audit events
(approvals/account_audit.py), with the signed-in person who made them as the actor, "system" (no
actor) for code without a request, and read by staff only."""

import csv
import io
import json

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.test import AsyncClient
from rest_framework.authtoken.models import Token
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory
from rest_framework.views import APIView

from approvals.account_audit import AskingMiddleware
from approvals.models import AuditEvent
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db

ACCOUNT = ("account_created", "account_changed", "account_deleted", "member_added", "member_removed",
           "group_renamed", "group_deleted")


def events(*actions, since=0):
    return list(AuditEvent.objects.filter(action__in=actions or ACCOUNT, pk__gt=since).order_by("id"))


def last_id():
    return AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0


def said(rows):
    """[(action, actor's username or None, before, after)]"""
    return [(e.action, e.actor.username if e.actor_id else None, e.before, e.after) for e in rows]


@pytest.fixture
def admin(client, demo):
    client.force_login(demo["admin"])
    return client


def user_form(user, **changes):
    """The Django admin's change form of `user` as its page would post it back."""
    data = {"username": user.username, "first_name": user.first_name, "last_name": user.last_name,
            "email": user.email, "groups": [g.pk for g in user.groups.all()], "user_permissions": [],
            "date_joined_0": user.date_joined.strftime("%Y-%m-%d"), "date_joined_1": user.date_joined.strftime("%H:%M:%S"),
            "last_login_0": "", "last_login_1": "", "_save": "Save"}
    for flag in ("is_active", "is_staff", "is_superuser"):
        if getattr(user, flag):
            data[flag] = "on"
    for key, value in changes.items():
        if value is False:
            data.pop(key, None)
        else:
            data[key] = "on" if value is True else value
    return data


def test_the_admins_user_form_records_group_changes_and_flags_with_the_admin_as_actor(admin, demo):
    rita, since = demo["rita"], last_id()
    finance, support = Group.objects.get(name="finance"), Group.objects.get(name="support")
    groups = [g.pk for g in rita.groups.exclude(pk=support.pk)] + [finance.pk]
    resp = admin.post(f"/admin/auth/user/{rita.pk}/change/", user_form(rita, groups=groups, is_staff=True))
    assert resp.status_code == 302, resp.content.decode()[:3000]
    assert sorted(rita.groups.values_list("name", flat=True)) == ["finance", "reviewers"]
    assert sorted(said(events(since=since))) == [
        ("account_changed", "admin", {"is_staff": False}, {"is_staff": True}),
        ("member_added", "admin", None, {"account": "rita", "group": "finance"}),
        ("member_removed", "admin", {"account": "rita", "group": "support"}, None),
    ]
    assert {e.object_ref for e in events(since=since)} == {"user:rita"}
    # the same form saved again changes nothing, and says nothing
    rita.refresh_from_db()
    since = last_id()
    assert admin.post(f"/admin/auth/user/{rita.pk}/change/", user_form(rita)).status_code == 302
    assert events(since=since) == []


def test_the_admins_add_form_records_the_account_without_its_password(admin):
    since = last_id()
    resp = admin.post("/admin/auth/user/add/", {"username": "newbie", "usable_password": "true",
                                                "password1": "Pa55-word-long", "password2": "Pa55-word-long",
                                                "_save": "Save"})
    assert resp.status_code == 302, resp.content.decode()[:3000]
    assert said(events(since=since)) == [("account_created", "admin", None, {
        "username": "newbie", "email": "", "is_active": True, "is_staff": False, "is_superuser": False})]
    newbie = User.objects.get(username="newbie")
    since = last_id()
    admin.post(f"/admin/auth/user/{newbie.pk}/password/", {"password1": "An0ther-long-one",
                                                           "password2": "An0ther-long-one", "usable_password": "true"})
    assert User.objects.get(username="newbie").password != newbie.password  # changed: and not audited
    assert events(since=since) == []
    text = json.dumps([[e.before, e.after] for e in AuditEvent.objects.all()])
    assert "Pa55" not in text and "An0ther" not in text and "pbkdf2" not in text and "password" not in text


def test_the_admins_group_form_records_a_rename_and_a_delete(admin, demo):
    auditors = Group.objects.create(name="auditors")
    auditors.user_set.add(demo["bob"], demo["alice"])
    since = last_id()
    resp = admin.post(f"/admin/auth/group/{auditors.pk}/change/", {"name": "auditors-eu", "permissions": [],
                                                                   "_save": "Save"})
    assert resp.status_code == 302, resp.content.decode()[:3000]
    resp = admin.post(f"/admin/auth/group/{auditors.pk}/delete/", {"post": "yes"})
    assert resp.status_code == 302, resp.content.decode()[:3000]
    assert said(events(since=since)) == [
        ("group_renamed", "admin", {"name": "auditors"}, {"name": "auditors-eu"}),
        ("group_deleted", "admin", {"name": "auditors-eu", "members": ["alice", "bob"]}, None),
    ]
    # a rename the admin refuses (rules name finance by its name) is no event
    finance, since = Group.objects.get(name="finance"), last_id()
    resp = admin.post(f"/admin/auth/group/{finance.pk}/change/", {"name": "money", "permissions": [], "_save": "Save"})
    assert resp.status_code == 200 and Group.objects.filter(name="finance").exists()
    assert events(since=since) == []


def test_the_switch_off_action_names_the_admin(admin, demo):
    since = last_id()
    resp = admin.post("/admin/auth/user/", {"action": "switch_off", "_selected_action": [demo["bob"].pk]})
    assert resp.status_code == 302
    assert said(events(since=since)) == [("account_changed", "admin", {"is_active": True}, {"is_active": False})]


def test_changes_from_code_have_no_actor(demo):
    # the demo's seeding (a management command): its accounts and their groups, by "system"
    seeded = said(events())
    assert ("member_added", None, None, {"account": "finn", "group": "finance"}) in seeded
    assert ("account_created", None, None, {"username": "admin", "email": "admin@example.com", "is_active": True,
                                            "is_staff": False, "is_superuser": False}) in seeded
    assert ("account_changed", None, {"is_staff": False, "is_superuser": False},
            {"is_staff": True, "is_superuser": True}) in seeded
    # seeded again, it converges: nothing changed, nothing said
    since = last_id()
    call_command("seed_demo", stdout=io.StringIO())
    assert events(since=since) == []
    # a flag flipped in code
    bob = demo["bob"]
    bob.is_active = False
    bob.save()
    bob.is_superuser = True
    bob.save(update_fields=["is_superuser"])
    bob.save(update_fields=["last_login"])  # a sign-in's save: no event
    assert said(events(since=since)) == [("account_changed", None, {"is_active": True}, {"is_active": False}),
                                         ("account_changed", None, {"is_superuser": False}, {"is_superuser": True})]


def test_bulk_set_and_clear_from_either_side(demo):
    finance, reviewers, support = (Group.objects.get(name=n) for n in ("finance", "reviewers", "support"))
    alice, bob, finn = demo["alice"], demo["bob"], demo["finn"]
    since = last_id()
    finn.groups.set([reviewers, support])  # out of finance, into support, reviewers kept
    assert said(events(since=since)) == [("member_removed", None, {"account": "finn", "group": "finance"}, None),
                                         ("member_added", None, None, {"account": "finn", "group": "support"})]
    since = last_id()
    finn.groups.remove(finance)  # not a member: nothing removed, nothing said
    alice.groups.add(reviewers, reviewers)
    assert said(events(since=since)) == [("member_added", None, None, {"account": "alice", "group": "reviewers"})]
    since = last_id()
    finance.user_set.set([alice, bob])
    assert said(events(since=since)) == [
        ("member_added", None, None, {"account": "alice", "group": "finance"}),
        ("member_added", None, None, {"account": "bob", "group": "finance"})]
    since = last_id()
    finance.user_set.clear()
    assert said(events(since=since)) == [
        ("member_removed", None, {"account": "alice", "group": "finance"}, None),
        ("member_removed", None, {"account": "bob", "group": "finance"}, None)]
    since = last_id()
    finn.groups.clear()
    assert said(events(since=since)) == [
        ("member_removed", None, {"account": "finn", "group": "reviewers"}, None),
        ("member_removed", None, {"account": "finn", "group": "support"}, None)]
    since = last_id()
    finn.groups.clear()  # nothing left: nothing said
    assert events(since=since) == []


def test_an_account_deleted_says_which_groups_it_left(demo):
    temp = User.objects.create_user("temp", email="temp@example.com")
    temp.groups.add(Group.objects.get(name="finance"))
    since = last_id()
    temp.delete()
    assert said(events(since=since)) == [("account_deleted", None, {
        "username": "temp", "email": "temp@example.com", "is_active": True, "is_staff": False, "is_superuser": False,
        "groups": ["finance"]}, None)]


@pytest.mark.django_db(transaction=True)  # the view runs on a thread of its own
async def test_an_async_request_names_its_person_too(demo):
    """The context variable reaches the view's thread through the async chain (sync_to_async)."""
    client = AsyncClient()
    await client.aforce_login(demo["admin"])
    bob = demo["bob"]
    since = await sync_to_async(last_id)()
    form = await sync_to_async(user_form)(bob, is_staff=True)
    resp = await client.post(f"/admin/auth/user/{bob.pk}/change/", form)
    assert resp.status_code == 302
    assert await sync_to_async(lambda: said(events(since=since)))() == [
        ("account_changed", "admin", {"is_staff": False}, {"is_staff": True})]


def test_the_api_token_names_its_holder(demo):
    """DRF puts a token's user on the request after the middleware: the actor is read when the row is
    written. (No API changes accounts; a view of the test's own stands in for one.)"""

    class Switch(APIView):
        def post(self, request):
            bob = User.objects.get(username="bob")
            bob.is_active = False
            bob.save()
            return Response({})

    token, _ = Token.objects.get_or_create(user=demo["admin"])
    request = APIRequestFactory().post("/x/", HTTP_AUTHORIZATION=f"Token {token.key}")
    since = last_id()
    assert AskingMiddleware(Switch.as_view())(request).status_code == 200
    assert said(events(since=since)) == [("account_changed", "admin", {"is_active": True}, {"is_active": False})]


# --- who reads them -----------------------------------------------------------------------------


def test_a_reviewer_reads_no_account_events_not_even_their_own(client, demo, api):
    rita, finn = demo["rita"], demo["finn"]
    rita.groups.add(Group.objects.get(name="finance"))
    finn.groups.remove(Group.objects.get(name="reviewers"))
    make_request("alice", group="finance")  # an event rita may read
    assert events(since=0)
    for who in ("rita", "finn"):
        rows = api(who).get("/api/audit/").json()["results"]
        assert rows and not [r for r in rows if r["action"] in ACCOUNT], who
        assert api(who).get("/api/audit/?action=member_added").json()["results"] == []
        assert api(who).get(f"/api/audit/?object_ref=user:{who}").json()["results"] == []
        client.force_login(demo[who])
        page = client.get("/audit/").content.decode()
        assert page.count("data-event-id=") >= 1 and 'data-action="member_' not in page
        assert 'data-action="account_' not in page
        assert client.get("/audit/?action=member_added").content.decode().count("data-event-id=") == 0
        assert 'value="member_added"' not in page and 'value="decided"' in page  # the filter offers none of them
        exported = list(csv.reader(io.StringIO(b"".join(client.get("/audit/export.csv").streaming_content).decode())))
        assert not [r for r in exported[1:] if r[2] in ACCOUNT]


def test_an_admin_reads_and_filters_them_in_words(admin, demo, api):
    rita = demo["rita"]
    since = last_id()
    rita.groups.add(Group.objects.get(name="finance"))
    rita.is_active = False
    rita.save()
    ours = events(since=since)
    rows = api("admin").get("/api/audit/?action=member_added,account_changed&object_ref=user:rita").json()["results"]
    assert [(r["action"], r["summary"]) for r in rows][:2] == [("account_changed", "rita switched off"),
                                                               ("member_added", "rita added to finance")]
    assert rows[0]["actor"] is None and rows[0]["request"] is None
    assert api("admin").get("/api/audit/?action=decided").json()["results"] == []
    page = admin.get("/audit/?action=member_added&object_ref=user:rita").content.decode()
    assert page.count("data-event-id=") == 3  # the demo's reviewers and support, and finance
    assert "rita added to finance" in page and 'value="member_added" selected' in page  # offered to staff
    french = admin.get("/audit/?action=member_added&object_ref=user:rita", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert "Ajouté au groupe" in french and "rita ajouté à finance" in french  # the label and the sentence
    resp = admin.get("/audit/export.csv?action=account_changed&object_ref=user:rita")
    exported = list(csv.reader(io.StringIO(b"".join(resp.streaming_content).decode())))
    assert exported[0][-1] == "summary"
    assert [(r[0], r[2], r[3], r[-1]) for r in exported[1:]] == [(str(ours[1].pk), "account_changed", "",
                                                                  "rita switched off")]


def test_a_group_made_and_the_permissions_given_and_taken_are_recorded(admin, demo):
    """Saving a tool's policy asks a Django permission, so who was given one, and by whom, is part of
    who could loosen review; a group's making was not recorded either."""
    from django.contrib.auth.models import Permission

    change = Permission.objects.get(codename="change_toolpolicy")
    add = Permission.objects.get(codename="add_toolpolicy")
    stan = User.objects.create_user("stan", is_staff=True)
    since = last_id()
    resp = admin.post("/admin/auth/group/add/", {"name": "policy-editors", "permissions": [change.pk, add.pk],
                                                 "_save": "Save"})
    assert resp.status_code == 302, resp.content.decode()[:3000]
    resp = admin.post(f"/admin/auth/user/{stan.pk}/change/", user_form(stan, user_permissions=[change.pk]))
    assert resp.status_code == 302, resp.content.decode()[:3000]
    granted = {"holder": "user:stan", "permission": "approvals.change_toolpolicy", "name": change.name}
    assert said(events("group_created", "permission_granted", "permission_revoked", since=since)) == [
        ("group_created", "admin", None, {"name": "policy-editors"}),
        ("permission_granted", "admin", None, {"holder": "group:policy-editors",
                                               "permission": "approvals.add_toolpolicy", "name": add.name}),
        ("permission_granted", "admin", None, {"holder": "group:policy-editors",
                                               "permission": "approvals.change_toolpolicy", "name": change.name}),
        ("permission_granted", "admin", None, granted),
    ]
    since = last_id()
    change.user_set.remove(stan)  # from the permission's side, by code: no actor
    Group.objects.get(name="policy-editors").permissions.clear()
    stan.user_permissions.remove(add)  # one it did not have: nothing
    assert said(events("permission_granted", "permission_revoked", since=since)) == [
        ("permission_revoked", None, granted, None),
        ("permission_revoked", None, {"holder": "group:policy-editors", "permission": "approvals.add_toolpolicy",
                                      "name": add.name}, None),
        ("permission_revoked", None, {"holder": "group:policy-editors", "permission": "approvals.change_toolpolicy",
                                      "name": change.name}, None),
    ]
    page = admin.get("/audit/?object_ref=user:stan").content.decode()
    assert f"stan given the permission “{change.name}”" in page and f"stan lost the permission “{change.name}”" in page
    page = admin.get("/audit/?action=group_created").content.decode()
    assert "group policy-editors created" in page
