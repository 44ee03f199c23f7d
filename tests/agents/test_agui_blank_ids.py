"""A name the RunAgentInput gives (a message's id, a tool call's, an interrupt's, the thread's) that is
empty or only spaces is refused with the input's other fields: a message with id "" was stored under
an id of ours (sentences naming it read "Message  holds ..."), a threadId of spaces made a chat."""

import json
import uuid

import pytest

from agents.models import Message, Thread

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def no_enqueue(monkeypatch):
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)


def body(**over):
    made = {"threadId": f"t-{uuid.uuid4()}", "runId": f"r-{uuid.uuid4()}", "state": {}, "tools": [],
            "context": [], "forwardedProps": {}, "messages": [{"id": "m-1", "role": "user", "content": "hi"}]}
    return {**made, **over}


CALL = {"id": "c-1", "type": "function", "function": {"name": "get_balance", "arguments": "{}"}}


@pytest.mark.parametrize("over,place", [
    ({"messages": [{"id": "", "role": "user", "content": "hi"}]}, "messages.0.id"),
    ({"messages": [{"id": "   ", "role": "user", "content": "hi"}]}, "messages.0.id"),
    ({"threadId": "  "}, "threadId"),
    ({"runId": "\t"}, "runId"),
    ({"messages": [{"id": "m-1", "role": "user", "content": "hi"},
                   {"id": "a-1", "role": "assistant", "toolCalls": [{**CALL, "id": " "}]}]}, "messages.1.toolCalls.0.id"),
    ({"messages": [{"id": "m-1", "role": "user", "content": "hi"},
                   {"id": "a-1", "role": "assistant", "toolCalls": [{**CALL, "function": {"name": "", "arguments": "{}"}}]}]},
     "messages.1.toolCalls.0.function.name"),
    ({"messages": [{"id": "t-1", "role": "tool", "toolCallId": "", "content": "ok"}]}, "messages.0.toolCallId"),
    ({"tools": [{"name": " ", "description": "x", "parameters": {"type": "object"}}]}, "tools.0.name"),
    ({"resume": [{"interruptId": "", "status": "cancelled"}]}, "resume.0.interruptId"),
])
def test_an_empty_or_blank_name_is_refused_naming_its_place(client, token_headers, over, place):
    sent = body(**over)
    resp = client.post("/agui/banking/", json.dumps(sent), content_type="application/json", **token_headers("alice"))
    assert resp.status_code == 422, resp.content
    answer = resp.json()
    assert answer["code"] == "invalid_input" and answer["errors"][place] == ["must not be empty or only spaces"]
    assert not Thread.objects.exists() and not Message.objects.exists()


def test_names_with_text_still_start_a_run(client, token_headers):
    resp = client.post("/agui/banking/", json.dumps(body()), content_type="application/json",
                       HTTP_ACCEPT="text/event-stream", **token_headers("alice"))
    assert resp.status_code == 200
    assert Message.objects.filter(pk="m-1").exists()
