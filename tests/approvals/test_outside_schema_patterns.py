"""A caller's JSON Schema (an outside agent's `schema`, an MCP server's inputSchema, a model's
question) is run on RE2: its `pattern` cannot hold a process, reads as JSON Schema's ECMA-262 does
(`$` the end, `\\d` ASCII digits), and a `$ref` that cannot be followed is the schema's fault (400),
never a 500. The same holds when a reviewer edits such a request's arguments."""

import time

import pytest

from agents.mcp_servers.client import Endpoint
from agents.mcp_servers.tools import MCPTool
from agents.runtime import inputs
from approvals import services
from approvals.models import ApprovalRequest
from approvals.registry import ArgumentsInvalid

pytestmark = pytest.mark.django_db

EVIL = "^(a+)+$"  # exponential on Python's re: 30 characters took minutes
SLOW_VALUE = "a" * 40 + "!"


def ask(api, schema, arguments):
    return api("alice").post("/api/approvals/", {"tool_name": "crm.tag", "arguments": arguments, "schema": schema},
                             format="json")


def test_a_backtracking_pattern_answers_at_once(api):
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": EVIL}}}
    started = time.monotonic()
    resp = ask(api, schema, {"a": SLOW_VALUE})
    assert time.monotonic() - started < 2
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_arguments", resp.content
    names = {"type": "object", "patternProperties": {EVIL: {"type": "integer"}}}
    started = time.monotonic()
    resp = ask(api, names, {SLOW_VALUE: "x"})
    assert time.monotonic() - started < 2 and resp.status_code == 201, resp.content  # the name does not match


def test_a_reviewers_edit_is_checked_the_same_way(api):
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": EVIL}}}
    made = ask(api, schema, {"a": "aaa"})
    assert made.status_code == 201, made.content
    started = time.monotonic()
    resp = api("rita").post(f"/api/approvals/{made.json()['id']}/decide/",
                            {"decision": "approve", "arguments": {"a": SLOW_VALUE}}, format="json")
    assert time.monotonic() - started < 2
    assert resp.status_code == 400, resp.content
    assert ApprovalRequest.objects.get(pk=made.json()["id"]).status == "pending"


@pytest.mark.parametrize("value", ["1234567890\n", "１２３４５６７８９０", "123456789\u0660"])
def test_a_pattern_reads_as_json_schema_says(api, value):
    schema = {"type": "object", "properties": {"account": {"type": "string", "pattern": r"^\d{10}$"}}}
    assert ask(api, schema, {"account": "1234567890"}).status_code == 201
    resp = ask(api, schema, {"account": value})
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_arguments", resp.content


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "(a)\\1"}}},  # a backreference
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "^(?!x)"}}},  # lookahead
    {"type": "object", "properties": {"a": {"$ref": "https://example.com/a.json"}}},  # nothing is fetched
    {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}},
    {"$defs": {"n": {"$ref": "#/$defs/n"}}, "type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}},
])
def test_a_schema_that_cannot_be_run_is_a_400(api, schema):
    resp = ask(api, schema, {"a": "x"})
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_schema", resp.content
    assert not ApprovalRequest.objects.exists()


def test_an_mcp_tools_schema_and_a_questions_schema_too():
    listed = {"name": "tag", "inputSchema": {"type": "object", "properties": {
        "tag": {"type": "string", "pattern": EVIL}, "ref": {"$ref": "#/nowhere"}}}}
    tool = MCPTool("notes", Endpoint("notes", "stdio", command="true"), listed, "notes__tag")
    started = time.monotonic()
    with pytest.raises(ArgumentsInvalid):
        tool.validate({"tag": SLOW_VALUE})
    assert time.monotonic() - started < 2
    with pytest.raises(ArgumentsInvalid):  # the $ref: refused, not a crash
        tool.validate({"ref": 1})
    with pytest.raises(inputs.InputError) as exc:
        inputs.check_schema({"type": "string", "pattern": "(a)\\1"})
    assert exc.value.code == "invalid_schema"


def test_services_decide_refuses_an_edit_against_a_broken_ref(api, demo):
    # a request asked before this check, with a schema whose $ref leads nowhere: the edit is refused
    made = ask(api, {"type": "object", "properties": {"a": {"type": "string"}}}, {"a": "x"})
    ApprovalRequest.objects.filter(pk=made.json()["id"]).update(
        schema={"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}})
    with pytest.raises(services.InvalidArguments):
        services.decide(made.json()["id"], demo["rita"], "approve", arguments={"a": "y"})
