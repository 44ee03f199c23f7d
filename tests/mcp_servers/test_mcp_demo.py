"""The demo as a person meets it: the notes agent on the offline demo model, its tools from the demo
MCP server (started as a subprocess), run in-process through the real runner."""

import json

import pytest

from agents.mcp_servers import services
from agents.models import Message, Thread, ToolCall
from approvals.models import ApprovalRequest
from tests.helpers import run_prompt
from tests.mcp_servers.conftest import notes_values

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def thread(demo, notes_file, settings):
    settings.OPENAI_API_KEY = ""  # the offline demo model
    assert services.save_server("notes", notes_values(notes_file)).healthy
    return Thread.objects.create(owner=demo["alice"], agent="notes")


def test_the_offline_model_searches_the_notes(thread, demo):
    run = run_prompt(thread, demo["alice"], "Search the notes for lease")
    assert run.status == "succeeded"
    tool = Message.objects.get(thread=thread, role="tool")
    assert json.loads(tool.content)[0]["text"] == "Renew the office lease before March"
    answer = Message.objects.filter(thread=thread, role="assistant").last().content
    assert answer.startswith("Done.") and "office lease" in answer


def test_the_offline_model_asks_a_reviewer_before_deleting(thread, demo):
    run = run_prompt(thread, demo["alice"], "Delete note 3")
    assert run.status == "interrupted"
    call = ToolCall.objects.get(thread=thread)
    assert call.name == "notes__delete" and call.arguments == {"note_id": 3} and call.status == "awaiting_approval"
    request = ApprovalRequest.objects.get(tool_call_ref=call.pk)
    assert request.approver_group.name == "reviewers" and request.context["mcp"]["server"] == "notes"


def test_a_call_approved_after_its_server_stopped_listing_the_tool_fails_and_says_so(thread, demo, monkeypatch):
    from approvals import services as approvals
    from approvals.signals import tool_outcome
    from tests.helpers import run_continuation
    from tests.mcp_servers.test_mcp_hostile import hostile_values

    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)  # the continuation runs here
    outcomes = []

    def heard(sender, data, **kwargs):
        outcomes.append((data["tool_call"], data["outcome"]))

    tool_outcome.connect(heard)
    paused = run_prompt(thread, demo["alice"], "Delete note 3")
    call = ToolCall.objects.get(thread=thread)
    # while a reviewer looks at it, the server's list changes: no delete any more
    services.save_server("notes", hostile_values([{"name": "search", "inputSchema": {"type": "object"},
                                                   "annotations": {"readOnlyHint": True}}]))
    try:
        approvals.decide(ApprovalRequest.objects.get(tool_call_ref=call.pk).pk, demo["rita"], "approve")
        assert run_continuation(paused).status == "succeeded"
    finally:
        tool_outcome.disconnect(heard)
    call.refresh_from_db()
    assert call.status == "failed" and "no longer available" in call.result and "not executed" in call.result
    told = Message.objects.get(thread=thread, role="tool", tool_call_id=call.pk).content
    assert told == call.result and "cancelled" not in told
    assert outcomes == [(call.pk, "failed")]  # webhooks' tool.outcome: it did not run
