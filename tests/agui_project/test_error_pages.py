"""The site's error pages (agui_project/errors.py, templates/4xx/500.html): the site's layout and
navigation with a sentence that explains, also with DEBUG off; machine endpoints keep JSON errors."""

import pytest
from django.test import RequestFactory
from django.urls import get_resolver

from agui_project import errors
from agui_project.limits import is_json_error

pytestmark = pytest.mark.django_db


@pytest.fixture(params=[True, False], ids=["debug", "production"])
def debug(request, settings):
    settings.DEBUG = request.param
    return request.param


def test_bob_on_the_inbox_gets_the_styled_403(client, demo, debug):
    client.force_login(demo["bob"])
    resp = client.get("/inbox/")
    assert resp.status_code == 403
    assert "403.html" in [t.name for t in resp.templates]
    body = resp.content.decode()
    assert '<nav class="site-nav"' in body and 'href="/chat/"' in body  # the site's navigation
    assert "The inbox is for reviewers." in body
    assert "signed in as <strong>bob</strong>" in body
    assert "<h1>403 Forbidden</h1>" not in body


def test_json_requests_keep_json_errors(client, demo, debug):
    client.force_login(demo["bob"])
    for headers in ({"HTTP_ACCEPT": "application/json"}, {"HTTP_X_REQUESTED_WITH": "XMLHttpRequest"}):
        resp = client.get("/inbox/summary/", **headers)
        assert resp.status_code == 403 and is_json_error(resp), resp.content
        assert resp.json()["message"] == "The inbox is for reviewers."
    resp = client.get("/api/no-such-endpoint/")
    assert resp.status_code == 404 and is_json_error(resp)
    resp = client.get("/agui/no-such-endpoint/")
    assert resp.status_code == 404 and is_json_error(resp)


def test_a_missing_page_with_debug_off_gets_the_styled_404(client, demo, settings):
    settings.DEBUG = False
    client.force_login(demo["alice"])
    resp = client.get("/no-such-page/")
    assert resp.status_code == 404
    body = resp.content.decode()
    assert "404.html" in [t.name for t in resp.templates]
    assert "Page not found" in body and "<code>/no-such-page/</code>" in body and '<nav class="site-nav"' in body
    client.logout()
    assert "Page not found" in client.get("/no-such-page/").content.decode()


def test_the_500_page_explains_and_survives_a_broken_context(demo, monkeypatch):
    request = RequestFactory().get("/inbox/")
    request.user = demo["rita"]
    resp = errors.server_error(request)
    body = resp.content.decode()
    assert resp.status_code == 500 and "Something went wrong on our side" in body and 'class="site-nav"' in body

    def broken(request):
        raise RuntimeError("database gone")

    monkeypatch.setattr("agui_project.context.is_reviewer", broken)
    resp = errors.server_error(request)
    assert resp.status_code == 500 and "Something went wrong on our side" in resp.content.decode()
    api = RequestFactory().get("/api/approvals/")
    assert is_json_error(errors.server_error(api))


def test_the_handlers_are_the_sites():
    resolver = get_resolver()
    assert resolver.resolve_error_handler(400) is errors.bad_request
    assert resolver.resolve_error_handler(403) is errors.permission_denied
    assert resolver.resolve_error_handler(404) is errors.page_not_found
    assert resolver.resolve_error_handler(500) is errors.server_error


def test_a_stale_form_gets_the_styled_csrf_page_and_changes_nothing(demo, debug):
    """A form sent without its CSRF token (a page left open across a sign-in in another tab):
    the site's layout with what happened and what to do, not Django's bare 'CSRF verification failed'."""
    from django.test import Client

    from approvals.models import NotificationSetting

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(demo["finn"])
    resp = browser.post("/inbox/settings/", {"mail": "never"})
    assert resp.status_code == 403 and "csrf_failure.html" in [t.name for t in resp.templates]
    body = resp.content.decode()
    assert '<nav class="site-nav"' in body and "This form could not be sent" in body and "Nothing was changed" in body
    assert "CSRF" not in body and "Referer" not in body  # Django's reason is for the log
    assert not NotificationSetting.objects.filter(user=demo["finn"]).exists()
    api = browser.post("/inbox/settings/", {"mail": "never"}, HTTP_ACCEPT="application/json")
    assert api.status_code == 403 and api.json()["code"] == "csrf_failed"


def test_the_rest_api_answers_without_its_trailing_slash_and_keeps_the_body(api, demo, debug):
    """A client that drops the slash (`POST /api/approvals`) got a RuntimeError (500) under DEBUG and a
    301 that loses the body otherwise; now it is served as if it had the slash. Pages keep Django's
    redirect."""
    from django.test import Client

    from approvals.models import ApprovalRequest

    alice = api("alice")
    made = alice.post("/api/approvals", {"tool_name": "crm.delete_contact", "arguments": {"email": "a@example.com"},
                                         "schema": {"type": "object"}}, format="json")
    assert made.status_code == 201, made.content
    assert ApprovalRequest.objects.filter(pk=made.json()["id"]).exists()
    assert alice.get(f"/api/approvals/{made.json()['id']}").json()["id"] == made.json()["id"]
    assert alice.get("/api/threads").status_code == 200
    assert alice.get("/api/no-such-thing").status_code == 404  # not a route with a slash either
    page = Client()
    page.force_login(demo["finn"])
    assert page.get("/inbox").status_code == 301  # pages: Django's redirect to /inbox/


