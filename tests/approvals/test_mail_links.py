"""One-click decisions by mail: the request mail and its links, the confirmation page (a GET never
decides), the POST deciding through the service as the recipient, every refused link, and the
per-person mail setting."""

import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.core import signing
from django.test import Client
from django.utils import timezone

from approvals import mail_links, services
from approvals.models import ApprovalRequest, AuditEvent, Decision, MailLink, NotificationSetting
from tests.helpers import finance_member
from tests.inbox_helpers import make_request


def _mails_to(outbox, email):
    return [m for m in outbox if m.to == [email]]


def _links(message):
    base = settings.AGUI_PUBLIC_URL.rstrip("/")
    found = dict(re.findall(r"^(Approve|Reject): +(\S+)$", message.body, re.M))
    assert set(found) == {"Approve", "Reject"}, message.body
    assert all(url.startswith(base + "/inbox/mail/") for url in found.values())
    return {k.lower(): url[len(base):] for k, url in found.items()}


def _request(captured, requester="alice", **kwargs):
    with captured(execute=True):
        return make_request(requester, **kwargs)


def _nothing_decided(req):
    req.refresh_from_db()
    assert req.status == ApprovalRequest.Status.PENDING
    assert not Decision.objects.filter(request=req).exists()


@pytest.mark.django_db(transaction=True)
def test_the_group_gets_a_mail_whose_link_decides_only_on_confirmation(demo, fay, client, mailoutbox):
    """End to end with real commits: the request's on-commit mail, the page, the POST, the audit."""
    req = make_request("alice", group="finance", description="Transfer 500.00 USD to 0987654321")
    assert sorted(m.to[0] for m in mailoutbox) == ["fay@example.com", "finn@example.com"]  # never alice
    message = _mails_to(mailoutbox, "finn@example.com")[0]
    assert message.subject == "[agui-inbox] Approval needed: transfer_money"
    assert "Transfer 500.00 USD to 0987654321" in message.body and '"amount": 500,' in message.body
    assert f"/inbox/{req.pk}/" in message.body and "/inbox/settings/" in message.body
    links = _links(message)
    assert links != _links(_mails_to(mailoutbox, "fay@example.com")[0])  # each recipient has their own

    for _ in range(2):  # a mail scanner, then the person: the page shows, nothing is decided
        page = client.get(links["approve"])
        assert page.status_code == 200
        assert b"Approve: <bdi>Transfer 500.00 USD" in page.content and b'id="mail-confirm-button"' in page.content
        assert b"deciding as <strong>finn</strong>" in page.content
    _nothing_decided(req)
    assert MailLink.objects.get(request=req, user=demo["finn"]).used_at is None

    done = client.post(links["approve"])  # not signed in: the link stands for finn
    assert done.status_code == 200 and b"Approved" in done.content
    req.refresh_from_db()
    assert req.status == ApprovalRequest.Status.APPROVED and req.decided_by == demo["finn"]
    decided = AuditEvent.objects.get(request=req, action=AuditEvent.Action.DECIDED)
    assert decided.actor == demo["finn"] and decided.after["decision"] == "approve"
    assert decided.after["via"] == "mail link"  # the trail says the decision came by a mailed link
    admin = Client()
    admin.force_login(demo["admin"])
    trail = admin.get(f"/audit/?request={req.pk}").content.decode()
    assert re.search(r"given through</span>: (<del>.*?</del> → )?<ins><bdi>mail link</bdi></ins>", trail), trail[-3000:]
    assert MailLink.objects.get(request=req, user=demo["finn"]).used_decision == "approve"

    # fay's links die with the request
    late = client.get(_links(_mails_to(mailoutbox, "fay@example.com")[0])["reject"])
    assert late.status_code == 410 and b"already settled" in late.content


def test_arguments_are_escaped_on_the_page(demo, client, mailoutbox, django_capture_on_commit_callbacks):
    req = _request(django_capture_on_commit_callbacks, tool="send_email", group="finance",
                   arguments={"to": "bob@example.com", "subject": "<script>alert(1)</script>", "body": "hi"})
    page = client.get(_links(mailoutbox[0])["approve"])
    assert page.status_code == 200
    assert b"<script>alert(1)" not in page.content and b"&lt;script&gt;alert(1)&lt;/script&gt;" in page.content
    _nothing_decided(req)


