"""Bad input (issue 9): fuzzing the REST API from its OpenAPI schema and the AG-UI endpoint, body
size limits, and malformed model output.

Every error a machine endpoint gives is JSON with a message; nothing answers 5xx; a model that
streams nonsense gets a clear tool error (or the run a RUN_ERROR) and nothing is executed.
"""

import asyncio
import gzip
import json
import uuid
from urllib.parse import urlencode

import pytest
import schemathesis
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.core import NotSet

from agents.catalog.models import Transfer
from agents.models import Message, Run, Thread, ToolCall
from agui_project.limits import is_json_error
from approvals.models import ApprovalRequest
from tests.conftest import stream_events, wait_for_event

FUZZ = settings(max_examples=120, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))


def _served_schema():
    """The schema exactly as /api/schema/ serves it (the view touches no database)."""
    response = Client().get("/api/schema/", {"format": "json"}, HTTP_HOST="localhost")
    assert response.status_code == 200, response.content[:300]
    return json.loads(response.content)


SCHEMA = schemathesis.openapi.from_dict(_served_schema())


def _send(client, case, headers):
    """A schemathesis case through Django's test client (its ClientHandler keeps the test's
    transaction open, which a raw WSGI call would close)."""
    kwargs = {"HTTP_HOST": "localhost", **headers}
    path = case.formatted_path
    method = case.method.lower()
    if not isinstance(case.body, NotSet):
        media_type = case.media_type or "application/json"
        if isinstance(case.body, bytes | str):
            kwargs["data"] = case.body
        elif "json" in media_type:
            kwargs["data"] = json.dumps(case.body)
        else:  # form encodings: let the client encode what it can, raw JSON text otherwise
            kwargs["data"] = urlencode(case.body, doseq=True) if isinstance(case.body, dict) else json.dumps(case.body)
        kwargs["content_type"] = media_type
    query = case.query or {}
    if method == "get":
        return client.get(path, query, **{k: v for k, v in kwargs.items() if k not in ("data", "content_type")})
    if query:
        path = f"{path}?{urlencode(query, doseq=True)}"
    return getattr(client, method)(path, **kwargs)


def _assert_clean(response, what):
    assert response.status_code < 500, f"{what} -> {response.status_code}: {response.content[:500]!r}"
    if response.status_code >= 400:
        assert is_json_error(response), f"{what} -> {response.status_code} without a JSON message: {response.content[:300]!r}"


@pytest.fixture
def tokens(demo):
    from rest_framework.authtoken.models import Token

    return {name: Token.objects.get_or_create(user=user)[0].key for name, user in demo.items()}


@pytest.fixture
def owned(demo):
    """Real objects to aim at: alice's thread and run, a finance request she asked for."""
    from agents import services
    from tests.helpers import transfer_request

    thread = services.create_thread(demo["alice"], "banking", thread_id="fuzz-thread")
    run = Run.objects.create(thread=thread, id="fuzz-run")
    request = transfer_request(demo["alice"])
    return {"thread": thread.pk, "run": run.pk, "approval": request.pk}


@pytest.fixture
def no_mcp_servers_started(monkeypatch):
    """An admin's fuzzed /api/mcp-servers/ body names a command: judge the answer without running it."""
    from agents.mcp_servers import client

    def refuse(endpoint, timeout=10.0):
        raise client.Unreachable("not started in this test")

    monkeypatch.setattr(client.hub, "list_tools", refuse)


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
def test_rest_api_from_openapi_schema_never_5xx_and_errors_are_json(tokens, owned, mode, no_mcp_servers_started):
    client = Client(raise_request_exception=False)
    strategy = SCHEMA.as_strategy(generation_mode=mode)
    ids = st.sampled_from([None, owned["thread"], owned["run"], owned["approval"]])

    @FUZZ
    @given(case=strategy, user=st.sampled_from([None, "alice", "bob", "finn", "admin"]), real_id=ids)
    def check(case, user, real_id):
        if real_id is not None and "id" in (case.path_parameters or {}):
            case.path_parameters = {**case.path_parameters, "id": real_id}
        headers = {"HTTP_AUTHORIZATION": f"Token {tokens[user]}"} if user else {}
        response = _send(client, case, headers)
        _assert_clean(response, f"{case.method} {case.formatted_path} as {user}")

    check()


