"""Stop pressed while the model streams a tool call's arguments: the call is ENDed (RUN_FINISHED
cancelled needs it closed) but never stored, asked for nor run, and the person is told so on it."""

import pytest
from ag_ui.core import EventType

from agents import services
from agents.models import Run, Thread, ToolCall
from agents.runtime import runner
from approvals.models import ApprovalRequest
from tests.conftest import stream_events

ARGUMENTS = '{"from_account": "1234567890", "to_account": "0987654321", "amount": 5000, "currency": "USD"}'


@pytest.mark.django_db(transaction=True)
def test_a_stop_mid_arguments_runs_nothing_and_says_so_on_the_call(demo, fake_llm, monkeypatch):
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    monkeypatch.setattr(runner, "CANCEL_CHECK_SECONDS", 0)  # every streamed piece looks for the Stop
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    fake_llm.push({"text": "Let me do that.", "tool_calls": [{"id": "c-cut", "name": "transfer_money",
                                                              "arguments": ARGUMENTS}]})
    run = services.start_run(thread, demo["alice"], "send 5000 USD to bob")
    real_emit = runner.Runner.emit

    def stop_at_first_arguments(self, event):  # the user presses Stop as the first piece shows
        real_emit(self, event)
        if event.type == EventType.TOOL_CALL_ARGS and not services.cancel_requested(run.pk):
            assert services.cancel_run(Run.objects.get(pk=run.pk), demo["alice"])

    monkeypatch.setattr(runner.Runner, "emit", stop_at_first_arguments)
    runner.run_agent(run.pk)

    assert Run.objects.get(pk=run.pk).status == "cancelled"
    # nothing can come of the cut arguments: no call stored, no request for anyone, nothing run
    assert not ToolCall.objects.filter(thread=thread).exists()
    assert not ApprovalRequest.objects.filter(thread_ref=thread.pk).exists()
    events = stream_events(thread.pk)
    args = "".join(e["delta"] for e in events if e["type"] == "TOOL_CALL_ARGS")
    assert args and args != ARGUMENTS  # cut indeed
    types = [e["type"] for e in events]
    end = types.index("TOOL_CALL_END")
    # the call's card says it was not run, before the run's end (which leaves the card as it is)
    outcome = events[end + 1]
    assert outcome["type"] == "CUSTOM" and outcome["name"] == "tool_outcome", events[end:]
    assert outcome["value"] == {"toolCallId": "c-cut", "status": "stopped", "message":
                                "Not run: you stopped the answer while the assistant was still writing this."}
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["outcome"] == {"type": "cancelled"}
