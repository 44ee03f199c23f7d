"""The official AG-UI client (@ag-ui/client HttpAgent) sending what a RunAgentInput may carry besides
text (tests/agui_client/scenarios/inputs.mjs), against a live stack whose model takes images
(AGUI_MODEL_VISION=1): the fake model's replies below say what it was given, so the client can
check that context[], a tool's error and images reached it, and that a client's own system
message and the model's earlier reasoning did not; the reasoning it streams arrives as REASONING_*
events the client's verification accepts.
"""

from __future__ import annotations

import json

import pytest

from agents.models import Message, Run, ToolCall
from tests.integration.agui_stack import check_streams, drive_ok

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
SCENARIOS = ["inputs_context", "inputs_tool_error", "inputs_image", "inputs_reasoning", "inputs_ignored"]
REASONING = "Savings accounts pay interest; I should weigh interest against access to the money."


@pytest.fixture
def live_stack_env():
    return {"AGUI_MODEL_VISION": "1"}


def _text(content):
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if p.get("type") == "text")
    return content or ""


def inputs_model(body):
    """Replies that say what the model received (None: not one of these scenarios' prompts)."""
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "tool" and last["content"].startswith("Error: the tool failed"):
        return {"text": "The confetti did not work. " + last["content"]}
    users = [m for m in messages if m["role"] == "user"]
    prompt = _text(users[-1]["content"]) if users else ""
    if prompt.startswith("[context]"):
        given = [m["content"] for m in messages if m["role"] == "system" and m["content"].startswith("Context ")]
        return {"text": " | ".join(given) or "No context reached me."}
    if prompt.startswith("[image]"):
        urls = [p["image_url"]["url"] for m in users if isinstance(m["content"], list)
                for p in m["content"] if p["type"] == "image_url"]
        shown = [u[:27] if u.startswith("data:") else u for u in urls]
        return {"text": f"I see {len(urls)} image(s): " + ", ".join(shown)}
    if prompt.startswith("[reasoning]"):
        leaked = "weigh interest" in json.dumps(messages)
        return {"reasoning": REASONING, "text": "The reasoning came back to me." if leaked else "Here is my answer."}
    if prompt.startswith("[instructions]"):
        told = "pirate" in json.dumps(messages) or "refund" in json.dumps(messages)
        return {"text": "I was given the client's words." if told else "Only the server's instructions reached me."}
    return None


def test_what_a_client_sends_besides_text_is_used(live_stack, node):
    live_stack["model"].handlers.append(inputs_model)
    summary = drive_ok(live_stack, node, SCENARIOS)
    assert check_streams(live_stack, summary) == 12  # every stream of the five scenarios passes ag-ui-validate

    scenario = summary["scenarios"]
    assert Run.objects.filter(thread_id=scenario["inputs_context"]["threadId"]).get().context[0] == {
        "description": "The user's timezone", "value": "Europe/Oslo"}
    call = ToolCall.objects.get(pk=scenario["inputs_tool_error"]["toolCallId"])
    assert call.status == ToolCall.Status.FAILED and "WebGL" in call.result
    image = Message.objects.get(pk=scenario["inputs_image"]["messageId"])
    assert [p["type"] for p in image.parts] == ["text", "image", "image"]
    assert not Message.objects.filter(content__contains="weigh interest").exists()
    assert not Message.objects.filter(content__contains="pirate").exists()