# --- the AG-UI endpoint -------------------------------------------------------------------

JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                      st.text(max_size=20))
ANY_JSON = st.recursive(JSON_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                           st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                        max_leaves=20)
MAYBE_ID = st.one_of(st.text(min_size=0, max_size=250), ANY_JSON)
MESSAGE = st.fixed_dictionaries(
    {"id": MAYBE_ID, "role": st.sampled_from(["user", "assistant", "tool", "system", "developer", "reasoning", "x"])},
    optional={"content": st.one_of(st.text(max_size=50), ANY_JSON), "toolCallId": MAYBE_ID,
              "toolCalls": ANY_JSON, "name": ANY_JSON},
)
RUN_INPUT = st.fixed_dictionaries(
    {},
    optional={
        "threadId": MAYBE_ID, "runId": MAYBE_ID, "parentRunId": MAYBE_ID,
        "messages": st.one_of(st.lists(MESSAGE, max_size=3), ANY_JSON),
        "state": ANY_JSON, "tools": st.one_of(st.lists(ANY_JSON, max_size=2), ANY_JSON),
        "context": ANY_JSON, "forwardedProps": ANY_JSON, "forwarded_props": ANY_JSON,
        "resume": st.one_of(st.lists(st.fixed_dictionaries(
            {"interruptId": MAYBE_ID, "status": st.sampled_from(["resolved", "cancelled", "bogus"])},
            optional={"payload": ANY_JSON}), max_size=2), ANY_JSON),
        "protocolVersion": ANY_JSON,
    },
)
BODY = st.one_of(
    RUN_INPUT.map(lambda d: json.dumps(d).encode()),
    ANY_JSON.map(lambda d: json.dumps(d).encode()),
    st.binary(max_size=200),
    st.text(max_size=200).map(str.encode),
)


@pytest.fixture
def no_enqueue(monkeypatch):
    """A body that is valid starts a run; no worker is needed to judge the answer."""
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda *a, **k: None)


def test_agui_endpoint_fuzzed_never_5xx_and_errors_are_json(tokens, owned, no_enqueue):
    client = Client(raise_request_exception=False)

    @FUZZ
    @given(body=BODY, agent=st.sampled_from(["banking", "nope"]),
           content_type=st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded"]),
           user=st.sampled_from(["alice", "bob", None]))
    def check(body, agent, content_type, user):
        headers = {"HTTP_AUTHORIZATION": f"Bearer {tokens[user]}"} if user else {}
        response = client.post(f"/agui/{agent}/", body, content_type=content_type, HTTP_HOST="localhost",
                               HTTP_ACCEPT="text/event-stream", **headers)
        _assert_clean(response, f"POST /agui/{agent}/ {body[:80]!r}")
        if response.status_code == 200:  # a run was accepted: an event stream, never read here
            assert response["Content-Type"] == "text/event-stream"

    check()


@pytest.mark.parametrize("body,code", [
    (b"[" * 50_000, "too_deep"),
    (b'{"threadId":' * 50_000, "too_deep"),
    (json.dumps({"threadId": "t\u0000", "runId": "r", "messages": []}).encode(), "nul_character"),
])
def test_hostile_json_gets_a_clean_400(tokens, body, code):
    for path in ("/agui/banking/", "/api/threads/"):
        response = Client().post(path, body, content_type="application/json",
                                 HTTP_AUTHORIZATION=f"Token {tokens['alice']}", HTTP_HOST="localhost")
        assert response.status_code == 400 and response.json()["code"] == code, (path, response.content[:200])
    assert not Thread.objects.exists()


def test_unknown_api_route_and_method_are_json(tokens):
    client = Client()
    auth = {"HTTP_AUTHORIZATION": f"Token {tokens['alice']}", "HTTP_HOST": "localhost"}
    missing = client.get("/api/no-such-thing/", **auth)
    assert missing.status_code == 404 and is_json_error(missing)
    wrong = client.delete("/agui/banking/", **auth)
    assert wrong.status_code == 405 and is_json_error(wrong)


