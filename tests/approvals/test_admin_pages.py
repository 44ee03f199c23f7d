"""The Django admin's approval pages in words for people: the requests list has a description and
a link to each request's inbox page, decisions are titled by who decided what, and the policy form's
help names no source file."""

import re

import pytest

from approvals.models import Decision, arguments_hash
from tests.inbox_helpers import make_request, user

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(client, demo):
    client.force_login(demo["admin"])
    return client


def test_the_requests_list_shows_the_description_and_links_to_the_inbox(admin):
    req = make_request("alice", description="Transfer 500.00 USD from 1234567890 to 0987654321")
    body = admin.get("/admin/approvals/approvalrequest/").content.decode()
    assert re.search(r'<th[^>]*column-summary[^>]*>.*?Description', body, re.S)
    assert "Transfer 500.00 USD from 1234567890 to 0987654321" in body
    assert f'<a href="/inbox/{req.pk}/">Open in the inbox</a>' in body


def test_a_request_record_links_to_its_inbox_page_and_titles_its_decisions(admin):
    req = make_request("alice")
    Decision.objects.create(request=req, user=user("finn"), decision="approve")
    body = admin.get(f"/admin/approvals/approvalrequest/{req.pk}/change/").content.decode()
    assert re.search(rf'<a href="/inbox/{req.pk}/" class="viewsitelink">', body)
    assert body.index(f'<a href="/inbox/{req.pk}/">Open in the inbox</a>') < body.index("Tool name:")
    assert "Decision object" not in body and "Arguments hash" not in body
    assert re.search(r"finn approved on \d{4}-\d\d-\d\d \d\d:\d\d UTC", body)


def test_the_policy_form_explains_the_rules_without_pointing_at_source_files(admin):
    body = admin.get("/admin/approvals/toolpolicy/add/").content.decode()
    assert "approvals/rules.py" not in body and ".py" not in re.sub(r"<[^>]+>", "", body).replace("agui-inbox", "")
    assert "the first that matches decides" in body


def test_the_policy_form_names_the_modes_in_words(admin):
    body = admin.get("/admin/approvals/toolpolicy/add/").content.decode()
    assert '<option value="never">Never ask: every call runs at once</option>' in body
    assert "agui-inbox administration" in body and "Django administration" not in body


def test_the_requests_list_gives_the_description_room(admin):
    make_request("alice")
    assert "/static/css/admin.css" in admin.get("/admin/approvals/approvalrequest/").content.decode()


def test_no_help_text_points_at_source_files(admin):
    from approvals.models import ToolPolicy

    for f in ToolPolicy._meta.get_fields():
        assert ".py" not in str(getattr(f, "help_text", "")), f.name
    assert "rules.py" not in admin.get("/api/schema/").content.decode()


def test_the_admins_own_words_are_in_the_admins_language(admin, demo):
    """The project's columns, links, help and actions in the Django admin follow the admin's saved
    language like Django's own words do (here French)."""
    from people.models import Profile

    Profile.objects.update_or_create(user=demo["admin"], defaults={"language": "fr"})
    make_request("alice")
    index = admin.get("/admin/").content.decode()  # the apps' headings
    assert all(h in index for h in ("Approbations", "Outils des serveurs MCP", ">Webhooks<"))
    body = admin.get("/admin/approvals/approvalrequest/").content.decode()
    assert "Ouvrir dans la boîte de réception" in body and "Open in the inbox" not in body
    policy = admin.get("/admin/approvals/toolpolicy/add/").content.decode()
    assert "Combien de temps une demande attend une décision" in policy
    endpoint = admin.get("/admin/webhooks/webhookendpoint/add/").content.decode()
    assert "Aucune case cochée : tous les événements." in endpoint and "None ticked" not in endpoint
    from webhooks.models import WebhookDelivery

    WebhookDelivery.objects.create(url="https://example.com/hook", event_type="approval.decided", payload={})
    deliveries = admin.get("/admin/webhooks/webhookdelivery/").content.decode()  # actions show with rows
    assert "Renvoyer les livraisons sélectionnées" in deliveries


def _labels(body):
    """The text of every <label> on an admin page, without the language's label suffix (" :")."""
    import html

    return {html.unescape(re.sub(r"<[^>]+>", "", m)).strip().rstrip(":").strip().replace("\xa0", " ").strip()
            for m in re.findall(r"<label[^>]*>(.*?)</label>", body, re.S)}


