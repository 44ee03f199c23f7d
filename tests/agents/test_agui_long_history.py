"""A long thread stays usable by a stock AG-UI client. The client sends back the MESSAGES_SNAPSHOT it
was given with its next turn; once a thread's history had grown past the body's limit (~45 large tool
results under the default 2 MiB) every further turn was refused 413, for good. A snapshot now carries
the thread's latest turns within AGUI_SNAPSHOT_MAX_BYTES, which the server reads back as a history."""

import json
import uuid

import pytest

from agents import services
from agents.messages import add_message
from agents.models import Message, Run
from agents.presenters import snapshot_window
from tests.agents.test_agui import post, run_input, sse_events, token_headers, user_msg  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
BIG = "x" * 6000  # a tool's long answer (an MCP server's may be 50,000 characters)


def long_thread(owner, turns=30):
    thread = services.create_thread(owner, "banking")
    run = Run.objects.create(thread=thread, status=Run.Status.SUCCEEDED)
    for n in range(turns):
        add_message(thread, "user", f"What is my balance, take {n}?", run=run)
        call = f"call_{n}"
        add_message(thread, "assistant", "", run=run, tool_calls=[
            {"id": call, "type": "function", "function": {"name": "check_balance", "arguments": "{}"}}])
        add_message(thread, "tool", f"{n}: {BIG}", run=run, tool_call_id=call)
        add_message(thread, "assistant", f"Your balance, take {n}.", run=run)
    return thread


def test_the_next_turn_of_a_client_that_sends_back_its_snapshot_is_taken(
        celery_worker_live, fake_llm, client, token_headers, settings, demo):  # noqa: F811
    settings.AGUI_MAX_BODY_BYTES = settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 120_000
    settings.AGUI_SNAPSHOT_MAX_BYTES = 60_000
    alice = token_headers("alice")
    thread = long_thread(demo["alice"])  # ~190 KB of history: over the body's limit
    first = sse_events(post(client, "banking", run_input(thread.pk, [user_msg("Thanks, one more question.")]), **alice))
    snapshots = [e for e in first if e["type"] == "MESSAGES_SNAPSHOT"]
    assert snapshots and first[-1]["type"] == "RUN_FINISHED", [e["type"] for e in first]
    given = snapshots[-1]["messages"]
    assert len(json.dumps(given)) <= 60_000 + 2_000
    assert given[0]["role"] == "user" and given[-1]["content"] == "Thanks, one more question."
    turns = Message.objects.filter(thread=thread, role="user").count()

    # what @ag-ui/client's HttpAgent does next: its messages (the snapshot, then the reply) and the new turn
    replies = [{"id": f"msg-{uuid.uuid4()}", "role": "assistant", "content": "Anything else?"}]
    body = run_input(thread.pk, [*given, *replies, user_msg("And my savings?")])
    assert len(json.dumps(body)) < 120_000
    second = sse_events(post(client, "banking", body, **alice))
    assert second[-1]["type"] == "RUN_FINISHED", [e["type"] for e in second]
    assert Message.objects.filter(thread=thread, role="user").count() == turns + 1  # the new turn alone


@pytest.mark.parametrize(("budget", "first_kept"), [(10**9, 0), (0, 8), (2 * 6300, 8)])
def test_the_window_starts_at_a_persons_turn_and_keeps_the_latest_whatever_it_weighs(demo, budget, first_kept):
    thread = long_thread(demo["alice"], turns=3)
    messages = list(thread.messages.all())
    kept = snapshot_window(messages, budget=budget)
    assert kept == messages[first_kept:] and kept[0].role == "user"
