"""The OpenAPI schema (/api/schema/) says what the endpoints do: a valid OpenAPI 3 document, each
path parameter in its path, and each documented answer the status and top-level keys a real
request gets."""

import re

import pytest
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.validation import validate_schema

from tests.helpers import transfer_request

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema():
    document = SchemaGenerator().get_schema(request=None, public=True)
    validate_schema(document)  # raises on an invalid OpenAPI 3 document
    return document


def _resolve(schema, node):
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def check(schema, path, method, resp):
    """The documented answer for resp's status: the same shape (an object's keys, a list's items' keys)."""
    documented = schema["paths"][path][method.lower()]["responses"]
    status = str(resp.status_code)
    assert status in documented, f"{method} {path}: {status} not documented ({sorted(documented)}): {resp.content[:200]}"
    content = documented[status].get("content")
    if resp.status_code == 204:
        assert not content
        return
    body = _resolve(schema, content["application/json"]["schema"])
    data = resp.json()
    if body.get("type") == "array":
        assert isinstance(data, list), f"{method} {path}: documented a list, got {type(data).__name__}"
        body, rows = _resolve(schema, body["items"]), data
    else:
        assert isinstance(data, dict), f"{method} {path}: documented an object, got {type(data).__name__}"
        rows = [data]
    props, required = set(body.get("properties", {})), set(body.get("required", []))
    for row in rows:
        assert required <= set(row), f"{method} {path} {status}: missing {required - set(row)}"
        if resp.status_code < 400:  # errors may carry field errors and details beside message and code
            assert set(row) <= props, f"{method} {path} {status}: undocumented {set(row) - props}"


def test_every_path_parameter_is_in_its_path(schema):
    wrong = []
    for path, operations in schema["paths"].items():
        names = set(re.findall(r"{(\w+)}", path))
        for method, operation in operations.items():
            declared = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
            if declared != names:
                wrong.append((method.upper(), path, sorted(declared)))
    assert not wrong


def test_policies_and_mcp_servers_answer_as_documented(schema, api):
    admin = api("admin")
    check(schema, "/api/policies/", "GET", admin.get("/api/policies/"))
    body = {"tool_name": "future_tool", "mode": "deny", "approver_kind": "requester"}
    check(schema, "/api/policies/", "POST", admin.post("/api/policies/", body, format="json"))
    check(schema, "/api/policies/", "POST", admin.post("/api/policies/", body, format="json"))  # 409
    detail = "/api/policies/{tool_name}/"
    check(schema, detail, "PUT", admin.put("/api/policies/check_balance/", {"mode": "never"}, format="json"))  # 201
    check(schema, detail, "PUT", admin.put("/api/policies/check_balance/", {"mode": "always"}, format="json"))
    check(schema, detail, "PATCH", admin.patch("/api/policies/check_balance/", {"risk": "bogus"}, format="json"))
    check(schema, detail, "GET", admin.get("/api/policies/check_balance/"))
    check(schema, detail, "DELETE", admin.delete("/api/policies/check_balance/"))
    check(schema, detail, "DELETE", admin.delete("/api/policies/check_balance/"))  # 404
    check(schema, detail, "GET", admin.get("/api/policies/nothing_here/"))
    check(schema, "/api/mcp-servers/", "GET", admin.get("/api/mcp-servers/"))
    check(schema, "/api/mcp-servers/{name}/", "GET", admin.get("/api/mcp-servers/nothing/"))


def test_messages_and_runs_answer_as_documented(schema, api, monkeypatch):
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    monkeypatch.setattr("agents.runtime.events.append", lambda *a, **k: "1-0")
    alice = api("alice")
    thread = alice.post("/api/threads/", {"agent": "banking"}, format="json").json()["id"]
    url = f"/api/threads/{thread}/messages/"
    started = alice.post(url, {"content": "hello"}, format="json")
    assert started.status_code == 202
    check(schema, "/api/threads/{id}/messages/", "POST", started)
    check(schema, "/api/threads/{id}/messages/", "POST", alice.post(url, {"content": "again"}, format="json"))  # 409
    check(schema, "/api/threads/{id}/messages/", "POST", alice.post(url, {"content": ""}, format="json"))  # 400
    listed = alice.get(url)
    assert listed.status_code == 200 and listed.json()
    check(schema, "/api/threads/{id}/messages/", "GET", listed)
    check(schema, "/api/threads/{id}/", "DELETE", alice.delete(f"/api/threads/{thread}/"))  # 409: a run works
    run = started.json()["run_id"]
    check(schema, "/api/runs/{id}/cancel/", "POST", alice.post(f"/api/runs/{run}/cancel/"))  # 202
    check(schema, "/api/runs/{id}/", "GET", alice.get(f"/api/runs/{run}/"))