def test_the_records_field_labels_are_in_the_admins_language(admin, demo):
    """A request's and a webhook endpoint's change forms label each field in the admin's saved
    language (the models' verbose names, here French), with none left in English."""
    from django.utils import translation
    from django.utils.text import capfirst

    from approvals.models import ApprovalRequest
    from people.models import Profile
    from webhooks.models import WebhookEndpoint

    Profile.objects.update_or_create(user=demo["admin"], defaults={"language": "fr"})
    req = make_request("alice")
    endpoint = WebhookEndpoint.objects.create(url="https://example.com/hook", events=["approval.decided"])

    labels = _labels(admin.get(f"/admin/approvals/approvalrequest/{req.pk}/change/").content.decode())
    assert {"Nom de l’outil", "Demandeur", "Échéance", "Groupe qui décide", "Décidé par"} <= labels
    shown = [f for f in ApprovalRequest._meta.concrete_fields if f.editable]
    assert len(shown) > 30
    for f in shown:
        with translation.override("en"):
            english = capfirst(str(f.verbose_name))
        with translation.override("fr"):
            french = capfirst(str(f.verbose_name))
        assert french in labels, f.name
        assert english == french or english not in labels, f.name  # "Description" is French too

    labels = _labels(admin.get(f"/admin/webhooks/webhookendpoint/{endpoint.pk}/change/").content.decode())
    assert {"Événements", "Description"} <= labels and "Events" not in labels


def test_the_admins_header_and_index_title_are_translated(admin):
    """The header and the index's title go through the catalogue like the rest of the page (they
    were plain English strings on a French admin); a marking gettext shows they are looked up."""
    from unittest import mock

    from django.utils import translation

    with mock.patch.object(translation._trans, "gettext", side_effect=lambda s: f"«{s}»"):
        index = admin.get("/admin/").content.decode()
    assert "«agui-inbox administration»" in index
    assert "«Records: requests, decisions, policies, users»" in index


def test_a_request_reads_in_the_admins_language_in_the_admin(admin, demo):
    """The list's description and the record's title were the requester's stored English
    ("Transfer 500.00 USD …", "transfer_money (pending)") on a French admin; the inbox says both
    in the reader's language."""
    from approvals.models import ApprovalRequest
    from people.models import Profile

    Profile.objects.update_or_create(user=demo["admin"], defaults={"language": "fr"})
    req = make_request("alice", description="Transfer 500.00 USD to 0987654321")
    ApprovalRequest.objects.filter(pk=req.pk).update(said={
        "en": {"description": "Transfer 500.00 USD to 0987654321"},
        "fr": {"description": "Virement de 500,00 USD vers 0987654321"}})
    listing = admin.get("/admin/approvals/approvalrequest/").content.decode()
    assert "Virement de 500,00 USD vers 0987654321" in listing and "Transfer 500.00 USD" not in listing
    record = admin.get(f"/admin/approvals/approvalrequest/{req.pk}/change/").content.decode()
    assert "transfer_money (En attente)" in record and "(pending)" not in record


def test_a_records_decisions_are_titled_in_the_admins_language(admin):
    """A French admin read "Decisions" and "finn approved on ... UTC" in English, and an approval of
    edited arguments as a plain "approved"."""
    from unittest import mock

    from django.utils import translation

    req = make_request("alice")
    plain = Decision.objects.create(request=req, user=user("rita"), decision="approve",
                                    arguments_hash=arguments_hash(req.arguments))
    edited = Decision.objects.create(request=req, user=user("finn"), decision="approve",
                                     arguments={**req.arguments, "amount": 450}, arguments_hash="x" * 64)
    body = admin.get(f"/admin/approvals/approvalrequest/{req.pk}/change/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert re.search(r">\s*Décisions\s*</h2>", body), body[body.find("inline-group"):][:800]
    with mock.patch.object(translation._trans, "gettext", side_effect=lambda s: f"«{s}»"):
        assert re.fullmatch(r"««rita approved» on \d{4}-\d\d-\d\d \d\d:\d\d UTC»", str(plain)), str(plain)
        assert re.fullmatch(r"««finn approved with edits» on [-\d: ]+ UTC»", str(edited)), str(edited)


@pytest.mark.parametrize("page", ["auditevent", "threadgrant"])
def test_an_admin_list_reads_its_people_in_the_pages_query(admin, demo, page):
    """The audit log and the grants list name a person per row (actor, revoked by: both may be
    empty, which Django's list does not join by itself): a page of 100 rows read each one's user
    on its own, 106 statements for one page of a production audit log."""
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from approvals import services
    from approvals.models import ThreadGrant

    def add_people(first, count):
        people = [User.objects.create_user(f"reader{i}") for i in range(first, first + count)]
        for person in people:
            services.record("policy_changed", actor=person, tool_name="send_email", object_ref=person.username)
            ThreadGrant.objects.create(tool_name="send_email", thread_ref=f"t-{person.pk}", user=person,
                                       revoked_by=person)
        return people

    def statements():
        with CaptureQueriesContext(connection) as queries:
            body = admin.get(f"/admin/approvals/{page}/").content.decode()
        return len(queries), body

    add_people(0, 2)
    statements()  # the session's first page reads more (its user's language, content types)
    few, _ = statements()
    people = add_people(2, 12)
    many, body = statements()
    assert all(person.username in body for person in people)
    assert many == few