# --- body size limits -----------------------------------------------------------------------

@pytest.fixture
def small_limit(settings):
    settings.AGUI_MAX_BODY_BYTES = 4096
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    return 4096


def _agui_body(size):
    body = {"threadId": f"t-{uuid.uuid4()}", "runId": f"r-{uuid.uuid4()}", "messages": [
        {"id": "m1", "role": "user", "content": ""}]}
    pad = size - len(json.dumps(body))
    body["messages"][0]["content"] = "x" * pad
    data = json.dumps(body).encode()
    assert len(data) == size
    return data


@pytest.mark.parametrize("path,content_type,auth", [
    ("/agui/banking/", "application/json", "Bearer"),
    ("/api/threads/", "application/json", "Token"),
    ("/accounts/login/", "application/x-www-form-urlencoded", None),
])
def test_body_over_the_limit_is_413_json(tokens, small_limit, no_enqueue, path, content_type, auth):
    headers = {"HTTP_AUTHORIZATION": f"{auth} {tokens['alice']}"} if auth else {}
    client = Client(raise_request_exception=False)
    over = client.post(path, _agui_body(small_limit + 1), content_type=content_type, HTTP_HOST="localhost", **headers)
    assert over.status_code == 413, over.content[:300]
    assert over.json()["code"] == "body_too_large" and over.json()["limit"] == small_limit
    at_limit = client.post(path, _agui_body(small_limit), content_type=content_type, HTTP_HOST="localhost", **headers)
    assert at_limit.status_code != 413


@pytest.mark.parametrize("path,auth", [("/agui/banking/", "Bearer"), ("/api/threads/", "Token")])
def test_a_compressed_body_is_415_saying_so(tokens, no_enqueue, path, auth):
    """Nothing here decompresses a body: a gzipped one read as "not JSON" (the AG-UI POST) or as
    Python's "'utf-8' codec can't decode byte 0x8b" (the API), neither of which says why."""
    client = Client(raise_request_exception=False)
    headers = {"HTTP_AUTHORIZATION": f"{auth} {tokens['alice']}", "HTTP_HOST": "localhost"}
    body = json.dumps({"threadId": f"t-{uuid.uuid4()}", "runId": f"r-{uuid.uuid4()}", "messages": [], "agent": "banking"})
    refused = client.post(path, gzip.compress(body.encode()), content_type="application/json",
                          HTTP_CONTENT_ENCODING="gzip", **headers)
    assert refused.status_code == 415, refused.content[:300]
    assert refused.json()["code"] == "unsupported_content_encoding" and "gzip" in refused.json()["message"]
    assert refused["Accept-Encoding"] == "identity"
    plain = client.post(path, body, content_type="application/json", HTTP_CONTENT_ENCODING="identity", **headers)
    assert plain.status_code in (200, 201), plain.content[:300]


@pytest.mark.parametrize("language,says", [("en", "the body is not JSON"), ("fr", "le corps de la requête n'est pas du JSON")])
def test_a_body_that_is_not_json_is_said_so_in_words_not_the_parsers(tokens, language, says):
    """DRF's parser answered "JSON parse error - Expecting value: line 1 column 1 (char 0)", in
    English whatever the caller's language; the AG-UI endpoint says it as a sentence, with a code."""
    client = Client(raise_request_exception=False)
    resp = client.post("/api/approvals/", '{"tool_name": ', content_type="application/json", HTTP_HOST="localhost",
                       HTTP_AUTHORIZATION=f"Token {tokens['alice']}", HTTP_ACCEPT_LANGUAGE=language)
    assert resp.status_code == 400, resp.content[:300]
    assert resp.json()["code"] == "malformed_body" and resp.json()["message"].lower() == says.lower()
    assert "line 1" not in resp.content.decode() and "Expecting" not in resp.content.decode()