@pytest.mark.parametrize("who,method,url,data", [
    ("finn", "get", "/inbox/?tool=a%00b", None), ("finn", "get", "/inbox/?q=rent%00", None),
    ("finn", "get", "/inbox/stats/?agent=%00", None), ("finn", "get", "/inbox/a%00b/", None),
    ("finn", "get", "/inbox/summary/?id=a%00", None), ("finn", "get", "/audit/export.csv?actor=%00", None),
    ("alice", "get", "/chat/a%00b/", None), ("admin", "get", "/admin/auth/user/?q=%00", None),
    ("finn", "post", "/inbox/bulk/", {"ids": ["a\x00"], "decision": "approve"}),
    ("finn", "post", "{request}", {"action": "reject", "feedback": "not\x00now"}),
])
def test_a_nul_on_a_page_is_a_400_and_changes_nothing(client, demo, debug, who, method, url, data):
    """PostgreSQL stores no NUL in text: the inbox's filters, ids and a rejection's reason reached
    its queries with one (500s); SQLite took them."""
    from approvals.models import ApprovalRequest
    from tests.helpers import transfer_request

    req = transfer_request(demo["alice"])
    client.force_login(demo[who])
    resp = getattr(client, method)(url.format(request=f"/inbox/{req.pk}/"), data)
    assert resp.status_code == 400
    assert debug or "400.html" in [t.name for t in resp.templates]  # with DEBUG, Django's technical page
    assert ApprovalRequest.objects.get(pk=req.pk).status == ApprovalRequest.Status.PENDING


def test_a_nul_under_the_api_is_still_named_and_a_big_form_still_413(api, client, demo, settings):
    resp = api("finn").get("/api/approvals/?tool=a%00")
    assert resp.status_code == 400 and "tool" in resp.json()
    settings.AGUI_MAX_BODY_BYTES = settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    client.force_login(demo["finn"])
    resp = client.post("/inbox/bulk/", {"ids": ["x"], "decision": "reject", "feedback": "\x00" + "x" * 2000})
    assert resp.status_code == 413


def csrf_lines(caplog):
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "agui_project.errors"]


def test_every_form_refused_over_plain_http_with_secure_cookies_says_why(client, settings, caplog):
    """DJANGO_DEBUG=0 makes the cookies Secure; served over plain HTTP (no TLS in front, or a TLS proxy
    without AGUI_PROXY_SSL_HEADER), a browser keeps no cookie and every sign-in was a 403 whose log line
    said only 'CSRF cookie not set'."""
    from django.test import Client

    settings.CSRF_COOKIE_SECURE = settings.SESSION_COOKIE_SECURE = True
    with caplog.at_level("INFO", logger="agui_project.errors"):
        resp = Client(enforce_csrf_checks=True).post("/accounts/login/", {"username": "alice", "password": "x"})
    assert resp.status_code == 403
    ((level, line),) = csrf_lines(caplog)
    assert level == "WARNING" and "CSRF cookie not set" in line and "plain HTTP" in line, line
    assert "AGUI_PROXY_SSL_HEADER" in line


def test_a_form_refused_for_its_origin_names_the_origin_the_site_took_itself_for(client, settings, caplog):
    """Behind a proxy that passes `Host: $host` (nginx drops the port) every sign-in was a CSRF 403."""
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.get("/accounts/login/")  # the CSRF cookie
    token = browser.cookies["csrftoken"].value
    with caplog.at_level("INFO", logger="agui_project.errors"):
        resp = browser.post("/accounts/login/", {"username": "alice", "password": "x", "csrfmiddlewaretoken": token},
                            HTTP_ORIGIN="http://testserver:8443")
    assert resp.status_code == 403
    ((level, line),) = csrf_lines(caplog)
    assert level == "WARNING" and "http://testserver:8443" in line, line
    assert "took itself for http://testserver " in line and "DJANGO_CSRF_TRUSTED_ORIGINS" in line, line


def test_a_stale_form_is_not_a_deployment_warning(demo, caplog):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(demo["finn"])
    with caplog.at_level("INFO", logger="agui_project.errors"):
        assert browser.post("/inbox/settings/", {"mail": "never"}).status_code == 403
    assert [level for level, _ in csrf_lines(caplog)] == ["INFO"]


@pytest.mark.parametrize("case", ["origin", "plain-http"])
def test_a_refusal_of_the_sites_setup_does_not_blame_the_persons_cookies(demo, debug, settings, caplog, case):
    """Behind a proxy that loses the Host's port or the scheme, or over plain HTTP with Secure cookies, every
    form fails the CSRF check: the page told the person (often the deployer trying the sign-in) to allow
    cookies; it says the site's setup is the cause and the log says which, as a warning."""
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(demo["finn"])
    extra = {}
    if case == "origin":
        extra["HTTP_ORIGIN"] = "https://inbox.example.com"  # the public origin a proxy did not pass on
    else:
        settings.CSRF_COOKIE_SECURE = True
    with caplog.at_level("INFO", logger="agui_project.errors"):
        resp = browser.post("/inbox/settings/", {"mail": "never"}, **extra)
        api = browser.post("/inbox/settings/", {"mail": "never"}, HTTP_ACCEPT="application/json", **extra)
    body = resp.content.decode()
    assert resp.status_code == 403 and "This form could not be sent" in body
    assert "set up so that no form can be sent" in body and "allow cookies" not in body
    assert api.status_code == 403 and "set up so that nothing can be sent" in api.json()["message"]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 2 and all(r.name == "agui_project.errors" for r in caplog.records)  # once each, not Django's too
    assert all(("DJANGO_CSRF_TRUSTED_ORIGINS" if case == "origin" else "AGUI_PROXY_SSL_HEADER") in w
                          for w in warned)


def test_a_stale_form_still_says_what_the_person_can_do(demo, debug):
    from django.test import Client

    browser = Client(enforce_csrf_checks=True)
    browser.force_login(demo["finn"])
    body = browser.post("/inbox/settings/", {"mail": "never"}).content.decode()
    assert "allow cookies for this site" in body and "set up so" not in body
