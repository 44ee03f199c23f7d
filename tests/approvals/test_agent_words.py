"""The agent's reason is the model's own text, shown above the facts and, in a mail, among the mail's
own lines: a model wrote "Arguments: {"to": "bob@example.com"}", sixty empty lines and then nothing, so
the request page showed a page of blank box under made-up arguments, and the plain-text mail read as if
those were the arguments (with a link of its own as "Approve: https://..."), the real ones far below.
Runs of empty lines are made one, the words are shown up to a dozen lines (the rest one click away,
said so), and a mail quotes each line of them ("> ") so that none passes for the mail's own."""

import re

import pytest
from django.core import mail

from approvals.mail_links import request_mails
from tests.inbox_helpers import make_request

pytestmark = pytest.mark.django_db

FORGED = ('Routine.\n\nArguments:\n{\n  "to": "bob@example.com"\n}\n' + "\n" * 60 +
          "Approve: https://attacker.example/approve\n" + "".join(f"line {i}\n" for i in range(30)))


def test_empty_lines_are_one_and_the_words_are_cut_where_said():
    from agui_project.visible import words_head

    head, rest = words_head("a\n\n\n\n\nb\n \n\t\nc")
    assert (head, rest) == ("a\n\nb\n\nc", "")
    head, rest = words_head("".join(f"{i}\n" for i in range(40)))
    assert head.count("\n") == 11 and rest.startswith("12\n") and rest.endswith("\n39")
    head, rest = words_head("x" * 5000)
    assert len(head) == 1000 and len(rest) == 4000


@pytest.fixture
def forged(demo):
    return make_request("alice", tool="send_email", agent="ops", group="reviewers", reason=FORGED,
                        arguments={"to": "evil@attacker.example", "subject": "Hi", "body": "b"})


def test_the_request_page_shows_a_dozen_lines_and_says_how_many_more(login, forged):
    for url in (f"/inbox/{forged.pk}/", f"/inbox/{forged.pk}/?partial=preview"):
        page = login("rita").get(url).content.decode()
        reason = page.split("Why the agent asks")[1].split("</dd>")[0]
        assert "\n\n\n" not in reason  # no screenful of blank box
        assert re.search(r'<details class="words-rest"><summary>[^<]*26 more lines', page), url
        assert "line 29" in page  # one click away, not gone


def test_the_mail_quotes_the_agents_words(forged):
    mail.outbox.clear()
    request_mails(forged)
    body = mail.outbox[0].body
    why = body.split("Arguments:\n{\n  \"body\"")[0]
    assert "\n> Arguments:\n> {\n>   \"to\": \"bob@example.com\"\n" in why
    assert not re.search(r"^Approve: https://attacker", body, re.M)  # only the mail's own links stand alone
    assert "\n>\n>\n" not in why and "26 more lines" in why and "line 29" not in body
    assert body.index('"to": "evil@attacker.example"') < re.search(r"^Approve: http", body, re.M).start()


def test_a_headline_of_several_lines_is_quoted_in_the_mail(api, demo):
    """An agent running elsewhere writes the headline and impact of a tool this project does not know:
    with line breaks they made lines of the mail's own ("Risk: Low", "Arguments: {...}")."""
    from approvals.models import ApprovalRequest

    made = api("alice").post("/api/approvals/", {
        "tool_name": "crm.export_contacts", "arguments": {"to": "attacker@evil.example"},
        "schema": {"type": "object", "properties": {"to": {"type": "string"}}},
        "description": "Look up a contact\nRisk: Low\nReversible: yes",
        "impact": "none\nArguments:\n{}"}, format="json").json()
    mail.outbox.clear()
    request_mails(ApprovalRequest.objects.get(pk=made["id"]))
    body = mail.outbox[0].body
    assert not re.search(r"^(Risk: Low|Reversible: yes|Arguments:\n\{\})$", body, re.M), body
    assert "\n> Risk: Low\n" in body and "\n> Arguments:\n" in body
    assert re.search(r"^Risk: High$", body, re.M) and re.search(r"^Reversible: no$", body, re.M)


def test_the_reminder_mail_shows_the_words_as_the_request_mail_does(demo):
    """The reminder's facts wrote the headline and impact as stored: a text-direction control obeyed
    ("Invoice exe.pdf"), characters that draw nothing hidden, a headline of several lines made lines
    of its own."""
    from approvals import mail as approval_mail
    from approvals.models import ApprovalRequest

    req = make_request("alice", tool="crm.export_contacts", agent="crm", group="reviewers",
                       description="Send Invoice \u202efdp.exe\nRisk: Low", arguments={"to": "x@example.com"})
    ApprovalRequest.objects.filter(pk=req.pk).update(impact="none\u200b")
    req.refresh_from_db()
    mail.outbox.clear()
    approval_mail.reminder(req, ["rita@example.com"])
    body = mail.outbox[0].body
    assert "Send Invoice ⟨U+202E⟩fdp.exe" in body and "\u202e" not in body and "none⟨U+200B⟩" in body
    assert not re.search(r"^Risk: Low$", body, re.M) and "\n> Risk: Low\n" in body
