"""A JSON Schema from outside is data, never a reason for this process to fetch something: an outside
agent's `schema`, a reviewer's edit checked against it (approvals/schemas.py)."""

import json
import time

import pytest

from approvals import schemas
from approvals.models import ApprovalRequest
from tests.helpers import json_service

pytestmark = pytest.mark.django_db


@pytest.fixture
def internal_service():
    with json_service() as service:
        yield service


def body(schema, arguments):
    return {"tool_name": "crm.tag", "arguments": arguments, "schema": schema}


def test_a_reference_to_a_url_is_refused_and_never_fetched(api, internal_service):
    url, asked = internal_service
    schema = {"type": "object", "properties": {"tag": {"$ref": f"{url}/latest/meta-data"}}}
    resp = api("alice").post("/api/approvals/", body(schema, {"tag": "x"}), format="json")
    assert resp.status_code == 400, resp.content
    assert resp.json()["code"] == "invalid_schema" and "only references inside the schema" in resp.json()["message"]
    assert "internal-secret" not in resp.content.decode()
    assert asked == [] and not ApprovalRequest.objects.exists()


def test_a_reference_to_a_local_file_is_refused_and_never_read(api, tmp_path):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"enum": ["file-secret"]}))
    schema = {"type": "object", "properties": {"tag": {"$ref": secret.as_uri()}}}
    resp = api("alice").post("/api/approvals/", body(schema, {"tag": "x"}), format="json")
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_schema", resp.content
    assert "file-secret" not in resp.content.decode()


def test_references_inside_the_schema_still_work(api):
    schema = {"type": "object", "$defs": {"tag": {"enum": ["a", "b"]}},
              "properties": {"tag": {"$ref": "#/$defs/tag"}}, "required": ["tag"]}
    ok = api("alice").post("/api/approvals/", body(schema, {"tag": "a"}), format="json")
    assert ok.status_code == 201, ok.content
    no = api("alice").post("/api/approvals/", body(schema, {"tag": "c"}), format="json")
    assert no.status_code == 400 and no.json()["code"] == "invalid_arguments"


def test_a_reference_inside_the_schema_that_leads_nowhere_is_the_schemas_fault(api):
    schema = {"type": "object", "properties": {"tag": {"$ref": "#/$defs/missing"}}}
    resp = api("alice").post("/api/approvals/", body(schema, {"tag": "a"}), format="json")
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_schema", resp.content


def test_an_id_naming_a_url_does_not_make_the_validator_fetch_it(internal_service):
    url, asked = internal_service
    schema = {"$id": f"{url}/base", "type": "object", "properties": {"tag": {"$ref": "#/$defs/t"}},
              "$defs": {"t": {"type": "string"}}}
    assert schemas.errors(schema, {"tag": 5}) == {"tag": ["Must be text."]}
    assert asked == []


SLOW = "^(a+)+$"  # exponential on a backtracking engine: 30 characters took Python's `re` minutes
NEAR_MISS = "a" * 30 + "!"


@pytest.mark.parametrize("schema, arguments", [
    ({"type": "object", "properties": {"tag": {"type": "string", "pattern": SLOW}}}, {"tag": NEAR_MISS}),
    ({"type": "object", "patternProperties": {SLOW: {"type": "string"}}}, {NEAR_MISS: "x"}),
    ({"type": "object", "patternProperties": {SLOW: {}}, "additionalProperties": False}, {NEAR_MISS: "x"}),
], ids=["pattern", "patternProperties", "additionalProperties"])
def test_a_callers_patterns_run_in_linear_time(api, schema, arguments):
    started = time.monotonic()
    resp = api("alice").post("/api/approvals/", body(schema, arguments), format="json")
    assert time.monotonic() - started < 5
    assert resp.status_code in (201, 400), resp.content


def test_what_the_patterns_say_still_holds(api):
    schema = {"type": "object", "properties": {"tag": {"type": "string", "pattern": "^[a-z]+$"}},
              "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False}
    assert api("alice").post("/api/approvals/", body(schema, {"tag": "ok", "x-n": 1}), format="json").status_code == 201
    no = api("alice").post("/api/approvals/", body(schema, {"tag": "NO", "x-n": "1", "other": 1}), format="json")
    assert no.status_code == 400 and no.json()["code"] == "invalid_arguments", no.content
    assert set(no.json()["arguments"]) == {"tag", "x-n", "arguments"}, no.json()


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"tag": {"type": "string", "pattern": "(a)\\1"}}},
    {"type": "object", "patternProperties": {"(?=x)": {}}},
    {"type": "object", "patternProperties": {"^a": {}}, "unevaluatedProperties": False},
], ids=["backreference", "lookahead", "unevaluated"])
def test_a_pattern_the_linear_engine_cannot_run_makes_the_schema_invalid(api, schema):
    resp = api("alice").post("/api/approvals/", body(schema, {"tag": "aa"}), format="json")
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_schema", resp.content


@pytest.mark.parametrize("schema, arguments", [
    ({"$ref": "#"}, {"tag": "a"}),
    ({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}, {}),
    ({"$dynamicRef": "#"}, {"tag": "a"}),
    ({"type": "object", "properties": {"tag": {"$defs": {"x": {"$ref": "#/properties/tag"}},
                                               "$ref": "#/properties/tag/$defs/x"}}}, {"tag": "a"}),
], ids=["itself", "a-cycle", "dynamic", "reached-by-the-arguments"])
def test_a_schema_that_refers_to_itself_without_end_is_invalid_not_a_500(api, schema, arguments):
    resp = api("alice").post("/api/approvals/", body(schema, arguments), format="json")
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_schema", resp.content
    assert not ApprovalRequest.objects.exists()


def test_a_recursive_schema_that_follows_the_arguments_still_works(api):
    tree = {"type": "object", "properties": {"name": {"type": "string"},
                                             "children": {"type": "array", "items": {"$ref": "#"}}}}
    arguments = {"name": "root", "children": [{"name": "a", "children": [{"name": "b"}]}]}
    assert api("alice").post("/api/approvals/", body(tree, arguments), format="json").status_code == 201
    no = api("alice").post("/api/approvals/", body(tree, {"children": [{"name": 5}]}), format="json")
    assert no.status_code == 400 and no.json()["code"] == "invalid_arguments", no.content