def test_the_gate_reads_a_body_in_the_charset_it_names(tokens, no_enqueue):
    """The API's parser decodes a body by the charset its Content-Type names; the gate read the
    bytes as UTF-8: EBCDIC brackets were not brackets to it (a 500 from the parser's recursion),
    and a latin-1 body failed its parse, so it passed unchecked and a \\u0000 was stored. Nor did
    it take "APPLICATION/Json" for JSON, which the parser does (a 500 again)."""
    client = Client(raise_request_exception=False)
    headers = {"HTTP_AUTHORIZATION": f"Token {tokens['alice']}", "HTTP_HOST": "localhost"}
    # (the test client encodes a str body in the charset its content_type names)
    deep = '{"agent": "banking", "title": ' + "[" * 5000 + "]" * 5000 + "}"
    nested = client.post("/api/threads/", deep, content_type="application/json; charset=cp500", **headers)
    assert nested.status_code == 400 and nested.json()["code"] == "too_deep", nested.content[:300]
    request = '{"tool_name": "send_email", "arguments": {"to": "a@example.com", "subject": "café \\u0000", "body": "b"}}'
    nul = client.post("/api/approvals/", request, content_type="application/json; charset=iso-8859-1",
                      **headers)
    assert nul.status_code == 400 and nul.json()["code"] == "nul_character", nul.content[:300]
    assert not ApprovalRequest.objects.exists()
    shouted = client.post("/api/threads/", deep, content_type="APPLICATION/Json", **headers)  # case is no matter
    assert shouted.status_code == 400 and shouted.json()["code"] == "too_deep", shouted.content[:300]
    taken = client.post("/api/threads/", '{"agent": "banking", "title": "café"}',
                        content_type="application/json; charset=iso-8859-1", **headers)
    assert taken.status_code == 201 and taken.json()["title"] == "café"


def test_an_agui_body_is_read_in_the_charset_it_names(tokens, no_enqueue):
    """As the API reads it (it was "the body is not JSON" for a latin-1 body that said so)."""
    body = {"threadId": f"t-{uuid.uuid4()}", "runId": f"r-{uuid.uuid4()}",
            "messages": [{"id": "m1", "role": "user", "content": "café"}]}
    resp = Client().post("/agui/banking/", json.dumps(body, ensure_ascii=False),
                         content_type="application/json; charset=iso-8859-1", HTTP_HOST="localhost",
                         HTTP_AUTHORIZATION=f"Bearer {tokens['alice']}")
    assert resp.status_code == 200, resp.content[:300]
    assert Message.objects.get(thread_id=body["threadId"]).content == "café"


async def test_chunked_body_without_length_is_measured_too(settings):
    """Over ASGI a body can arrive chunked, with no Content-Length for Django to check."""
    from django.core.asgi import get_asgi_application

    settings.AGUI_MAX_BODY_BYTES = 4096
    app = get_asgi_application()
    chunks = [b"x" * 1024] * 6
    messages = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]
    sent = []

    async def receive():
        if messages:
            return messages.pop(0)
        await asyncio.Event().wait()  # the client stays connected (Django listens for a disconnect)

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/agui/banking/", "raw_path": b"/agui/banking/",
             "query_string": b"", "root_path": "", "scheme": "http", "server": ("localhost", 80),
             "client": ("127.0.0.1", 5000), "asgi": {"version": "3.0"}, "http_version": "1.1",
             "headers": [(b"host", b"localhost"), (b"content-type", b"application/json"),
                         (b"transfer-encoding", b"chunked")]}
    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    assert start["status"] == 413 and json.loads(body)["code"] == "body_too_large"


# --- malformed model output -----------------------------------------------------------------

TRANSFER_ARGS = {"from_account": "1234567890", "to_account": "0987654321", "amount": 10, "currency": "USD"}


