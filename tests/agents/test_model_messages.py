"""What the model receives is always a valid chat-completions conversation, whatever the thread
holds: each tool result right after the call that asked for it, unanswered calls left out, a
result without its call dropped (the fake model answers 400 to anything else, as OpenAI does)."""

import json

import pytest

from agents import services
from agents.messages import add_message
from agents.models import Message, Run, Thread
from agents.runtime import runner

pytestmark = [pytest.mark.django_db(transaction=True)]


def call(call_id, name="check_balance"):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_results_follow_their_call_and_orphans_are_dropped(demo, fake_llm, monkeypatch):
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    add_message(thread, Message.Role.USER, "check both")
    add_message(thread, Message.Role.ASSISTANT, "", tool_calls=[call("c1"), call("c2"), call("c3")])
    add_message(thread, Message.Role.TOOL, "one", tool_call_id="c1")
    add_message(thread, Message.Role.USER, "and hurry")  # a person's text stored before the second result
    add_message(thread, Message.Role.TOOL, "two", tool_call_id="c2")
    add_message(thread, Message.Role.TOOL, "from nowhere", tool_call_id="c-orphan")  # e.g. a client's resend
    # c3 is never answered
    run = services.start_run(thread, demo["alice"], "thanks")

    messages = runner.Runner(Run.objects.select_related("thread").get(pk=run.pk)).model_messages()
    shape = [(m["role"], m.get("tool_call_id") or [c["id"] for c in m.get("tool_calls", [])] or m["content"])
             for m in messages[1:]]
    assert shape == [("user", "check both"), ("assistant", ["c1", "c2"]), ("tool", "c1"), ("tool", "c2"),
                     ("user", "and hurry"), ("user", "thanks")]

    fake_llm.push("Both are fine.")
    assert runner.run_agent(run.pk)
    assert Run.objects.get(pk=run.pk).status == "succeeded"
    assert not fake_llm.rejected  # the strict fake took the conversation


def test_what_is_wrong_with_the_models_arguments_is_told_to_it_in_english(demo, fake_llm, monkeypatch):
    """Argument errors are sentences in the reader's language (approvals/argument_errors.py); the
    worker speaks the chat owner's (here French), but the model reads them in English."""
    from django.utils import translation

    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    run = services.start_run(thread, demo["alice"], "move money")
    bad = json.dumps({"from_account": "12345678", "to_account": "87654321", "amount": -5, "currency": "EUR"})
    fake_llm.push({"tool_calls": [{"id": "c_bad", "name": "transfer_money", "arguments": bad}]}, "Sorry.")
    with translation.override("fr"):  # as agents.tasks runs a French owner's run
        assert runner.run_agent(run.pk)
    told = Message.objects.get(thread=thread, role=Message.Role.TOOL, tool_call_id="c_bad").content
    assert "amount: Must be greater than 0." in told and "nothing was executed" in told