def test_decide_answers_as_documented(schema, api, demo):
    req = transfer_request(demo["alice"])
    url, path = f"/api/approvals/{req.pk}/decide/", "/api/approvals/{id}/decide/"
    documented = schema["paths"][path]["post"]["responses"]
    assert {"200", "400", "403", "404", "409"} <= set(documented)
    # the codes a program reads: requester_inactive was answered and not named
    assert all(code in documented["409"]["description"]
               for code in ("already_decided", "already_approved", "arguments_changed", "requester_inactive"))
    check(schema, path, "POST", api("alice").post(url, {"decision": "approve"}, format="json"))  # 403
    check(schema, path, "POST", api("bob").post(url, {"decision": "approve"}, format="json"))  # 404
    finn = api("finn")
    check(schema, path, "POST", finn.post(url, {"decision": "reject"}, format="json"))  # 400 feedback_required
    check(schema, path, "POST", finn.post(url, {"decision": "maybe"}, format="json"))  # 400 field errors
    ok = finn.post(url, {"decision": "reject", "feedback": "no"}, format="json")
    assert ok.status_code == 200
    check(schema, path, "POST", ok)
    check(schema, path, "POST", finn.post(url, {"decision": "approve"}, format="json"))  # 409
    check(schema, "/api/approvals/{id}/", "GET", finn.get(f"/api/approvals/{req.pk}/?wait=999"))  # 400