def _run(api, fake_llm, *replies, prompt="Transfer $10 from account 1234567890 to account 0987654321"):
    fake_llm.push(*replies)
    client = api("alice")
    thread_id = client.post("/api/threads/", {"agent": "banking"}, format="json").json()["id"]
    run_id = client.post(f"/api/threads/{thread_id}/messages/", {"content": prompt}, format="json").json()["run_id"]
    end, _ = wait_for_event(thread_id, lambda e: e["type"] in ("RUN_ERROR", "RUN_FINISHED") and e.get("runId", run_id) == run_id
                            or e["type"] == "RUN_ERROR")
    return thread_id, end


def _nothing_executed():
    assert not Transfer.objects.exists()
    assert not ApprovalRequest.objects.exists()
    assert not ToolCall.objects.filter(status__in=["executing", "succeeded", "awaiting_approval"]).exists()


def _tool_result(thread_id, call_id):
    return next(e for e in stream_events(thread_id) if e["type"] == "TOOL_CALL_RESULT" and e["toolCallId"] == call_id)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("call,expected", [
    ({"id": "call_broken", "name": "transfer_money", "arguments": '{"from_account": "1234567890", "amount": '},
     "not valid JSON"),
    ({"id": "call_unknown", "name": "wire_all_the_money", "arguments": json.dumps(TRANSFER_ARGS)},
     "no tool named 'wire_all_the_money'"),
    ({"id": "call_extra", "name": "transfer_money", "arguments": json.dumps({**TRANSFER_ARGS, "memo": "skip review"})},
     "memo"),
    ({"id": "call_wrong_type", "name": "transfer_money", "arguments": json.dumps({**TRANSFER_ARGS, "amount": "all"})},
     "amount"),
    ({"id": "call_not_object", "name": "transfer_money", "arguments": "[1, 2, 3]"}, "invalid arguments"),
    # json reads it and fails converting it (a ValueError, not JSONDecodeError): the run failed
    ({"id": "call_digits", "name": "transfer_money",
      "arguments": json.dumps({**TRANSFER_ARGS, "amount": "N"}).replace('"N"', "9" * 5000)}, "more than 4300 digits"),
], ids=["broken-json", "unknown-tool", "hallucinated-argument", "wrong-type", "not-an-object", "long-number"])
def test_malformed_tool_call_is_a_tool_error_and_nothing_runs(celery_worker_live, fake_llm, api, call, expected):
    thread_id, end = _run(api, fake_llm, {"text": "On it.", "tool_calls": [call]}, {"text": "That did not work."})
    assert end["type"] == "RUN_FINISHED"
    result = _tool_result(thread_id, call["id"])
    assert result["content"].startswith("Error") and expected in result["content"], result["content"]
    assert ToolCall.objects.get(pk=call["id"]).status == ToolCall.Status.INVALID
    _nothing_executed()
    # the model was told, in the tool message of its next turn
    assert fake_llm.requests[-1]["messages"][-1] == {"role": "tool", "tool_call_id": call["id"],
                                                     "content": result["content"]}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_stream_cut_mid_tool_call_is_run_error_and_nothing_runs(celery_worker_live, fake_llm, api):
    call = {"id": "call_cut", "name": "transfer_money", "arguments": json.dumps(TRANSFER_ARGS)}
    thread_id, end = _run(api, fake_llm, {"text": "Moving the money now.", "tool_calls": [call], "cut": True})
    assert end["type"] == "RUN_ERROR" and end["code"] == "model_unavailable"
    assert Run.objects.get(thread_id=thread_id).status == Run.Status.FAILED
    assert not ToolCall.objects.exists()
    _nothing_executed()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_model_error_status_is_run_error(celery_worker_live, fake_llm, api):
    thread_id, end = _run(api, fake_llm, {"error": 400, "error_message": "context_length_exceeded"})
    assert end["type"] == "RUN_ERROR" and end["code"] == "model_error"
    _nothing_executed()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_empty_stream_is_run_error(celery_worker_live, fake_llm, api, monkeypatch):
    """A 200 whose stream holds no chunk at all (only [DONE]): the run must not end as a silent success."""
    monkeypatch.setattr(fake_llm, "chunks", lambda reply, model: [])
    thread_id, end = _run(api, fake_llm, {"text": "unused"})
    assert end["type"] == "RUN_ERROR", end
    _nothing_executed()
