"""Each person's time zone: chosen on their settings page, else their browser's (a cookie its script
writes), else UTC; pages and mails show times in it, named; machine outputs (the REST API, the audit
CSV) stay UTC."""

import asyncio
import csv
import io
import re
from datetime import UTC, datetime

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail as django_mail
from django.test import Client
from django.utils import formats

from agui_project.handler import ASGIHandler
from approvals import mail as approval_mail
from approvals import notify
from approvals.models import ApprovalRequest
from people import zones
from people.models import Profile
from tests.helpers import asgi_get
from tests.inbox_helpers import make_request

# 14:05 UTC: 11:05 in São Paulo (UTC-3, no summer time since 2019), 21:05 in Jakarta (WIB, UTC+7)
DEADLINE = datetime(2030, 1, 15, 14, 5, tzinfo=UTC)
IN_UTC = '<time datetime="2030-01-15T14:05:00+00:00">Jan. 15, 2030, 2:05 p.m. UTC</time>'
IN_SAO_PAULO = '<time datetime="2030-01-15T11:05:00-03:00">Jan. 15, 2030, 11:05 a.m. UTC-3</time>'
IN_JAKARTA = '<time datetime="2030-01-15T21:05:00+07:00">Jan. 15, 2030, 9:05 p.m. WIB</time>'


def signed_in(user, **cookies):
    client = Client()
    client.force_login(user)
    for name, value in cookies.items():
        client.cookies[name] = value
    return client


def choose(user_or_client, zone):
    client = user_or_client if isinstance(user_or_client, Client) else signed_in(user_or_client)
    response = client.post("/settings/", {"language": "", "time_zone": zone})
    assert response.status_code == 302, response.content.decode()


@pytest.fixture
def pending(demo):
    """A request to finance (finn) whose deadline is DEADLINE."""
    req = make_request("alice", group="finance")
    ApprovalRequest.objects.filter(pk=req.pk).update(expires_at=DEADLINE)
    return req


@pytest.mark.django_db
def test_the_settings_page_saves_a_zone_and_refuses_one_zoneinfo_does_not_know(demo):
    finn = signed_in(demo["finn"])
    page = finn.get("/settings/")
    assert page.status_code == 200
    body = page.content.decode()
    assert '<option value="America/Sao_Paulo">America/Sao Paulo (UTC-3)</option>' in body
    assert '<option value="" selected>Your browser&#x27;s</option>' in body  # nothing chosen yet

    response = finn.post("/settings/", {"language": "", "time_zone": "Asia/Jakarta"})
    assert response.status_code == 302 and response["Location"] == "/settings/"
    assert Profile.objects.get(user=demo["finn"]).time_zone == "Asia/Jakarta"
    body = finn.get("/settings/").content.decode()
    assert "Your settings are saved." in body
    assert '<option value="Asia/Jakarta" selected>Asia/Jakarta (UTC+7)</option>' in body

    # "localtime": a zone file, not a zone a browser knows (a page formatting times in it threw)
    for bad in ("Mars/Olympus", "../../etc/passwd", "asia/jakarta", "x" * 200, "localtime", "posixrules", "Factory"):
        refused = finn.post("/settings/", {"language": "", "time_zone": bad})
        assert refused.status_code == 400
        assert 'id="time-zone-error" role="alert"' in refused.content.decode()
        assert Profile.objects.get(user=demo["finn"]).time_zone == "Asia/Jakarta"
    refused = finn.post("/settings/", {"language": "", "time_zone": "Mars/Olympus"})
    assert "“Mars/Olympus” is not a time zone this site knows." in refused.content.decode()

    # back to the browser's
    assert finn.post("/settings/", {"language": "", "time_zone": ""}).status_code == 302
    assert Profile.objects.get(user=demo["finn"]).time_zone == ""


@pytest.mark.django_db
def test_the_settings_page_keeps_the_language_beside_the_zone(demo):
    finn = signed_in(demo["finn"])
    response = finn.post("/settings/", {"language": "pt-br", "time_zone": "America/Sao_Paulo"})
    assert response.status_code == 302 and response.cookies["django_language"].value == "pt-br"
    assert Profile.objects.get(user=demo["finn"]).language == "pt-br"
    assert finn.get("/settings/").content.decode().count('lang="pt-br" selected') == 2  # the header's and this page's
    assert finn.post("/settings/", {"language": "xx", "time_zone": ""}).status_code == 400
    assert Profile.objects.get(user=demo["finn"]).language == "pt-br"


