"""Who may open the reviewer and admin pages, and that every form needs its CSRF token."""

import pytest
from django.test import Client

from approvals.models import ApprovalRequest, ToolPolicy
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db

REVIEWER_PAGES = ["/inbox/", "/inbox/stats/", "/inbox/summary/", "/audit/", "/audit/export.csv"]
ADMIN_PAGES = ["/policies/", "/policies/transfer_money/"]


@pytest.mark.parametrize("url", REVIEWER_PAGES + ADMIN_PAGES)
def test_anonymous_is_sent_to_login(client, url):
    resp = client.get(url)
    assert resp.status_code == 302 and resp["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("url", REVIEWER_PAGES + ADMIN_PAGES)
def test_end_users_get_403(login, url):
    assert login("alice").get(url).status_code == 403


def test_end_user_cannot_see_a_detail_or_decide_in_bulk(login, demo):
    req = make_request("bob")
    client = login("alice")
    assert client.get(f"/inbox/{req.pk}/").status_code == 403
    assert client.post("/inbox/bulk/", {"ids": [req.pk], "decision": "approve"}).status_code == 403
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"


@pytest.mark.parametrize("url", ["/inbox/", "/inbox/stats/", "/audit/"])
def test_reviewers_open_the_reviewer_pages(login, url):
    assert login("rita").get(url).status_code == 200


@pytest.mark.parametrize("url", ADMIN_PAGES)
def test_the_console_is_for_admins_only(login, url):
    assert login("finn").get(url).status_code == 403
    assert login("admin").get(url).status_code == 200


def test_reviewers_see_their_groups_requests_only(login):
    finance = make_request("alice", group="finance", description="finance only")
    support = make_request("alice", group="support", description="support only")
    rita = login("rita")  # reviewers + support
    page = rita.get("/inbox/?scope=all&status=all").content.decode()
    assert "support only" in page and "finance only" not in page
    assert rita.get(f"/inbox/{finance.pk}/").status_code == 404
    assert rita.get(f"/inbox/{support.pk}/").status_code == 200
    admin = login("admin")
    page = admin.get("/inbox/?scope=all&status=all").content.decode()
    assert "support only" in page and "finance only" in page


def test_bulk_cannot_decide_what_one_cannot_see(login):
    finance = make_request("alice", group="finance")
    resp = login("rita").post("/inbox/bulk/", {"ids": [finance.pk], "decision": "reject", "feedback": "no"},
                              HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert resp.status_code == 200
    assert resp.json()["results"] == [{"id": finance.pk, "ok": False, "code": "not_found",
                                       "message": "no such request", "errors": {}}]
    assert ApprovalRequest.objects.get(pk=finance.pk).status == "pending"


def test_every_form_needs_csrf(demo):
    req = make_request("alice")
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(demo["finn"])
    assert strict.post(f"/inbox/{req.pk}/", {"action": "approve"}).status_code == 403
    assert strict.post("/inbox/bulk/", {"ids": [req.pk], "decision": "approve"}).status_code == 403
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"
    admin = Client(enforce_csrf_checks=True)
    admin.force_login(demo["admin"])
    assert admin.post("/policies/transfer_money/", {"action": "save", "mode": "never"}).status_code == 403
    assert admin.post("/policies/transfer_money/", {"action": "revert"}).status_code == 403
    assert not ToolPolicy.objects.filter(tool_name="transfer_money").exists()
    # and the pages carry the token their forms need
    assert b"csrfmiddlewaretoken" in admin.get("/policies/transfer_money/").content
    finn = Client()
    finn.force_login(demo["finn"])
    assert finn.get("/inbox/").content.count(b"csrfmiddlewaretoken") >= 1
    assert b"csrfmiddlewaretoken" in finn.get(f"/inbox/{req.pk}/").content


def test_the_pages_load_nothing_from_other_sites(login):
    req = make_request("alice")
    admin = login("admin")
    for url in ["/inbox/", f"/inbox/{req.pk}/", "/inbox/stats/", "/policies/", "/policies/transfer_money/", "/audit/"]:
        body = admin.get(url).content.decode()
        for attr in ('src="http', "src='http", 'href="http', 'src="//', 'href="//'):
            assert attr not in body, (url, attr)


@pytest.mark.parametrize("url", ["/inbox/", "/inbox/stats/"])
def test_the_agent_filter_names_only_agents_of_requests_one_may_see(login, url):
    make_request("alice", group="finance", agent="treasury-bot")
    make_request("alice", group="support", agent="helpdesk-bot")
    page = login("rita").get(url).content.decode()  # reviewers + support
    assert "helpdesk-bot" in page and "treasury-bot" not in page
    page = login("admin").get(url).content.decode()
    assert "helpdesk-bot" in page and "treasury-bot" in page
