"""Wording a translation cannot get right from the English alone: one English word in two senses
gets a context per sense; a sentence carries its own punctuation and word order (never a ":" or a
"." glued on outside the translated string, nor an English word order by concatenation)."""

import json
import re

import pytest
from django.test import Client

from tests.inbox_helpers import make_request, record_call

pytestmark = pytest.mark.django_db

RULES = [{"name": "large", "when": {"path": "args.amount", "op": "gt", "value": 1000}, "action": "gate"}]


def signed_in(user, language):
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    return client


def _headers(body, table_id):
    table = body.split(f'id="{table_id}"', 1)[1].split("</thead>", 1)[0]
    return re.findall(r'<th scope="col">([^<]*)</th>', table)


@pytest.mark.parametrize(("language", "when", "then"), [
    ("zh-CN", "时间", "当时结果"), ("fr-FR", "Quand", "Résultat à l’époque"),
    ("pt-BR", "Quando", "Resultado na época"), ("id", "Waktu", "Hasil saat itu"),
])
def test_the_simulators_when_and_then_are_the_time_and_what_happened(demo, language, when, then):
    """"When"/"Then" are also the rule builder's "if … then" (djangojs): French read "Alors" here."""
    record_call("alice", "transfer_money", {"from_account": "1234567890", "to_account": "0987654321",
                                            "amount": 50, "currency": "USD"}, status="succeeded", seconds_ago=1)
    admin = signed_in(demo["admin"], language)
    body = admin.post("/policies/transfer_money/", {
        "mode": "conditional", "conditions": json.dumps(RULES), "approver_kind": "group", "approver_group": "finance",
        "required_approvals": "1", "timeout_seconds": "", "timeout_action": "reject", "risk": "high",
        "reminder_fraction": "0.5", "escalation_group": "", "escalation_fraction": "", "action": "simulate",
        "limit": "50"}).content.decode()
    headers = _headers(body, "sim-table")
    assert headers[0] == when and headers[-1] == then
    row = body.split('id="sim-table"', 1)[1].split("<tbody>", 1)[1]
    assert f'data-label="{when}"' in row and f'data-label="{then}"' in row


def _mail_link(message, which):
    from django.conf import settings

    base = settings.AGUI_PUBLIC_URL.rstrip("/")
    return re.search(rf"^{which}: +{re.escape(base)}(\S+)$", message.body, re.M).group(1)


def test_the_inbox_result_line_ends_the_languages_way(demo):
    make_request("alice", group="finance")
    zh = signed_in(demo["finn"], "zh-CN").get("/inbox/").content.decode()
    line = zh.split('id="inbox-hint"', 1)[1].split("</span>", 2)
    assert "条匹配。" in line[1] and "条匹配." not in zh  # the "." was outside the translation
    en = signed_in(demo["finn"], "en").get("/inbox/").content.decode()
    assert re.search(r'<span id="result-count">\d+</span> matching\.', en)


def test_the_audit_trail_says_who_did_what_in_the_languages_order_and_punctuation(demo):
    req = make_request("alice", group="finance")
    zh = signed_in(demo["finn"], "zh-CN").get(f"/inbox/{req.pk}/").content.decode()
    trail = zh.split('class="audit-trail"', 1)[1].split("</ol>", 1)[0]
    # "alice 已请求" (alice requested), not "已请求 操作人 alice" (requested, operator alice)
    assert re.search(r'<strong>alice</strong> <span class="audit-action">[^<]+</span>', trail), trail
    assert "操作人" not in trail
    assert '</span>：<ins>' in trail and '</span>: <ins>' not in trail  # 由谁决定：finance
    fr = signed_in(demo["finn"], "fr-FR").get(f"/inbox/{req.pk}/").content.decode()
    trail = fr.split('class="audit-trail"', 1)[1].split("</ol>", 1)[0]
    assert re.search(r'<span class="audit-action">[^<]+</span> par <strong>alice</strong>', trail), trail
    assert '</span> : <ins>' in trail and '</span>: <ins>' not in trail  # "qui décide : finance"
    audit = signed_in(demo["admin"], "fr-FR").get("/audit/").content.decode()
    assert '</span> : <ins>' in audit and '</span>: <ins>' not in audit