@pytest.mark.django_db
def test_a_request_page_shows_the_deadline_in_the_zone_the_reviewer_chose(demo, pending):
    finn = signed_in(demo["finn"])
    assert IN_UTC in finn.get(f"/inbox/{pending.pk}/").content.decode()  # nothing chosen, no browser seen: UTC
    choose(finn, "America/Sao_Paulo")  # this session's pages follow at once; another's from its next sign-in
    page = finn.get(f"/inbox/{pending.pk}/").content.decode()
    assert IN_SAO_PAULO in page
    assert '<html lang="en" data-time-zone="America/Sao_Paulo">' in page  # for the scripts that format times
    # a choice wins over the browser's zone
    assert IN_SAO_PAULO in signed_in(demo["finn"], agui_tz="Asia/Jakarta").get(f"/inbox/{pending.pk}/").content.decode()


@pytest.mark.django_db
def test_the_live_fragments_the_inbox_fetches_after_a_notice_are_in_the_readers_zone(demo, pending):
    """The inbox socket's notices carry machine times; the page then fetches its fragments, rendered
    for the person fetching them."""
    notice = notify._approval_notice("requested", ApprovalRequest.objects.get(pk=pending.pk))
    assert notice["approval"]["expires_at"] == "2030-01-15T14:05:00+00:00"
    choose(demo["finn"], "America/Sao_Paulo")
    finn = signed_in(demo["finn"])
    live = finn.get(f"/inbox/{pending.pk}/?partial=live").content.decode()  # the audit trail's times
    assert re.search(r'<time class="muted" datetime="[-\d]+T[\d:.]+-03:00" title="[^"]+ UTC-3">', live), live
    preview = finn.get(f"/inbox/{pending.pk}/?partial=preview").content.decode()
    assert "deadline Jan. 15, 2030, 11:05 a.m. UTC-3" in preview
    rows = finn.get("/inbox/?partial=rows").content.decode()
    assert "deadline Jan. 15, 2030, 11:05 a.m. UTC-3" in rows


@pytest.mark.django_db
def test_the_browser_zone_is_used_when_none_is_chosen_and_a_bogus_one_is_ignored(demo, pending):
    path = f"/inbox/{pending.pk}/"
    page = signed_in(demo["finn"], agui_tz="Asia/Jakarta").get(path).content.decode()
    assert IN_JAKARTA in page
    # kept for finn's mails, once
    assert Profile.objects.get(user=demo["finn"]).browser_time_zone == "Asia/Jakarta"
    for bogus in ("Mars/Olympus", "../../../etc/passwd", "Asia/Jakarta\x00", "<script>", "A" * 5000, "", "localtime"):
        response = signed_in(demo["finn"], agui_tz=bogus).get(path)
        assert response.status_code == 200
        assert IN_UTC in response.content.decode()
    assert Profile.objects.get(user=demo["finn"]).browser_time_zone == "Asia/Jakarta"
    # anyone's page, signed in or not
    assert Client(cookies={}).get("/accounts/login/").status_code == 200
    anonymous = Client()
    anonymous.cookies[zones.COOKIE] = "Mars/Olympus"
    assert anonymous.get("/accounts/login/").status_code == 200


def _asgi_get(path, cookies):
    status, _headers, body = asyncio.run(asgi_get(ASGIHandler(), path, [(b"cookie", cookies.encode())]))
    return status, body


@pytest.mark.django_db(transaction=True)
def test_the_zone_holds_through_the_asgi_handlers_hops(demo, pending, settings):
    """Daphne's path: the middleware's hooks on one thread, the view on another."""
    choose(demo["finn"], "America/Sao_Paulo")
    finn = signed_in(demo["finn"])
    session = finn.cookies[settings.SESSION_COOKIE_NAME].value
    status, body = _asgi_get(f"/inbox/{pending.pk}/", f"{settings.SESSION_COOKIE_NAME}={session}")
    assert status == 200 and IN_SAO_PAULO in body
    rita = signed_in(demo["rita"])
    Group.objects.get(name="finance").user_set.add(demo["rita"])
    session = rita.cookies[settings.SESSION_COOKIE_NAME].value
    status, body = _asgi_get(f"/inbox/{pending.pk}/", f"{settings.SESSION_COOKIE_NAME}={session}; agui_tz=Asia/Jakarta")
    assert status == 200 and IN_JAKARTA in body


