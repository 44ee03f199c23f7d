"""Choosing a language: the browser's preference first, the header's picker remembered per
person (people.Profile) and used in other browsers and in their mail, LANGUAGE_CODE otherwise."""

import pytest
from django.contrib.auth.models import Group, User
from django.core import mail as django_mail
from django.test import Client
from django.utils import translation

from approvals import mail as approval_mail
from people.models import Profile
from tests.inbox_helpers import make_request


@pytest.fixture
def fay(demo):
    """A second member of finance, who never chose a language."""
    user = User.objects.create_user("fay", email="fay@example.com", password="pw")
    user.groups.add(Group.objects.get(name="finance"))
    return user


def _lang(response):
    return response.content.decode().split('<html lang="', 1)[1].split('"', 1)[0]


@pytest.mark.django_db
def test_the_browser_preference_comes_first_then_the_default(demo):
    browser = Client(HTTP_ACCEPT_LANGUAGE="fr-FR,fr;q=0.9,en;q=0.5")
    page = browser.get("/accounts/login/")
    assert _lang(page) == "fr" and "Mot de passe" in page.content.decode()
    assert _lang(Client(HTTP_ACCEPT_LANGUAGE="de-DE").get("/accounts/login/")) == "en"  # not offered: LANGUAGE_CODE
    assert _lang(Client(HTTP_ACCEPT_LANGUAGE="zh-CN,zh;q=0.9").get("/accounts/login/")) == "zh-hans"


@pytest.mark.django_db
def test_a_choice_is_remembered_for_the_person_and_wins_over_the_browser(demo):
    first = Client(HTTP_ACCEPT_LANGUAGE="en")
    first.force_login(demo["finn"])
    response = first.post("/i18n/setlang/", {"language": "id", "next": "/inbox/"})
    assert response.status_code == 302 and response["Location"] == "/inbox/"
    assert Profile.objects.get(user=demo["finn"]).language == "id"
    page = first.get("/inbox/")
    assert _lang(page) == "id" and "Kotak masuk persetujuan" in page.content.decode()

    # another browser, which asks for French and has no language cookie: finn's choice wins
    other = Client(HTTP_ACCEPT_LANGUAGE="fr")
    other.force_login(demo["finn"])
    page = other.get("/inbox/")
    assert _lang(page) == "id" and 'lang="id" selected' in page.content.decode()  # the picker shows it
    # the JavaScript catalogue follows too
    assert "Setujui" in other.get("/jsi18n/").content.decode()
    # someone who never chose keeps their browser's language
    rita = Client(HTTP_ACCEPT_LANGUAGE="fr")
    rita.force_login(demo["rita"])
    assert _lang(rita.get("/inbox/")) == "fr"


@pytest.mark.django_db
def test_an_unknown_language_is_not_saved(demo):
    browser = Client()
    browser.force_login(demo["finn"])
    browser.post("/i18n/setlang/", {"language": "xx", "next": "/"})
    # (the language the page was shown in is noted as the browser's, not as a choice)
    assert not Profile.objects.filter(user=demo["finn"]).exclude(language="").exists()


@pytest.mark.django_db(transaction=True)
def test_each_recipient_gets_the_request_mail_in_their_own_language(demo, fay):
    chooser = Client()
    chooser.force_login(demo["finn"])
    chooser.post("/i18n/setlang/", {"language": "fr", "next": "/"})
    with translation.override("zh-hans"):  # whatever language the requester's process speaks
        make_request("alice", group="finance", description="Transfer 500.00 USD to 0987654321")
    by_to = {m.to[0]: m for m in django_mail.outbox}
    finn, fay_mail = by_to["finn@example.com"], by_to["fay@example.com"]
    assert finn.subject == "[agui-inbox] Approbation requise : transfer_money"
    assert "Bonjour finn," in finn.body and "Approuver : " in finn.body and "Rejeter : " in finn.body
    assert fay_mail.subject == "[agui-inbox] Approval needed: transfer_money"  # never chose: LANGUAGE_CODE
    assert "Hello fay," in fay_mail.body


@pytest.mark.django_db
def test_a_reminder_is_in_the_recipients_language(demo, fay):
    Profile.objects.create(user=demo["finn"], language="pt-br")
    req = make_request("alice", group="finance", description="Transfer 500.00 USD to 0987654321")
    django_mail.outbox.clear()
    approval_mail.reminder(req, ["finn@example.com", "fay@example.com"])
    by_to = {m.to[0]: m for m in django_mail.outbox}
    assert by_to["finn@example.com"].subject.endswith("Lembrete: transfer_money aguarda sua decisão")
    assert "Ferramenta: transfer_money" in by_to["finn@example.com"].body
    assert by_to["fay@example.com"].subject.endswith("Reminder: transfer_money awaits your decision")


@pytest.mark.django_db(transaction=True)
def test_a_request_reads_in_each_readers_language_whoever_asked(demo, fay, monkeypatch, api):
    """Its title and estimated impact were made once, in the requester's language (the run speaks
    hers), and every reviewer, mail and API answer showed them so: a Chinese title to an English
    reviewer. Our tools now say them in every language when the call pauses."""
    from agents import services
    from approvals.models import ApprovalRequest
    from tests.helpers import run_prompt

    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    Profile.objects.update_or_create(user=demo["alice"], defaults={"language": "zh-hans"})
    Profile.objects.update_or_create(user=demo["finn"], defaults={"language": "fr"})
    thread = services.create_thread(demo["alice"], "banking")
    run_prompt(thread, demo["alice"], "Transfer $500 from account 1234567890 to account 0987654321")
    req = ApprovalRequest.objects.get(run_ref__in=thread.runs.values("pk"))
    assert req.description == "从 1234567890 向 0987654321 转账 500.00 USD"  # the requester's, as stored
    english, french = "Transfer 500.00 USD from 1234567890 to 0987654321", "Virement de 500,00 USD de 1234567890"
    reviewer = Client()
    reviewer.force_login(fay)
    for path in (f"/inbox/{req.pk}/", "/inbox/"):
        page = reviewer.get(path, HTTP_ACCEPT_LANGUAGE="en").content.decode()
        assert english in page and "转账" not in page, path
    assert "Moves 500.00 USD out of account 1234567890" in reviewer.get(f"/inbox/{req.pk}/").content.decode()
    finn = Client()
    finn.force_login(demo["finn"])
    assert french in finn.get(f"/inbox/{req.pk}/").content.decode()
    with translation.override("en"):
        data = api("finn").get(f"/api/approvals/{req.pk}/", HTTP_ACCEPT_LANGUAGE="fr").json()
    assert data["description"].startswith(french) and "转账" not in data["impact"]
    by_to = {m.to[0]: m for m in django_mail.outbox}
    assert french in by_to["finn@example.com"].body and english in by_to["fay@example.com"].body
