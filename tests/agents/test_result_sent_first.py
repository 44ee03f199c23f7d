"""A tool's result is in the thread's stream before the run does anything else (Runner.result
flushes the event writer): the person waiting on it does not wait for the writer's thread to get
the interpreter, nor for the writer's batching window."""

import json

import pytest

from agents import services
from agents.runtime import events, runner
from agents.runtime.statesync import StateSync
from tests.conftest import stream_events

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_the_result_is_in_the_stream_when_the_run_goes_on(demo, fake_llm, monkeypatch):
    # a batching window no run would otherwise end before its next step: only a flush sends the result
    monkeypatch.setattr(events, "FLUSH_SECONDS", 30)
    seen = []
    on_result = StateSync.on_result

    def next_step(self, tc):  # what the run does right after a result
        seen.append([e["type"] for e in stream_events(tc.thread_id)])
        return on_result(self, tc)

    monkeypatch.setattr(StateSync, "on_result", next_step)
    fake_llm.push({"tool_calls": [{"id": "call_bal", "name": "check_balance", "arguments": json.dumps({})}]})
    fake_llm.push({"text": "Which account?"})
    thread = services.create_thread(demo["alice"], "banking")
    run = services.start_run(thread, demo["alice"], "What is my balance?")
    assert runner.run_agent(run.pk)
    assert len(seen) == 1 and "TOOL_CALL_RESULT" in seen[0]
    assert [e["type"] for e in stream_events(thread.pk)][-1] == "RUN_FINISHED"
