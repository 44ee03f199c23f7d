"""What a caller's tool takes for an argument left out (its schema's `default`) is what policy and the
reviewer read, and what is sent: an MCP tool's `"dryRun": {"type": "boolean", "default": false}` left
out made a rule `dryRun eq false -> gate` miss a call that wrote for real (a leaf whose path is
absent never matches), and so for an outside agent's schema."""

import pytest
from django.contrib.auth.models import Group

from agents.mcp_servers.client import Endpoint
from agents.mcp_servers.tools import MCPTool
from approvals import policy
from approvals import services as approval_services
from approvals.models import ApprovalRequest

pytestmark = pytest.mark.django_db

SCHEMA = {"type": "object", "required": ["path"], "$defs": {"Opts": {"type": "object", "properties": {
    "backup": {"type": "boolean", "default": True}}}},
    "properties": {"path": {"type": "string"}, "dryRun": {"type": "boolean", "default": False},
                   "opts": {"$ref": "#/$defs/Opts", "default": {}},
                   "note": {"type": "string", "default": None}}}  # a default its own schema refuses: left out
TOOL = MCPTool("fs", Endpoint("fs", "stdio", command="true"),
               {"name": "edit_file", "inputSchema": SCHEMA, "annotations": {"destructiveHint": False}}, "fs__edit_file")
GATE_WRITES = [{"name": "writes for real", "when": {"path": "args.dryRun", "op": "eq", "value": False},
                "action": "gate"}]


def test_an_mcp_call_that_leaves_out_a_default_is_judged_with_it(demo):
    approval_services.save_policy("fs__edit_file", {
        "mode": "conditional", "conditions": GATE_WRITES, "approver_kind": "group",
        "approver_group": Group.objects.get(name="reviewers")}, demo["admin"])
    cleaned = TOOL.validate({"path": "/a.txt"})
    assert cleaned == {"path": "/a.txt", "dryRun": False, "opts": {"backup": True}}
    assert policy.evaluate("fs__edit_file", cleaned, {"user": demo["alice"]}).action == "approve"
    dry = TOOL.validate({"path": "/a.txt", "dryRun": True, "opts": {"backup": False}})
    assert dry == {"path": "/a.txt", "dryRun": True, "opts": {"backup": False}}
    assert policy.evaluate("fs__edit_file", dry, {"user": demo["alice"]}).action == "auto"


def test_an_outside_agents_call_and_a_reviewers_edit_too(api, demo):
    approval_services.save_policy("crm.edit", {
        "mode": "conditional", "conditions": GATE_WRITES, "approver_kind": "group",
        "approver_group": Group.objects.get(name="reviewers")}, demo["admin"])
    resp = api("alice").post("/api/approvals/", {"tool_name": "crm.edit", "arguments": {"path": "/a", "dryRun": True},
                                                 "schema": SCHEMA}, format="json")
    assert resp.status_code == 201 and resp.json()["status"] == "approved", resp.content  # a dry run runs
    resp = api("alice").post("/api/approvals/", {"tool_name": "crm.edit", "arguments": {"path": "/a"},
                                                 "schema": SCHEMA}, format="json")
    assert resp.status_code == 201 and resp.json()["status"] == "pending", resp.content
    assert resp.json()["arguments"]["dryRun"] is False
    # a reviewer's edit that leaves it out is the same call: judged and approved with the default
    decided = api("rita").post(f"/api/approvals/{resp.json()['id']}/decide/",
                               {"decision": "approve", "arguments": {"path": "/b"}}, format="json")
    assert decided.status_code == 200, decided.content
    assert ApprovalRequest.objects.get(pk=resp.json()["id"]).final_arguments == {
        "path": "/b", "dryRun": False, "opts": {"backup": True}}
