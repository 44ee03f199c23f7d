"""An MCP tool as the approval engine sees it: names, schema validation, defaults from annotations."""

import pytest

from agents.mcp_servers.catalog import build
from agents.mcp_servers.client import Endpoint
from agents.mcp_servers.models import MCPServer
from agents.mcp_servers.tools import MCPTool, tool_name
from approvals.registry import ArgumentsInvalid

EP = Endpoint("notes", "stdio", command="true")
SCHEMA = {"type": "object", "title": "deleteArguments",
          "properties": {"note_id": {"type": "integer", "title": "Note Id"}}, "required": ["note_id"]}


def listed(name="delete", **hints):
    return {"name": name, "description": f"{name} a note", "inputSchema": SCHEMA, "annotations": hints}


@pytest.mark.parametrize("hints, mode, approver, risk, reversible, idempotent", [
    ({"readOnlyHint": True}, "never", "requester", "low", True, True),
    ({"readOnlyHint": False, "destructiveHint": True}, "always", "group:reviewers", "high", False, False),
    ({}, "always", "group:reviewers", "high", False, False),  # MCP: not read-only and destructive unless said
    ({"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True}, "never", "requester", "medium",
     False, True),
])
def test_policy_defaults_come_from_the_annotations(hints, mode, approver, risk, reversible, idempotent):
    tool = MCPTool("notes", EP, listed(**hints), "notes__delete")
    defaults = tool.defaults()
    assert (defaults.mode, defaults.approver, defaults.risk, defaults.reversible, defaults.idempotent) == (
        mode, approver, risk, reversible, idempotent)
    assert defaults.extra == {"source": "mcp", "server": "notes", "tool": "delete",
                              "open_world": hints.get("openWorldHint", True)}


def test_open_world_and_destructive_are_told_to_the_reviewer():
    closed = MCPTool("notes", EP, listed(destructiveHint=True, openWorldHint=False), "notes__delete")
    assert "cannot be undone" in closed.impact_for({}) and "open world" not in closed.impact_for({})
    open_ = MCPTool("web", EP, listed(readOnlyHint=True, openWorldHint=True), "web__delete")
    assert "beyond this system" in open_.impact_for({}) and "notes" not in open_.impact_for({})
    assert closed.description_for({"note_id": 3}) == "delete on the MCP server notes (note_id=3)"
    assert closed.request_context()["mcp"] == {"server": "notes", "tool": "delete", "open_world": False,
                                               "destructive": True, "read_only": False}


def test_arguments_are_validated_against_the_input_schema_and_titles_are_not_sent():
    tool = MCPTool("notes", EP, listed(readOnlyHint=True), "notes__delete")
    assert tool.validate({"note_id": 3}) == {"note_id": 3}
    with pytest.raises(ArgumentsInvalid) as exc:
        tool.validate({"note_id": "3"})
    assert exc.value.errors == {"note_id": ["Must be a whole number."]}  # approvals/argument_errors.py
    with pytest.raises(ArgumentsInvalid) as exc:
        tool.validate({})
    assert exc.value.errors == {"__root__": ["Required: note_id."]}
    with pytest.raises(ArgumentsInvalid):
        tool.validate([3])
    spec = tool.openai_spec()["function"]
    assert spec["name"] == "notes__delete" and "title" not in spec["parameters"]
    assert spec["parameters"]["properties"]["note_id"] == {"type": "integer"}


def test_names_are_prefixed_by_server_and_what_cannot_be_offered_is_said():
    assert tool_name("notes", "search") == "notes__search"
    assert tool_name("fs", "read.file") == "fs__read_file"  # OpenAI's function names have no dots
    assert tool_name("fs", "x" * 70) is None
    server = MCPServer(name="notes", transport="stdio", command="true", tools=[
        listed("search", readOnlyHint=True), listed("x" * 70),
        {"name": "broken", "inputSchema": {"type": "object", "properties": 5}},
    ])
    tools, problems = build(server)
    assert [t.name for t in tools] == ["notes__search"]
    assert len(problems) == 2 and "cannot be offered" in problems[0] and "not a JSON Schema" in problems[1]