@pytest.mark.django_db(transaction=True)
def test_a_reviewer_with_a_zone_gets_mail_in_that_zone(demo):
    fay = User.objects.create_user("fay", email="fay@example.com", password="pw")
    fay.groups.add(Group.objects.get(name="finance"))
    choose(demo["finn"], "America/Sao_Paulo")
    req = make_request("alice", group="finance", timeout=3600)
    by_to = {m.to[0]: m.body for m in django_mail.outbox}
    sao_paulo = req.expires_at.astimezone(zones.zoneinfo.ZoneInfo("America/Sao_Paulo"))
    utc = req.expires_at.astimezone(UTC)
    assert f"Decide before: {formats.date_format(sao_paulo, 'DATETIME_FORMAT')} America/Sao_Paulo" \
        in by_to["finn@example.com"]
    # fay chose none and no browser of hers was seen: UTC, said so
    assert f"Decide before: {formats.date_format(utc, 'DATETIME_FORMAT')} UTC" in by_to["fay@example.com"]

    # a reminder (approvals.mail): finn's zone; fay's browser, seen once, is hers until she chooses
    signed_in(fay, agui_tz="Asia/Jakarta").get("/inbox/")
    django_mail.outbox.clear()
    approval_mail.reminder(ApprovalRequest.objects.get(pk=req.pk), ["finn@example.com", "fay@example.com"])
    by_to = {m.to[0]: m.body for m in django_mail.outbox}
    jakarta = req.expires_at.astimezone(zones.zoneinfo.ZoneInfo("Asia/Jakarta"))
    assert f"({formats.date_format(sao_paulo, 'DATETIME_FORMAT')} America/Sao_Paulo)" in by_to["finn@example.com"]
    assert f"({formats.date_format(jakarta, 'DATETIME_FORMAT')} Asia/Jakarta)" in by_to["fay@example.com"]


@pytest.mark.django_db
def test_machine_outputs_stay_utc_whatever_the_readers_zone(demo, pending):
    choose(demo["finn"], "America/Sao_Paulo")
    finn = signed_in(demo["finn"])
    data = finn.get(f"/api/approvals/{pending.pk}/").json()  # a session's API call, as the pages' scripts make
    assert data["expires_at"] in ("2030-01-15T14:05:00Z", "2030-01-15T14:05:00+00:00")
    choose(demo["admin"], "Asia/Jakarta")
    admin = signed_in(demo["admin"])
    response = admin.get("/audit/export.csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert rows and all(row["created_at"].endswith("+00:00") for row in rows)


def test_a_zone_is_named_by_an_abbreviation_only_where_it_names_one_offset():
    """tzdata calls Shanghai's time "CST", as it calls Chicago's and Havana's: a reader in Shanghai read
    "CST" as the Americans' Central time. Such an abbreviation gives way to the offset; one that names one
    offset stays, and a zone without one in letters has its offset (São Paulo's "-03")."""
    from datetime import UTC, datetime
    from zoneinfo import ZoneInfo

    from people import zones

    def named(zone, month):
        return zones.label(datetime(2026, month, 15, 12, tzinfo=UTC).astimezone(ZoneInfo(zone)))

    assert {"CST", "IST"} <= zones.ambiguous()
    assert [named("Asia/Shanghai", 1), named("America/Chicago", 1), named("America/Chicago", 7)] == [
        "UTC+8", "UTC-6", "UTC-5"]
    assert [named("Asia/Kolkata", 1), named("Asia/Jerusalem", 1)] == ["UTC+5:30", "UTC+2"]
    assert [named("Europe/Paris", 1), named("Europe/Paris", 7), named("Asia/Jakarta", 1), named("UTC", 1),
            named("America/New_York", 1), named("America/Sao_Paulo", 1)] == ["CET", "CEST", "WIB", "UTC", "EST",
                                                                             "UTC-3"]
