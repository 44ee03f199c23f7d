"""The REST API, the AG-UI endpoint and their JSON errors answer a token caller in its language:
the Accept-Language it sends, else its user's saved language (people.Profile), else LANGUAGE_CODE;
Content-Language says which. Only the sentences change: `code` and field names stay as they are."""

import json
import uuid

import pytest
from asgiref.sync import async_to_sync
from django.utils import translation
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from agents import services as agent_services
from people.services import set_language

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _back_to_english():
    yield
    translation.deactivate()  # the test client's requests leave their language active on this thread


@pytest.fixture
def caller(api, demo):
    """caller("alice", "id") -> alice's token client, her profile saying `language`."""

    def make(username, language="", keyword="Token"):
        set_language(user=demo[username], language=language)
        return api(username, keyword=keyword)

    return make


def test_outside_approvals_answer_in_the_callers_saved_language(caller):
    alice = caller("alice", "id")
    # a validation error (DRF's own words) and one of ours, with its code and fields as they were
    missing = alice.post("/api/approvals/", {"arguments": {}}, format="json")
    assert missing.status_code == 400 and missing["Content-Language"] == "id"
    assert missing.json()["tool_name"] == ["Bidang ini harus diisi."]
    unknown = alice.post("/api/approvals/", {"tool_name": "deploy_rocket", "arguments": {}}, format="json")
    body = unknown.json()
    assert unknown.status_code == 400 and body["code"] == "unknown_tool" and unknown["Content-Language"] == "id"
    assert body["message"] == ("proyek ini tidak mengenal alat deploy_rocket: kirim JSON Schema argumennya di "
                               "`schema`")
    assert body["schema"] == ["wajib untuk alat yang tidak dikenal proyek ini"]
    # a request that is not hers to see: 404 in her language, not get_object_or_404's English model name
    absent = alice.get("/api/approvals/no-such-request/")
    assert absent.status_code == 404 and absent.json()["message"] == "Data tidak ditemukan."
    assert absent["Content-Language"] == "id"
    hers = alice.post("/api/approvals/", {"tool_name": "deploy_rocket", "arguments": {},
                                          "schema": {"type": "object"}}, format="json").json()["id"]
    wait = alice.get(f"/api/approvals/{hers}/?wait=999")
    assert wait.status_code == 400 and wait.json()["code"] == "invalid_wait"
    assert wait.json()["message"].startswith("wait harus dari 0 sampai 60 detik")


def test_accept_language_beats_the_saved_language_which_beats_the_default(caller):
    alice = caller("alice", "id")
    unknown = alice.post("/api/approvals/", {"tool_name": "deploy_rocket", "arguments": {}}, format="json",
                         HTTP_ACCEPT_LANGUAGE="fr-FR,fr;q=0.9")
    assert unknown.status_code == 400 and unknown.json()["code"] == "unknown_tool"
    assert unknown.json()["message"].startswith("ce projet ne connaît pas l'outil deploy_rocket")
    assert unknown["Content-Language"] == "fr"
    # a language we do not have is no preference: her saved one applies
    german = alice.get("/api/approvals/nope/", HTTP_ACCEPT_LANGUAGE="de-DE")
    assert german.json()["message"] == "Data tidak ditemukan." and german["Content-Language"] == "id"
    # neither: LANGUAGE_CODE (English in the tests)
    rita = caller("rita")
    unknown = rita.post("/api/approvals/", {"tool_name": "deploy_rocket", "arguments": {}}, format="json")
    assert unknown.json()["message"].startswith("this project does not know the tool deploy_rocket")
    assert unknown["Content-Language"] == "en"


