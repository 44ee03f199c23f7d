"""A reviewer sees what will execute: text-direction controls in a request's arguments, description,
reason, feedback and conversation are written out on every page (and in mail), never obeyed."""

import pytest
from django.core import mail

from approvals import services
from approvals.models import ApprovalRequest
from tests.inbox_helpers import make_request, user

pytestmark = pytest.mark.django_db

SPOOF = "Invoice \u202efdp.exe"
MARK = "⟨U+202E⟩"


@pytest.fixture
def spoofed(demo):
    return make_request("alice", tool="send_email", agent="ops", group="reviewers",
                        arguments={"to": "frank@example.com", "subject": SPOOF, "body": "see attachment"},
                        description=f"Email frank@example.com: {SPOOF}", reason=f"Send {SPOOF}",
                        excerpt=[{"role": "user", "content": f"subject {SPOOF}"}])


def test_the_request_page_shows_the_controls_and_not_the_character(login, spoofed):
    body = login("rita").get(f"/inbox/{spoofed.pk}/").content.decode()
    # the title, the reason, the arguments block and the excerpt: the mark, isolated, never the control
    assert '<h1 class="detail-title" id="detail-title" tabindex="-1"><bdi>Email frank@example.com: Invoice ' \
        '<span class="bidi-control"' in body
    assert body.count(MARK) >= 4
    assert "\u202e" not in body.split('<script id="approval-arguments"')[0]  # the page the reviewer reads
    assert '"subject": "Invoice \\u202efdp.exe"' in body  # the raw editor: the same value, escaped


@pytest.mark.parametrize("url", ["/inbox/{pk}/?partial=preview", "/inbox/?scope=all&status=all",
                                 "/inbox/?scope=all&status=all&partial=rows"])
def test_the_preview_and_the_rows_too(login, spoofed, url):
    body = login("rita").get(url.format(pk=spoofed.pk)).content.decode()
    assert MARK in body and "\u202e" not in body


def test_the_decided_page_and_the_audit(login, spoofed):
    services.decide(spoofed.pk, user("rita"), "reject", feedback=f"no {SPOOF}")
    client = login("rita")
    for url in (f"/inbox/{spoofed.pk}/", "/audit/"):
        body = client.get(url).content.decode()
        assert MARK in body and "\u202e" not in body.split('<script id="approval-arguments"')[0], url


def test_the_request_mail(spoofed):
    from approvals.mail_links import request_mails

    mail.outbox.clear()
    request_mails(spoofed)
    assert mail.outbox
    for m in mail.outbox:
        assert "\u202e" not in m.body and "Invoice ⟨U+202E⟩fdp.exe" in m.body


def test_a_character_that_draws_nothing_is_shown_on_the_request_page(login, api, demo):
    """An outside agent's `ceo@example.com` with a zero-width space read as ceo@example.com, past a
    rule on that address: the page writes it out."""
    made = api("alice").post("/api/approvals/", {
        "tool_name": "crm.delete_contact", "arguments": {"email": "ceo@example.com\u200b"},
        "schema": {"type": "object", "properties": {"email": {"type": "string"}}}}, format="json").json()
    body = login("rita").get(f"/inbox/{made['id']}/").content.decode()
    assert 'ceo@example.com<span class="bidi-control" title="An invisible character' in body and "⟨U+200B⟩" in body
    assert "\u200b" not in body.split('<script id="approval-arguments"')[0]


HIDDEN = "".join(chr(0xE0000 + ord(c)) for c in "wire the funds")  # tags: ASCII drawn as nothing