def test_a_decided_requests_preview_names_who_decided_in_the_languages_order(demo):
    from approvals import services

    req = make_request("alice", group="finance")
    services.decide(req.pk, user=demo["finn"], decision="approve")
    zh = signed_in(demo["finn"], "zh-CN").get(f"/inbox/{req.pk}/?partial=preview").content.decode()
    assert re.search(r"<strong>finn</strong> [^<]+，<time", zh), zh


@pytest.mark.django_db(transaction=True)
def test_the_mail_links_confirmation_heading_has_the_languages_colon(demo, mailoutbox):
    make_request("alice", group="finance", description="Transfer 500.00 USD to 0987654321")
    message = next(m for m in mailoutbox if m.to == ["finn@example.com"])
    fr = Client(HTTP_ACCEPT_LANGUAGE="fr-FR").get(_mail_link(message, "Reject")).content.decode()
    assert "Rejeter : <bdi>" in fr
    zh = Client(HTTP_ACCEPT_LANGUAGE="zh-CN").get(_mail_link(message, "Approve")).content.decode()
    assert "批准：<bdi>" in zh


def test_a_refusals_reason_is_the_languages_own_sentence(demo):
    zh = signed_in(demo["bob"], "zh-CN").get("/inbox/")
    assert zh.status_code == 403
    body = zh.content.decode()
    # one sentence after the other, Chinese-style: no ASCII "." and no space between them
    assert "收件箱仅供审批人使用。您当前以 <strong>bob</strong> 登录" in body
    fr = signed_in(demo["bob"], "fr-FR").get("/inbox/", HTTP_ACCEPT="application/json")
    assert fr.json()["message"] == "La boîte de réception est réservée aux approbateurs."


# French: "de"/"que" before a name must elide before a vowel ("d’alice"), which no msgstr can know,
# and a gendered word beside a name ("lui-même") is wrong for half the people it names
FRENCH_SLIPS = re.compile(r"(?<![\w’'])(de|que) (<strong>)?%\((name|user|requester|owner|group|groups|approver|first)\)s"
                          r"|c’est %\(|%\(\w+\)s lui-même")


def test_french_sentences_read_right_whatever_the_name():
    from pathlib import Path

    from babel.messages.pofile import read_po

    with open(Path(__file__).resolve().parents[2] / "locale/fr/LC_MESSAGES/django.po", "rb") as f:
        catalogue = read_po(f)
    slips = [(m.id, m.string) for m in catalogue if m.id and any(
        FRENCH_SLIPS.search(s or "") for s in (m.string if isinstance(m.string, tuple) else (m.string,)))]
    assert not slips, "\n".join(f"{mid!r} -> {s!r}" for mid, s in slips)


def test_the_objects_owner_is_named_without_a_gender(demo):
    req = make_request("alice", group="finance")
    fr = signed_in(demo["finn"], "fr-FR").get(f"/inbox/{req.pk}/").content.decode()
    assert "appartient à alice, qui fait la demande" in fr and "lui-même" not in fr


def test_the_audit_page_writes_times_the_readers_way_and_its_csv_stays_iso(demo):
    make_request("alice", group="finance")
    admin = signed_in(demo["admin"], "fr-FR")
    body = admin.get("/audit/").content.decode()
    cells = re.findall(r'<time datetime="[^"]+" title="[^"]*">([^<]+)</time>', body.split("<tbody>", 1)[1])
    assert cells and not any(re.match(r"\d{4}-\d{2}-\d{2} ", c) for c in cells), cells[:3]
    months = ("janvier", "février", "mars", "avril", "mai", "juin", "juillet", "août", "septembre", "octobre",
              "novembre", "décembre")
    assert all(any(m in c for m in months) for c in cells), cells[:3]
    csv_text = b"".join(admin.get("/audit/export.csv").streaming_content).decode()
    assert re.search(r"\n[^,]+,\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?\+00:00,", csv_text)


@pytest.mark.parametrize("language", ["fr", "id", "pt-br", "zh-hans"])
def test_undo_and_cancel_are_two_words_on_the_inbox_screen(language):
    """The confirmation's Cancel and the toast's Undo sit on one screen: French had "Annuler" for both
    (and "Annulé" for a withdrawn request beside "Annulé : rien n'a été envoyé")."""
    from django.utils import translation

    with translation.override(language):
        undo, cancel = translation.gettext("Undo"), translation.gettext("Cancel")
        undone, cancelled = translation.gettext("Undone: nothing was sent."), translation.gettext("Cancelled")
    assert undo != cancel
    assert not undone.startswith(cancelled)
