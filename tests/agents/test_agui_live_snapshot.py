"""A client that comes back while an answer still streams (a reload, a second tab, a stream cut):
its plain POST is relayed from the live run's RUN_STARTED, after a MESSAGES_SNAPSHOT of the
conversation so far. That snapshot left out every message of the live run, the person's question
too: a snapshot replaces the client's list and a user message never comes as events, so the
question vanished (on a first turn @ag-ui/client's list was emptied) until the next snapshot."""

import pytest

from agents import presenters, services
from agents.models import Message, Run
from tests.agents.test_agui_answers import body, post
from tests.agents.test_agui_inputs import first_events, fresh, no_enqueue  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True)]


def held(thread_id):
    """What a client holds of the thread: its messages as our events gave them."""
    return [presenters.agui_message(m).model_dump(mode="json", by_alias=True, exclude_none=True)
            for m in Message.objects.filter(thread_id=thread_id)]


def snapshot(events):
    return next(e for e in events if e["type"] == "MESSAGES_SNAPSHOT")["messages"]


def test_a_client_that_rejoins_a_first_answer_keeps_the_question(client, bearer, demo):
    thread = services.create_thread(demo["alice"], "banking", thread_id=fresh("t"))
    live = services.start_run(thread, demo["alice"], "Tell me a long story")  # queued: the answer is on its way
    asked = held(thread.pk)
    events = first_events(post(client, bearer, body(thread.pk, asked)))  # the same history, nothing new
    assert events[0]["type"] == "RUN_STARTED" and events[0]["runId"] == live.pk, events
    assert [(m["role"], m["content"]) for m in snapshot(events)] == [("user", "Tell me a long story")]
    assert Run.objects.filter(thread=thread).count() == 1  # not a new turn


def later_turn(demo):
    """A thread whose first turn was answered and whose second is being answered (part of it streamed)."""
    thread = services.create_thread(demo["alice"], "banking", thread_id=fresh("t"))
    first = services.start_run(thread, demo["alice"], "What is my balance?")
    services.add_message(thread, "assistant", "Your balance is 5432.10 USD.", run=first)
    Run.objects.filter(pk=first.pk).update(status=Run.Status.SUCCEEDED)
    live = services.start_run(thread, demo["alice"], "Tell me a long story")
    services.add_message(thread, "assistant", "Once upon", run=live)  # streamed so far: it comes as events
    return thread, first, live


BEFORE_THE_ANSWER = [("user", "What is my balance?"), ("assistant", "Your balance is 5432.10 USD."),
                     ("user", "Tell me a long story")]


def test_a_client_that_rejoins_a_later_answer_keeps_every_turn_and_none_of_the_answer(client, bearer, demo):
    thread, _first, live = later_turn(demo)
    events = first_events(post(client, bearer, body(thread.pk, held(thread.pk)[:3])))  # what it held when cut
    assert events[0]["runId"] == live.pk, events
    assert [(m["role"], m["content"]) for m in snapshot(events)] == BEFORE_THE_ANSWER


def test_a_second_tab_gets_the_ended_run_replayed_with_the_live_runs_question(client, bearer, demo):
    thread, first, _live = later_turn(demo)
    events = first_events(post(client, bearer, body(thread.pk)))  # a tab that holds nothing yet
    assert events[0]["runId"] == first.pk, events
    assert [(m["role"], m["content"]) for m in snapshot(events)] == BEFORE_THE_ANSWER