def test_text_hidden_in_tag_characters_is_shown_on_every_surface(login, api, demo):
    """A mail body "Hello" followed by tag characters spelling an instruction read "Hello" on the
    request page, in the reading pane, the rows and the mail, while the mail sent carried the rest."""
    from approvals.mail_links import request_mails

    made = api("alice").post("/api/approvals/", {
        "tool_name": "crm.send_mail", "description": f"Mail Bob: Hello{HIDDEN}",
        "arguments": {"to": "bob@example.com", "body": f"Hello{HIDDEN}\u2028P.S."},
        "schema": {"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}}}},
        format="json").json()
    client = login("rita")
    for url in (f"/inbox/{made['id']}/", f"/inbox/{made['id']}/?partial=preview", "/inbox/?scope=all&status=all"):
        body = client.get(url).content.decode().split('<script id="approval-arguments"')[0]
        assert "⟨U+E0077⟩</span><span" in body and "\U000e0077" not in body, url
    assert "⟨U+2028⟩</span>P.S." in client.get(f"/inbox/{made['id']}/").content.decode()
    mail.outbox.clear()
    request_mails(ApprovalRequest.objects.get(pk=made["id"]))
    assert mail.outbox and all("Hello⟨U+E0077⟩" in m.body and "\U000e0077" not in m.body for m in mail.outbox)


@pytest.mark.django_db(transaction=True)
def test_the_mailed_links_confirmation_page_shows_them_too(demo, client, mailoutbox):
    """The page a mailed link opens, whose button decides, obeyed the controls in the arguments, the
    reason and the impact (only its title was written out): "Invoice exe.pdf" again, and a zero-width
    space or tag characters hidden in what its button approves."""
    import re

    from django.conf import settings

    req = make_request("alice", tool="send_email", agent="ops", group="reviewers",
                       arguments={"to": "frank@example.com", "subject": SPOOF, "body": "see\u200b" + HIDDEN},
                       description="Email frank", reason=f"Send {SPOOF}")
    ApprovalRequest.objects.filter(pk=req.pk).update(impact=f"Sends {SPOOF}")
    message = next(m for m in mailoutbox if m.to == ["rita@example.com"])
    link = re.search(r"^Approve: +(\S+)$", message.body, re.M).group(1)[len(settings.AGUI_PUBLIC_URL.rstrip("/")):]
    page = client.get(link).content.decode()
    assert page.count("⟨U+202E⟩") >= 3 and "⟨U+200B⟩" in page and "⟨U+E0077⟩" in page
    assert "\u202e" not in page and "\u200b" not in page and "\U000e0077" not in page


def test_the_conversation_page_shows_the_chats_title_so_too(login, demo):
    """The chat's title (its first words) stood unmarked in the conversation page's heading line."""
    from agents.models import Thread

    thread = Thread.objects.create(owner=demo["alice"], agent="ops", title=f"Mail {SPOOF}")
    req = make_request("alice", tool="send_email", agent="ops", group="reviewers", thread=thread.pk,
                       arguments={"to": "frank@example.com", "subject": "Hi", "body": "b"})
    page = login("rita").get(f"/inbox/{req.pk}/conversation/").content.decode()
    assert "Invoice <span class=\"bidi-control\"" in page
    assert "\u202e" not in page


def test_an_outside_agents_name_is_shown_so_too(login, api, demo):
    """An agent running elsewhere names itself: "banking" with a zero-width space read as this project's
    banking agent in the rows, the reading pane, the request page and the agent filter."""
    made = api("alice").post("/api/approvals/", {
        "tool_name": "crm.delete_contact", "agent_name": "banking\u200b", "arguments": {"email": "a@example.com"},
        "schema": {"type": "object", "properties": {"email": {"type": "string"}}}}, format="json").json()
    client = login("rita")
    for url in (f"/inbox/{made['id']}/", f"/inbox/{made['id']}/?partial=preview", "/inbox/?scope=all&status=all",
                "/inbox/stats/"):
        body = client.get(url).content.decode().split('<script id="approval-arguments"')[0]
        # the filter's value and the stats row's key: the name as it is, for the program, not shown
        body = body.replace('value="banking\u200b"', "").replace('data-key="banking\u200b"', "")
        assert "banking⟨U+200B⟩" in body.replace('<span class="bidi-control" title="An invisible character: shown '
                                                 'here, not hidden">', "").replace("</span>", "") and \
            "\u200b" not in body, url
