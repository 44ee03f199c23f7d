"""Server-rendered pages: who may open them, the decision form, escaping."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from approvals.models import ApprovalRequest
from tests.helpers import transfer_request

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("url", ["/", "/chat/", "/inbox/"])
def test_pages_need_login(client, url):
    resp = client.get(url)
    assert resp.status_code == 302 and resp["Location"].startswith("/accounts/login/")


def test_home_sends_reviewers_to_inbox_and_others_to_chat(login):
    assert login("alice").get("/")["Location"] == "/chat/"
    assert login("finn").get("/")["Location"] == "/inbox/"


def test_end_users_may_not_open_the_inbox(login, demo):
    req = transfer_request(demo["alice"])
    client = login("alice")
    assert client.get("/inbox/").status_code == 403
    assert client.get(f"/inbox/{req.pk}/").status_code == 403


def test_chat_page_shows_own_threads_only(login, api):
    bob_thread = api("bob").post("/api/threads/", {"agent": "banking"}, format="json").json()["id"]
    client = login("alice")
    page = client.get("/chat/")
    assert page.status_code == 200 and b"Offline demo model" in page.content
    assert client.get(f"/chat/{bob_thread}/").status_code == 404


def test_the_chat_list_alone_for_other_tabs(login, api, client):
    """?partial=threads: the list items only, the user's own, titles escaped, the open chat marked."""
    mine = api("alice").post("/api/threads/", {"agent": "banking", "title": "<b>rent</b>"}, format="json").json()["id"]
    theirs = api("bob").post("/api/threads/", {"agent": "banking", "title": "bob's"}, format="json").json()["id"]
    assert client.get("/chat/?partial=threads").status_code == 302  # signed out: to the login page
    alice = login("alice")
    resp = alice.get(f"/chat/{mine}/?partial=threads")
    body = resp.content.decode()
    assert resp.status_code == 200 and body.lstrip().startswith('<li class="thread-item"')
    assert "<html" not in body and "<ul" not in body
    assert f'data-thread-id="{mine}"' in body and theirs not in body
    assert "&lt;b&gt;rent&lt;/b&gt;" in body and "<b>rent" not in body
    assert 'aria-current="page"' in body
    assert alice.get(f"/chat/{theirs}/?partial=threads").status_code == 404


def test_chats_that_began_alike_say_where_each_stands(login, demo):
    """Two transfer chats read the same first words; the list tells them apart by their latest
    request (waiting for whom, or what became of it), in one query for the whole list."""
    from agents import services
    from approvals import services as approval_services

    alice = demo["alice"]
    first, second = (services.create_thread(alice, "banking", title="Transfer $500 to 0987654321") for _ in "ab")
    waiting, decided = transfer_request(alice), transfer_request(alice)
    for request, thread in ((waiting, first), (decided, second)):
        ApprovalRequest.objects.filter(pk=request.pk).update(thread_ref=thread.pk)
    approval_services.decide(decided.pk, demo["finn"], "approve", arguments={**decided.arguments, "amount": 450.0})
    client = login("alice")
    body = client.get("/chat/?partial=threads").content.decode()
    assert f"Waiting for finance: {waiting.description}" in body
    assert "Approved with edits<" in body and f"edits: {decided.description}" not in body  # it ran edited
    assert body.count('class="thread-standing') == 2
    # one query for every chat's standing: more chats, no more queries
    with CaptureQueriesContext(connection) as two:
        client.get("/chat/?partial=threads")
    for _ in range(3):
        thread = services.create_thread(alice, "banking", title="Transfer again")
        ApprovalRequest.objects.filter(pk=transfer_request(alice).pk).update(thread_ref=thread.pk)
    with CaptureQueriesContext(connection) as five:
        assert client.get("/chat/?partial=threads").content.decode().count('class="thread-standing') == 5
    assert len(five) == len(two)


def test_inbox_lists_pending_for_finance_and_partial_refresh(login, demo):
    req = transfer_request(demo["alice"])
    client = login("finn")
    page = client.get("/inbox/")
    assert page.status_code == 200 and req.description.encode() in page.content
    rows = client.get("/inbox/?partial=rows")
    assert rows["X-Pending-Count"] == "1" and req.pk.encode() in rows.content
    assert req.pk.encode() not in login("rita").get("/inbox/?partial=rows").content


def test_detail_edit_and_approve_through_the_form(login, demo):
    req = transfer_request(demo["alice"])
    client = login("finn")
    page = client.get(f"/inbox/{req.pk}/")
    # the editor (static/js/schema-editor.js) builds its inputs from the schema and submits one JSON field
    assert page.status_code == 200 and b'name="arguments_json"' in page.content
    assert b'id="approval-schema"' in page.content
    args = {"from_account": "1234567890", "to_account": "0987654321", "currency": "USD"}
    bad = client.post(f"/inbox/{req.pk}/", {"arguments_json": json.dumps({**args, "amount": -3}), "action": "approve"})
    assert bad.status_code == 400 and b"greater than 0" in bad.content
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"
    ok = client.post(f"/inbox/{req.pk}/", {"arguments_json": json.dumps({**args, "amount": 450}), "action": "approve"})
    assert ok.status_code == 302
    req.refresh_from_db()
    assert req.status == "modified" and req.final_arguments["amount"] == 450.0 and req.decided_by == demo["finn"]