def _json_schema(node):
    """An OpenAPI 3.0 schema as JSON Schema: `nullable` is 3.0's own word for "or null"."""
    if isinstance(node, list):
        return [_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    plain = {k: _json_schema(v) for k, v in node.items() if k != "nullable"}
    return {"anyOf": [plain, {"type": "null"}]} if node.get("nullable") else plain


def conforms(schema, path, method, resp):
    """The answer's values are of the documented types, null only where the schema says it may be
    (a client generated from the schema types a field that is not nullable as never null)."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    document = _json_schema(schema)
    registry = Registry().with_resource("urn:api", Resource.from_contents(
        {**document, "$schema": "https://json-schema.org/draft/2020-12/schema"}))
    answer = document["paths"][path][method.lower()]["responses"][str(resp.status_code)]
    body = {"$ref": "urn:api" + answer["content"]["application/json"]["schema"]["$ref"]}
    errors = [(list(e.absolute_path), e.message) for e in Draft202012Validator(body, registry=registry).iter_errors(resp.json())]
    assert not errors, f"{method} {path}: {errors[:5]}"


def test_what_may_be_null_is_documented_nullable(schema, api, demo):
    """A pending request names no decider (nor, here, a group to escalate to), an audit row of a
    policy change no request, a tool on its code defaults no time of change: all null, documented
    as strings that are never null."""
    req = transfer_request(demo["alice"])
    admin = api("admin")
    conforms(schema, "/api/approvals/", "GET", api("finn").get("/api/approvals/"))
    conforms(schema, "/api/approvals/{id}/", "GET", api("finn").get(f"/api/approvals/{req.pk}/"))
    assert admin.patch("/api/policies/check_balance/", {"risk": "high"}, format="json").status_code in (200, 201)
    conforms(schema, "/api/audit/", "GET", admin.get("/api/audit/"))
    conforms(schema, "/api/policies/", "GET", admin.get("/api/policies/"))


def test_the_refusals_drf_answers_are_documented(schema, api, client, demo):
    """No token, a permission for admins only, a path naming nothing, a list page past its end, a
    filter or a body refused: answered, and none was in the schema."""
    alice = api("alice")
    check(schema, "/api/threads/", "GET", client.get("/api/threads/"))  # 401
    check(schema, "/api/policies/", "GET", alice.get("/api/policies/"))  # 403
    check(schema, "/api/threads/{id}/state/", "GET", alice.get("/api/threads/nope/state/"))  # 404
    check(schema, "/api/runs/{id}/cancel/", "POST", alice.post("/api/runs/nope/cancel/"))  # 404
    check(schema, "/api/threads/{id}/", "DELETE", alice.delete("/api/threads/nope/"))  # 404
    check(schema, "/api/approvals/", "GET", alice.get("/api/approvals/?page=9"))  # 404
    check(schema, "/api/approvals/", "GET", alice.get("/api/approvals/?status=bogus"))  # 400
    refused = alice.post("/api/threads/", {"agent": "banking"}, format="json", HTTP_ACCEPT="application/xml")
    assert refused.status_code == 406 and refused.json()["code"] == "not_acceptable", refused.content
    check(schema, "/api/threads/", "POST", refused)
    assert all("406" in op["responses"] for ops in schema["paths"].values() for op in ops.values())
    check(schema, "/api/threads/", "POST", alice.post("/api/threads/", {"agent": "nope"}, format="json"))  # 400


def test_every_error_has_a_code_and_the_refusals_in_front_of_the_views_are_documented(schema, api, client, demo,
                                                                                      settings, monkeypatch):
    """Every refused call answers a `code` (the schema said "most"), and the answers made in front of
    any view were in no operation: 413 (body too large), 415 (a compressed body), 503 (the database
    busy, Redis away: with Retry-After), nor GET /api/auth/token/'s 404 no_token (signed in, no token).
    A client generated from the schema met them as answers it was never told of."""
    import psycopg
    from django.db import connections

    error = _resolve(schema, {"$ref": "#/components/schemas/Error"})
    assert set(error["required"]) == {"message", "code"}
    alice = api("alice")
    settings.AGUI_MAX_BODY_BYTES = 100
    big = alice.post("/api/threads/", {"agent": "banking", "title": "x" * 200}, format="json")
    assert big.status_code == 413 and big.json()["code"] == "body_too_large"
    check(schema, "/api/threads/", "POST", big)
    settings.AGUI_MAX_BODY_BYTES = 2 * 1024 * 1024
    packed = alice.post("/api/threads/", b"\x1f\x8b", content_type="application/json", HTTP_CONTENT_ENCODING="gzip")
    assert packed.status_code == 415
    check(schema, "/api/approvals/{id}/decide/", "POST", packed)
    plain = alice.post("/api/threads/", "agent=banking", content_type="text/plain")
    assert plain.status_code == 415 and plain.json()["code"] == "unsupported_media_type"
    documented = schema["paths"]["/api/threads/"]["post"]["responses"]["415"]["description"]
    assert "unsupported_media_type" in documented and "unsupported_content_encoding" in documented

    from agents.models import Run, Thread
    from tests.agui_project.test_busy import as_django

    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    run = Run.objects.create(thread=thread, status=Run.Status.RUNNING)

    def gone(self):
        raise as_django(psycopg.OperationalError("connection failed: Connection refused"))

    with monkeypatch.context() as database_away:  # answered as a busy database (agui_project/busy.py)
        database_away.setattr(type(connections["default"]), "ensure_connection", gone)
        away = alice.post(f"/api/runs/{run.pk}/cancel/")
    assert away.status_code == 503 and away.json()["code"] == "database_busy", away.content
    check(schema, "/api/runs/{id}/cancel/", "POST", away)
    documented = schema["paths"]["/api/runs/{id}/cancel/"]["post"]["responses"]["503"]
    assert "Retry-After" in documented["headers"]
    assert all("503" in op["responses"] for ops in schema["paths"].values() for op in ops.values())

    client.force_login(demo["bob"])  # signed in, never given a token
    check(schema, "/api/auth/token/", "GET", client.get("/api/auth/token/"))


def test_a_field_named_reason_is_not_the_tokens(schema, api):
    """`reason` is a 401's word for why a token was refused; a request field of that name answers its field
    errors as a list, which the shared error schema typed as the token's enum."""
    resp = api("alice").post("/api/approvals/", {"tool_name": "oa.r", "arguments": {}, "schema": {"type": "object"},
                                                 "reason": "x" * 5001}, format="json")
    assert resp.status_code == 400 and isinstance(resp.json()["reason"], list), resp.content
    answers = schema["paths"]["/api/approvals/"]["post"]["responses"]
    refused = _resolve(schema, answers["400"]["content"]["application/json"]["schema"])
    assert "reason" not in refused["properties"]
    token = _resolve(schema, answers["401"]["content"]["application/json"]["schema"])
    assert _resolve(schema, token["properties"]["reason"]["allOf"][0])["enum"] == ["unknown", "expired", "inactive"]