def test_reject_asks_for_feedback_and_a_refused_post_leaves_the_link_usable(
        demo, client, mailoutbox, django_capture_on_commit_callbacks):
    req = _request(django_capture_on_commit_callbacks, group="finance")
    reject = _links(mailoutbox[0])["reject"]
    page = client.get(reject)
    assert b'name="feedback"' in page.content and b"(required)" in page.content
    refused = client.post(reject, {"feedback": "  "})
    assert refused.status_code == 400 and b"Feedback is required to reject" in refused.content
    _nothing_decided(req)
    done = client.post(reject, {"feedback": "Wrong account"})
    assert done.status_code == 200 and b"Rejected" in done.content
    req.refresh_from_db()
    assert (req.status, req.feedback, req.decided_by) == ("rejected", "Wrong account", demo["finn"])


def test_quorum_counts_each_recipients_link(demo, fay, client, mailoutbox, django_capture_on_commit_callbacks):
    req = _request(django_capture_on_commit_callbacks, group="finance", required=2)
    first = client.post(_links(_mails_to(mailoutbox, "finn@example.com")[0])["approve"])
    assert first.status_code == 200 and b"needs 2 approvals and has 1" in first.content
    req.refresh_from_db()
    assert req.status == "pending"
    second = client.post(_links(_mails_to(mailoutbox, "fay@example.com")[0])["approve"])
    assert second.status_code == 200
    req.refresh_from_db()
    assert req.status == "approved"
    assert sorted(d.user.username for d in req.decisions.all()) == ["fay", "finn"]


def test_a_links_approval_is_of_the_arguments_its_page_showed(demo, fay, client, mailoutbox,
                                                            django_capture_on_commit_callbacks):
    req = _request(django_capture_on_commit_callbacks, group="finance", required=2)
    link = _links(_mails_to(mailoutbox, "fay@example.com")[0])["approve"]
    shown = re.search(r'name="seen" value="([0-9a-f]{64})"', client.get(link).content.decode())
    seen = shown[1] if shown else ""
    services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 900.0})  # meanwhile
    stale = client.post(link, {"seen": seen})
    assert stale.status_code == 409 and "edited after you read them" in stale.content.decode()
    assert "amount&quot;: 900," in stale.content.decode()  # the page now shows what stands
    assert list(req.decisions.values_list("user__username", flat=True)) == ["finn"]
    fresh = re.search(r'name="seen" value="([0-9a-f]{64})"', stale.content.decode())[1]
    assert client.post(link, {"seen": fresh}).status_code == 200  # the link is still hers to use
    req.refresh_from_db()
    assert req.status == "modified" and req.final_arguments["amount"] == 900.0


def test_the_requesters_own_link_is_refused_four_eyes(demo, client, mailoutbox, django_capture_on_commit_callbacks):
    req = _request(django_capture_on_commit_callbacks, requester="finn", group="finance")
    assert not _mails_to(mailoutbox, "finn@example.com")  # the requester is never mailed
    links = mail_links.issue(req, demo["finn"])  # and a link made for them anyway is refused
    path = links["approve"][len(settings.AGUI_PUBLIC_URL.rstrip("/")):]
    page = client.get(path)
    assert page.status_code == 403 and b"someone else must decide it (four eyes)" in page.content
    assert b'id="mail-confirm-button"' not in page.content
    assert client.post(path).status_code == 403
    _nothing_decided(req)
    assert MailLink.objects.get(request=req).used_at is None


def test_forged_links_decide_nothing(demo, client, mailoutbox, django_capture_on_commit_callbacks):
    req = _request(django_capture_on_commit_callbacks, group="finance")
    good = _links(mailoutbox[0])["reject"]
    token = good.split("/")[3]
    nonce = MailLink.objects.get(request=req).nonce
    forged = [
        token[:-2] + ("AA" if not token.endswith("AA") else "BB"),  # a changed signature
        signing.dumps({"n": nonce, "d": "approve"}, salt="another.salt"),  # signed for something else
        signing.dumps({"n": "no-such-nonce", "d": "approve"}, salt=mail_links.SALT),
        signing.dumps({"n": nonce, "d": "delete"}, salt=mail_links.SALT),
    ]
    for bad in forged:
        assert client.get(f"/inbox/mail/{bad}/").status_code == 400
        response = client.post(f"/inbox/mail/{bad}/")
        assert response.status_code == 400 and b"This link is not valid" in response.content
        assert b"Opening this link changed nothing" in response.content
    _nothing_decided(req)