def test_detail_reject_requires_feedback(login, demo):
    req = transfer_request(demo["alice"])
    client = login("finn")
    resp = client.post(f"/inbox/{req.pk}/", {"action": "reject", "feedback": ""})
    assert resp.status_code == 400
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"
    assert client.post(f"/inbox/{req.pk}/", {"action": "reject", "feedback": "no"}).status_code == 302
    assert ApprovalRequest.objects.get(pk=req.pk).status == "rejected"


def test_tool_arguments_are_escaped(login, demo):
    req = transfer_request(demo["alice"], to_account="<script>alert(1)</script>")
    client = login("finn")
    for url in ("/inbox/", f"/inbox/{req.pk}/"):
        body = client.get(url).content
        assert b"<script>alert(1)</script>" not in body
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in client.get(f"/inbox/{req.pk}/").content


def test_forms_are_csrf_protected(demo, client):
    from django.test import Client

    req = transfer_request(demo["alice"])
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(demo["finn"])
    assert strict.post(f"/inbox/{req.pk}/", {"action": "approve"}).status_code == 403
    assert ApprovalRequest.objects.get(pk=req.pk).status == "pending"


def test_static_files_are_served_sync_and_async(client, async_client):
    from asgiref.sync import async_to_sync

    resp = client.get("/static/js/chat.js")
    assert resp.status_code == 200 and "javascript" in resp["Content-Type"]
    assert b"aguiChat" in b"".join(resp.streaming_content)
    resp = async_to_sync(async_client.get)("/static/css/inbox.css")
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/css")
    assert client.get("/static/js/no-such-file.js").status_code == 404


def test_every_middleware_is_async_capable(settings):
    """One sync-only middleware runs every request, the async AG-UI endpoint too, through extra
    thread hops (about 8 ms per POST /agui/ measured with WhiteNoise's own middleware)."""
    from django.utils.module_loading import import_string

    sync_only = [path for path in settings.MIDDLEWARE if not getattr(import_string(path), "async_capable", False)]
    assert sync_only == []


def test_the_composer_takes_no_more_than_the_api_accepts(login, api, settings):
    """The composer's limit is the server's own (AGUI_MAX_MESSAGE_CHARS), counted by chat.js in characters
    as the server counts them: no maxlength, which counts UTF-16 units (an emoji two) and cut messages the
    server takes. A message over it is refused naming the field with its sentence (which the chat shows,
    not "invalid input")."""
    thread = api("alice").post("/api/threads/", {"agent": "banking"}, format="json").json()["id"]
    page = login("alice").get(f"/chat/{thread}/").content.decode()
    assert f'id="composer" name="content" rows="2" data-max-chars="{settings.AGUI_MAX_MESSAGE_CHARS}"' in page
    assert "maxlength" not in page[page.index('id="composer"'):].split(">", 1)[0]
    emoji = "\N{GRINNING FACE}" * settings.AGUI_MAX_MESSAGE_CHARS  # one character each for the server
    assert api("alice").post(f"/api/threads/{thread}/messages/", {"content": emoji}, format="json").status_code == 202
    too_long = "z" * (settings.AGUI_MAX_MESSAGE_CHARS + 1)
    resp = api("alice").post(f"/api/threads/{thread}/messages/", {"content": too_long}, format="json")
    assert resp.status_code == 400
    assert resp.json()["content"] == [f"Ensure this field has no more than {settings.AGUI_MAX_MESSAGE_CHARS} characters."]


def test_approval_badges_say_how_calls_are_reviewed_not_the_models_instructions(login):
    """Each badge of the agent picker has a sentence of ours as its tooltip, in the reader's language;
    no tool's description (the model's instructions, in English) reaches the page, tooltip or config."""
    import html
    import re

    from django.utils import translation

    from agents.catalog import load_agents

    descriptions = {t.description for a in load_agents().values() for t in a.all_tools() if len(t.description) > 12}
    assert descriptions
    client = login("alice")
    page = client.get("/chat/").content.decode()
    titles = dict(re.findall(r'<code>([a-z_]+)</code>\s*<span class="badge[^"]*" title="([^"]*)"', page))
    assert titles["check_balance"] == "Runs without review"
    assert titles["transfer_money"] == "Each call waits for finance to approve it"
    assert titles["cancel_subscription"] == "Each call waits for you to approve it"
    assert titles["execute_command"] == "The assistant asks you to approve a call when it judges one needs it"
    with translation.override("en"):  # the page's language stays with the page, not this test's thread
        french = client.get("/chat/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert titles.keys() == dict(re.findall(r'<code>([a-z_]+)</code>\s*<span class="badge[^"]*" title="([^"]*)"', french)).keys()
    assert 'title="S’exécute sans revue"' in french
    for shown in (page, french):
        for description in descriptions:
            assert html.escape(description) not in shown and description not in html.unescape(shown), description


def test_the_chat_list_says_the_latest_request_in_the_readers_language(login, demo):
    """The list quoted the request's description as stored, in the language the chat had when it was
    asked: after choosing French, alice read "En attente de finance : Transfer 500.00 USD from ..."."""
    from agents import services

    thread = services.create_thread(demo["alice"], "banking", title="Transfer $500")
    request = transfer_request(demo["alice"])
    ApprovalRequest.objects.filter(pk=request.pk).update(thread_ref=thread.pk, said={
        "en": {"description": request.description}, "fr": {"description": "Virement de 500,00 USD"}})
    body = login("alice").get("/chat/?partial=threads", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert "Virement de 500,00 USD" in body and request.description not in body
