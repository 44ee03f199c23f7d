"""A whole number past what a double holds exactly (±(2**53 - 1)) is refused in a call's arguments,
whichever tool's validation reads them: the pages take JSON numbers as doubles, so the reviewer read
(and an edit sent back) a neighbour of the number the call would run with."""

import pytest

from agents.mcp_servers.client import Endpoint
from agents.mcp_servers.tools import MCPTool
from agents.runtime.tools import tool
from approvals.argument_errors import EXACT_LIMIT
from approvals.models import ApprovalRequest
from approvals.registry import ArgumentsInvalid

TRUSTED = 2**53  # 9007199254740992: where a page shows 9007199254740993 too
SCHEMA = {"type": "object", "properties": {"account_id": {"type": "integer"}, "tags": {"type": "array"}},
          "required": ["account_id"]}


@tool(approval_mode="always", approver="group:reviewers")
def pay_account(ctx, account_id: int, memo: str = ""):
    """Pays an account (a test tool, never registered with an agent)."""


def mcp_tool():
    listed = {"name": "pay", "description": "pay an account", "inputSchema": SCHEMA, "annotations": {}}
    return MCPTool("ledger", Endpoint("ledger", "stdio", command="true"), listed, "ledger__pay")


@pytest.mark.parametrize("validate", [pay_account.validate, lambda a: mcp_tool().validate(a)],
                         ids=["own tool", "mcp tool"])
def test_a_tool_refuses_a_whole_number_a_page_cannot_show(validate):
    with pytest.raises(ArgumentsInvalid) as exc:
        validate({"account_id": TRUSTED + 1})
    assert list(exc.value.errors) == ["account_id"] and "send it as text" in exc.value.errors["account_id"][0]
    with pytest.raises(ArgumentsInvalid):
        validate({"account_id": -(TRUSTED + 1)})
    assert validate({"account_id": EXACT_LIMIT})["account_id"] == EXACT_LIMIT
    assert validate({"account_id": -EXACT_LIMIT})["account_id"] == -EXACT_LIMIT


def test_the_place_is_named_inside_lists():
    with pytest.raises(ArgumentsInvalid) as exc:
        mcp_tool().validate({"account_id": 1, "tags": ["a", TRUSTED + 1]})
    assert list(exc.value.errors) == ["tags.1"]


@pytest.mark.django_db
def test_an_outside_agent_is_refused_one_and_nothing_is_asked(api):
    resp = api("alice").post("/api/approvals/", {"tool_name": "ledger.pay", "schema": SCHEMA,
                                                  "arguments": {"account_id": TRUSTED + 1}}, format="json")
    assert resp.status_code == 400, resp.content
    assert "send it as text" in resp.content.decode() and "account_id" in resp.content.decode()
    assert not ApprovalRequest.objects.exists()
    ok = api("alice").post("/api/approvals/", {"tool_name": "ledger.pay", "schema": SCHEMA,
                                                "arguments": {"account_id": EXACT_LIMIT}}, format="json")
    assert ok.status_code == 201, ok.content