def test_a_refused_token_is_told_in_the_language_asked_for(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    refused = client.get("/api/approvals/", HTTP_ACCEPT_LANGUAGE="pt-BR")
    assert refused.status_code == 401 and refused["Content-Language"] == "pt-br"
    assert refused.json()["message"] == "O token não é válido: pode ter sido revogado ou digitado errado."


def test_threads_and_the_answer_endpoint_answer_in_the_saved_language(caller, demo):
    alice = caller("alice", "zh-hans", keyword="Bearer")
    bad_agent = alice.post("/api/threads/", {"agent": "nobody"}, format="json")
    assert bad_agent.status_code == 400 and bad_agent["Content-Language"] == "zh-hans"
    assert bad_agent.json()["agent"] == ["未知的智能体 'nobody'"]
    thread = agent_services.create_thread(demo["alice"], "banking")
    answer = alice.post(f"/api/threads/{thread.pk}/answer/", {"answer": "yes"}, format="json")
    assert answer.status_code == 409 and answer.json()["code"] == "nothing_open"
    assert answer.json()["message"] == "此对话中没有待答复的问题"
    unknown = alice.post(f"/api/threads/{thread.pk}/answer/", {"request_id": "q1", "answer": "yes"}, format="json")
    assert unknown.status_code == 404 and unknown.json() == {"message": "此对话中没有问题 q1", "code": "unknown_interrupt"}
    # someone else's thread: DRF's 404, in her language
    other = agent_services.create_thread(demo["bob"], "banking")
    assert alice.get(f"/api/threads/{other.pk}/").json()["message"] == "未找到。"


def test_mcp_servers_answer_in_the_admins_saved_language(caller):
    admin = caller("admin", "fr")
    absent = admin.get("/api/mcp-servers/nowhere/")
    assert absent.status_code == 404 and absent.json()["message"] == "aucun serveur MCP de ce nom"
    assert absent["Content-Language"] == "fr"
    stdio = admin.post("/api/mcp-servers/", {"name": "tools", "transport": "stdio", "command": "true"}, format="json")
    assert stdio.status_code == 403 and stdio.json()["code"] == "commands_need_sign_in"
    assert stdio.json()["message"].startswith("Un serveur MCP stdio exécute une commande sur cette machine")
    no_url = admin.post("/api/mcp-servers/", {"name": "web", "transport": "http"}, format="json")
    assert no_url.status_code == 400 and no_url.json()["url"] == ["un serveur Streamable HTTP a besoin d'une URL"]


def test_json_errors_outside_the_views_follow_the_token_too(caller, settings):
    alice = caller("alice", "id")
    nowhere = alice.get("/api/no-such-route/")
    assert nowhere.status_code == 404 and nowhere.json() == {"message": "tidak ditemukan", "code": "not_found"}
    assert nowhere["Content-Language"] == "id"
    settings.AGUI_MAX_BODY_BYTES = 100
    big = alice.post("/api/approvals/", {"tool_name": "x" * 200, "arguments": {}}, format="json")
    assert big.status_code == 413 and big.json()["code"] == "body_too_large" and big.json()["limit"] == 100
    assert big.json()["message"].startswith("isi permintaan terlalu besar (") and big["Content-Language"] == "id"
    asked = alice.post("/api/approvals/", {"tool_name": "x" * 200, "arguments": {}}, format="json",
                       HTTP_ACCEPT_LANGUAGE="fr")
    assert asked.json()["message"].startswith("le corps de la requête est trop volumineux")
    assert asked["Content-Language"] == "fr"
    settings.AGUI_MAX_BODY_BYTES = 2 * 1024 * 1024
    deep = alice.post("/api/approvals/", "[" * 300 + "]" * 300, content_type="application/json")
    assert deep.status_code == 400 and deep.json()["code"] == "too_deep"
    assert deep.json()["message"] == "isi JSON bersarang lebih dalam dari 200 tingkat"


async def _collect(content):
    return b"".join([chunk async for chunk in content])


def test_the_agui_endpoint_refuses_in_the_saved_language(caller, demo):
    caller("alice", "pt-br")
    headers = {"HTTP_AUTHORIZATION": f"Bearer {Token.objects.get(user=demo['alice']).key}"}
    client = APIClient()
    wrong_type = client.post("/agui/banking/", "{}", content_type="text/plain", **headers)
    assert wrong_type.status_code == 415 and wrong_type.json()["code"] == "unsupported_media_type"
    assert wrong_type.json()["message"] == "envie o RunAgentInput como JSON (Content-Type: application/json)"
    assert wrong_type["Content-Language"] == "pt-br"
    # a RunAgentInput of the wrong shape: what is wrong in sentences, not pydantic's English
    shape = client.post("/agui/banking/", json.dumps({"threadId": "t-1", "runId": "r-1", "messages": "hi"}),
                        content_type="application/json", **headers)
    assert shape.status_code == 422 and shape.json()["errors"]["messages"] == ["Deve ser uma lista."]
    # in-stream: RUN_ERROR's message for the person, its code as it was
    bobs = agent_services.create_thread(demo["bob"], "banking")
    body = {"threadId": bobs.pk, "runId": f"run-{uuid.uuid4()}", "messages": [], "state": {}, "tools": [],
            "context": [], "forwardedProps": {}}
    stream = client.post("/agui/banking/", json.dumps(body), content_type="application/json",
                         HTTP_ACCEPT="text/event-stream", **headers)
    frames = [json.loads(f[len("data: "):]) for f in async_to_sync(_collect)(stream.streaming_content).decode()
              .split("\n\n") if f]
    assert frames[-1]["type"] == "RUN_ERROR" and frames[-1]["code"] == "thread_id_used"
    assert frames[-1]["message"] == ("este id de conversa já está em uso ou pertencia a uma conversa excluída; "
                                     "comece uma nova conversa com um novo id")


@pytest.mark.django_db(transaction=True)
async def test_over_asgi_a_refusal_in_front_of_the_views_reads_the_token_too(caller, demo, async_client, settings):
    """The async middleware chain (Daphne's): the 413 in front of every view looks the token up on a
    thread, and answers in its user's language."""
    from asgiref.sync import sync_to_async

    await sync_to_async(caller)("alice", "fr")
    key = (await Token.objects.aget(user=demo["alice"])).key
    settings.AGUI_MAX_BODY_BYTES = 100
    big = await async_client.post("/agui/banking/", json.dumps({"threadId": "t" * 200}), content_type="application/json",
                                  headers={"Authorization": f"Bearer {key}"})
    assert big.status_code == 413 and big.json()["code"] == "body_too_large"
    assert big.json()["message"].startswith("le corps de la requête est trop volumineux")
    assert big["Content-Language"] == "fr"
    nowhere = await async_client.get("/api/no-such-route/", headers={"Authorization": f"Token {key}"})
    assert nowhere.status_code == 404 and nowhere.json() == {"message": "introuvable", "code": "not_found"}
    assert nowhere["Content-Language"] == "fr"
    hers = await async_client.post("/api/approvals/", {"tool_name": "deploy_rocket", "arguments": {},
                                                       "schema": {"type": "object"}},
                                   content_type="application/json", headers={"Authorization": f"Token {key}"})
    mine = await async_client.get(f"/api/approvals/{hers.json()['id']}/?wait=999",
                                  headers={"Authorization": f"Token {key}"})
    assert mine.status_code == 400 and mine.json()["message"].startswith("wait doit être compris entre 0 et 60")
    assert mine["Content-Language"] == "fr"