def test_expired_links_decide_nothing(demo, client, mailoutbox, settings, django_capture_on_commit_callbacks):
    req = _request(django_capture_on_commit_callbacks, group="finance")
    link = _links(mailoutbox[0])["approve"]
    settings.AGUI_MAIL_LINK_MAX_AGE_SECONDS = -1  # older than the site keeps links
    assert client.post(link).status_code == 410
    _nothing_decided(req)
    settings.AGUI_MAIL_LINK_MAX_AGE_SECONDS = 3600
    ApprovalRequest.objects.filter(pk=req.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    page = client.get(link)
    assert page.status_code == 410 and b"deadline has passed" in page.content
    response = client.post(link)
    assert response.status_code == 410 and b"Opening this link changed nothing" in response.content
    _nothing_decided(req)  # the deadline sweep settles it by its policy, not the link


def test_a_used_link_and_its_twin_decide_nothing_again(demo, fay, client, mailoutbox,
                                                       django_capture_on_commit_callbacks):
    req = _request(django_capture_on_commit_callbacks, group="finance", required=2)
    links = _links(_mails_to(mailoutbox, "finn@example.com")[0])
    assert client.post(links["approve"]).status_code == 200
    for path in (links["approve"], links["reject"]):
        assert client.get(path).status_code == 410
        response = client.post(path, {"feedback": "changed my mind"})
        assert response.status_code == 410 and b"already been used" in response.content
    req.refresh_from_db()
    assert req.status == "pending" and [d.decision for d in req.decisions.all()] == ["approve"]


def test_a_refused_link_still_valid_for_its_recipient_is_logged_without_its_token(
        demo, fay, client, mailoutbox, django_capture_on_commit_callbacks, settings):
    """django.request logs each 4xx with its path ("Forbidden: /inbox/mail/…/"), and Daphne's
    access log each request's: whoever read the logs could decide as finn with his link."""
    import io
    import logging

    from daphne.access import AccessLogGenerator

    from agui_project.logs import hide_secrets_in_access_log

    _request(django_capture_on_commit_callbacks, group="finance")
    link = _links(_mails_to(mailoutbox, "finn@example.com")[0])["approve"]
    token = link.split("/")[3]
    settings.DEBUG = True  # as `make run` has it: Django's own console handler then writes too
    written, streams = io.StringIO(), {}
    logger = logging.getLogger("django.request")
    while logger:  # every stream a django.request record reaches
        streams.update({h: h.setStream(written) for h in logger.handlers if type(h) is logging.StreamHandler})  # not pytest's
        logger = logger.parent if logger.propagate else None
    try:
        client.force_login(fay)
        assert client.get(link).status_code == 403
    finally:
        for handler, previous in streams.items():
            handler.setStream(previous)
    assert written.getvalue().count("Forbidden: /inbox/mail/[token]/") == 1  # once: not also by Django's own handler
    assert token not in written.getvalue()

    hide_secrets_in_access_log()  # as asgi.py does in Daphne's process
    access = io.StringIO()
    AccessLogGenerator(access)("http", "complete", {"client": "127.0.0.1:5000", "path": link, "method": "GET",
                                                    "status": 200, "size": 1234})
    assert '"GET /inbox/mail/[token]/" 200 1234' in access.getvalue() and token not in access.getvalue()


def test_a_link_opened_by_someone_else_signed_in_is_refused(demo, fay, client, mailoutbox,
                                                            django_capture_on_commit_callbacks):
    req = _request(django_capture_on_commit_callbacks, group="finance")
    link = _links(_mails_to(mailoutbox, "finn@example.com")[0])["approve"]
    client.force_login(fay)  # fay may decide it herself, but not with finn's link
    page = client.get(link)
    assert page.status_code == 403 and b"sent to someone else" in page.content and b"signed in as fay" in page.content
    assert client.post(link).status_code == 403
    _nothing_decided(req)
    client.force_login(demo["finn"])  # the recipient signed in is fine
    assert client.post(link).status_code == 200
    req.refresh_from_db()
    assert req.decided_by == demo["finn"]


def test_a_deactivated_recipients_link_is_refused(demo, client, mailoutbox, django_capture_on_commit_callbacks):
    req = _request(django_capture_on_commit_callbacks, group="finance")
    link = _links(mailoutbox[0])["approve"]
    User.objects.filter(pk=demo["finn"].pk).update(is_active=False)
    response = client.post(link)
    assert response.status_code == 403 and b"has been deactivated" in response.content
    _nothing_decided(req)


def test_sign_in_can_be_required(demo, client, mailoutbox, settings, django_capture_on_commit_callbacks):
    settings.AGUI_MAIL_LINKS_REQUIRE_SIGN_IN = True
    req = _request(django_capture_on_commit_callbacks, group="finance")
    link = _links(mailoutbox[0])["approve"]
    response = client.post(link)
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=/inbox/mail/")
    _nothing_decided(req)
    client.force_login(demo["finn"])
    assert client.post(link).status_code == 200


def test_a_request_for_the_requester_sends_no_link_mail(demo, mailoutbox, django_capture_on_commit_callbacks):
    _request(django_capture_on_commit_callbacks, group=None)
    assert mailoutbox == []


def test_mail_settings_page_and_what_it_changes(demo, fay, client, mailoutbox, django_capture_on_commit_callbacks):
    client.force_login(fay)
    page = client.get("/inbox/settings/")
    assert page.status_code == 200 and b'value="request" checked' in page.content
    assert b'href="/inbox/settings/" aria-current="page">Mail settings' in page.content  # a reviewer's tab
    assert b'href="/inbox/settings/">Mail settings' in client.get("/inbox/").content
    assert client.post("/inbox/settings/", {"mail": "loud"}).status_code == 400
    assert client.post("/inbox/settings/", {"mail": "never"}).status_code == 302
    assert NotificationSetting.objects.get(user=fay).mail == "never"
    assert b'value="never" checked' in client.get("/inbox/settings/").content

    _request(django_capture_on_commit_callbacks, group="finance")
    assert [m.to for m in mailoutbox] == [["finn@example.com"]]  # never: no mail for fay


def test_only_on_escalation(demo, fay, client, mailoutbox, django_capture_on_commit_callbacks):
    mail_links.set_mail_setting(fay, NotificationSetting.Mail.ESCALATION)
    mail_links.set_mail_setting(demo["finn"], NotificationSetting.Mail.NEVER)
    _request(django_capture_on_commit_callbacks, group="finance")
    assert mailoutbox == []  # fay: only escalations; finn: never
    req = _request(django_capture_on_commit_callbacks, group="reviewers")
    assert [m.to for m in mailoutbox] == [["rita@example.com"]]  # finn said never
    ApprovalRequest.objects.filter(pk=req.pk).update(
        escalation_group=Group.objects.get(name="finance"), escalate_at=timezone.now() - timedelta(seconds=1))
    mailoutbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert services.escalate(req.pk)
    assert [m.to for m in mailoutbox] == [["fay@example.com"]]  # escalations: fay yes, finn (never) no
    assert mailoutbox[0].subject == "[agui-inbox] Escalated: transfer_money needs a decision"
    assert "so it is escalated to finance; you may decide it now" in mailoutbox[0].body
    done = client.post(_links(mailoutbox[0])["approve"])  # the escalation group decides from its mail
    assert done.status_code == 200
    req.refresh_from_db()
    assert (req.status, req.decided_by) == ("approved", fay)


def test_a_link_may_answer_with_guidance_where_the_policy_offers_it(demo, client, mailoutbox,
                                                                    django_capture_on_commit_callbacks):
    """Where the tool's policy lets reviewers respond, the mail says so and either link's page offers
    'Answer with guidance instead': the call is not run, the words reach the agent, the link is used.
    Where it does not, the page offers nothing of the kind and a forged POST is refused."""
    req = _request(django_capture_on_commit_callbacks, group="finance", allowed=["approve", "reject", "respond"])
    plain = _request(django_capture_on_commit_callbacks, group="finance")  # the default: no respond
    finn_mails = _mails_to(mailoutbox, "finn@example.com")
    assert "answer with guidance" in finn_mails[0].body and "guidance" not in finn_mails[1].body
    page = client.get(_links(finn_mails[0])["approve"])
    assert page.status_code == 200 and b'id="mail-respond"' in page.content
    assert b'id="mail-respond"' not in client.get(_links(finn_mails[1])["approve"]).content

    empty = client.post(_links(finn_mails[0])["approve"], {"answer": "respond", "feedback": " "})
    assert empty.status_code == 400 and b'id="mail-respond" open' in empty.content
    _nothing_decided(req)
    done = client.post(_links(finn_mails[0])["approve"], {"answer": "respond", "feedback": "Pay 450 now"})
    assert done.status_code == 200 and b"Answered with guidance" in done.content
    req.refresh_from_db()
    assert req.status == ApprovalRequest.Status.RESPONDED and req.feedback == "Pay 450 now"
    assert MailLink.objects.get(request=req, user=demo["finn"]).used_decision == "respond"
    again = client.get(_links(finn_mails[0])["reject"])
    assert again.status_code == 410

    forged = client.post(_links(finn_mails[1])["approve"], {"answer": "respond", "feedback": "Pay 450 now"})
    assert forged.status_code == 400 and b"answer with guidance" in forged.content
    _nothing_decided(plain)


@pytest.mark.django_db
def test_a_recipient_who_left_the_group_is_told_in_their_language(demo, fay, client, mailoutbox, monkeypatch,
                                                                   django_capture_on_commit_callbacks):
    """Every page is in the reader's language: the refusal of a link whose recipient lost the group
    too (its sentence goes through gettext, here a stand-in catalogue that marks what it translated)."""
    from approvals import mail_views

    req = _request(django_capture_on_commit_callbacks, group="finance")
    path = _links(_mails_to(mailoutbox, "fay@example.com")[0])["approve"]
    fay.groups.clear()
    monkeypatch.setattr(mail_views, "_", lambda text: f"«{text}»", raising=False)
    page = client.get(path)
    assert page.status_code == 403
    assert "«You are no longer among the people who may decide this request.»" in page.content.decode()
    _nothing_decided(req)


@pytest.mark.django_db
def test_a_link_approves_only_the_arguments_its_page_showed(demo, fay, client, mailoutbox,
                                                             django_capture_on_commit_callbacks):
    """Two approvals: fay's confirmation page shows 500.00; finn then changes it to 90,000.00 and approves.
    Fay's button approved whatever stood when she pressed it (the 90,000.00 she never saw) and ran it;
    now the page's arguments are what her approval approves, and a change since is said, not approved."""
    req = _request(django_capture_on_commit_callbacks, group="finance", required=2)
    link = _links(_mails_to(mailoutbox, "fay@example.com")[0])["approve"]
    page = client.get(link)
    seen = re.search(rb'name="seen" value="([0-9a-f]{64})"', page.content)
    assert seen, page.content
    services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 90000.0})
    late = client.post(link, {"seen": seen.group(1).decode()})
    assert late.status_code == 409 and b"amount&quot;: 90000," in late.content, late.content
    req.refresh_from_db()
    assert req.status == "pending" and [d.user.username for d in req.decisions.all()] == ["finn"]
    again = re.search(rb'name="seen" value="([0-9a-f]{64})"', late.content).group(1).decode()
    assert client.post(link, {"seen": again}).status_code == 200  # the page she now read: her approval counts
    req.refresh_from_db()
    assert req.status == "modified" and req.final_arguments["amount"] == 90000.0


@pytest.mark.parametrize("second_account", [False, True])
def test_the_reminder_skips_who_has_already_approved(demo, fay, mailoutbox, django_capture_on_commit_callbacks,
                                                     second_account):
    """finn's approval, 1 of 2, counted; the reminder still told him the request awaited his decision,
    and, once that was mended, told his second account (his address, written otherwise, in finance too)."""
    if second_account:
        finance_member("finn.two", " FINN@example.com")
    req = _request(django_capture_on_commit_callbacks, required=2)
    services.decide(req.pk, demo["finn"], "approve")
    ApprovalRequest.objects.filter(pk=req.pk).update(remind_at=timezone.now() - timedelta(seconds=1))
    mailoutbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        assert services.remind(req.pk)
    assert [m.to for m in mailoutbox] == [["fay@example.com"]] and "Reminder" in mailoutbox[0].subject
    assert AuditEvent.objects.get(request=req, action="reminded").after["recipients"] == ["fay@example.com"]
