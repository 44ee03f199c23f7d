"""The official AG-UI client (@ag-ui/client HttpAgent) against a live stack whose model misbehaves
(tests/agui_client/scenarios/run_ends.mjs): it loops on tools past AGUI_MAX_TURNS, is cut at its
length limit in the middle of a frontend tool's call, answers nothing, and numbers its calls call_0
in every answer. Each run ends in a way the client's verification accepts, its ids agree across
events, messages and snapshots, and the thread goes on."""

from __future__ import annotations

import json

import pytest

from agents.models import Run, ToolCall
from tests.integration.agui_stack import check_streams, drive_ok

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
SCENARIOS = ["ends_turn_limit", "ends_answer_cut", "ends_model_error", "ends_invalid_tools", "frontend_refused",
             "ids_reused", "ids_reused_interrupt"]


@pytest.fixture
def live_stack_env():
    return {"AGUI_MAX_TURNS": "3"}


def _text(content):
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if p.get("type") == "text")
    return content or ""


def balance_call(call_id="call_0"):
    return {"tool_calls": [{"id": call_id, "name": "check_balance", "arguments": json.dumps({"account": "1234567890"})}]}


def misbehaving_model(body):
    """The replies of these scenarios' prompts (None: not one of them)."""
    messages = body["messages"]
    last = messages[-1]
    users = [m for m in messages if m["role"] == "user"]
    prompt = _text(users[-1]["content"]) if users else ""
    if prompt.startswith("[plain]"):
        return {"text": "Still here."}
    if prompt.startswith("[loop]"):
        return balance_call(call_id=None)  # every turn another call: never an answer
    if prompt.startswith("[cut]"):
        return {"text": "Here is the first part of a long answer", "finish": "length",
                "tool_calls": [{"name": "show_confetti", "arguments": '{"colour": "bl'}]}
    if prompt.startswith("[array]"):  # a frontend tool's arguments that are no object: the model is told
        if last["role"] == "tool":
            return {"text": "Told: " + last["content"]}
        return {"tool_calls": [{"name": "show_confetti", "arguments": "[1, 2]"}]}
    if prompt.startswith("[empty]"):
        return {"text": ""}
    if prompt.startswith("[call0]"):
        if last["role"] == "tool":
            return {"text": "Done: " + last["content"] if "balance" not in prompt else "The balance is in."}
        if "confetti" in prompt:
            return {"tool_calls": [{"id": "call_0", "name": "show_confetti", "arguments": json.dumps({"colour": "blue"})}]}
        if "cancel" in prompt:  # alice approves it herself: an interrupt, then a resume
            return {"tool_calls": [{"id": "call_0", "name": "cancel_subscription",
                                    "arguments": json.dumps({"subscription_id": "sub_789"})}]}
        return balance_call()
    return None


def test_runs_a_misbehaving_model_ends_reach_the_client_whole(live_stack, node):
    live_stack["model"].handlers.append(misbehaving_model)
    summary = drive_ok(live_stack, node, SCENARIOS)
    assert check_streams(live_stack, summary) >= 10  # every stream passes ag-ui-validate

    scenario = summary["scenarios"]
    runs = Run.objects.filter(thread_id=scenario["ends_turn_limit"]["threadId"]).order_by("created_at")
    assert [r.status for r in runs] == ["failed", "succeeded"]
    ids = scenario["ids_reused"]["ids"]
    assert list(ToolCall.objects.filter(thread_id=scenario["ids_reused"]["threadId"]).order_by("created_at")
                .values_list("pk", flat=True)) == ids
    call = ToolCall.objects.get(pk=scenario["ids_reused_interrupt"]["toolCallId"])
    assert call.pk != "call_0" and call.name == "cancel_subscription" and call.status == ToolCall.Status.SUCCEEDED
