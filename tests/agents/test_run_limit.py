"""AGUI_MAX_RUNS_PER_HOUR: the runs one account starts in an hour (services.within_hourly_runs),
refused on every surface that starts one, storing nothing; continuations are not counted."""

import json
import re
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from agents import services
from agents.agui import endpoint
from agents.models import Message, Run, Thread
from tests.agents.test_agui import refusal
from tests.agents.test_request_queries import agui_request
from tests.helpers import paused_transfer

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def queued(monkeypatch):
    """No worker: what a POST hands over is recorded, and run here when a test asks."""
    handed = []
    monkeypatch.setattr("agents.tasks.run_agent.delay", handed.append)
    return handed


def fresh(name):
    return f"{name}-{uuid.uuid4()}"  # streams and ids live in a Redis other test runs share


def started(user, count=1):
    """`count` runs `user` started (ended since), in a thread of their own: the thread."""
    thread = services.create_thread(user, "banking")
    for _ in range(count):
        run = services.start_run(thread, user, "hello")
        Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED)
    return thread


def agui_post(client, headers, thread_id, text):
    body = {"threadId": thread_id, "runId": fresh("run"), "state": {}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": [{"id": fresh("msg"), "role": "user", "content": text}]}
    return client.post("/agui/banking/", json.dumps(body), content_type="application/json",
                       HTTP_ACCEPT="text/event-stream", **headers)


def test_an_agui_post_past_the_limit_is_refused_in_stream_and_stores_nothing(
        demo, client, token_headers, fake_llm, settings, queued):
    settings.AGUI_MAX_RUNS_PER_HOUR = 2
    alice = token_headers("alice")
    thread = started(demo["alice"], 2)
    runs, messages = Run.objects.count(), Message.objects.count()
    queued.clear()  # those two, never run
    new_thread = fresh("t")
    # the POST's writes alone first: a POST that starts its run streams until the run ends, which
    # no worker here would make happen
    plan = endpoint.prepare(agui_request(demo["alice"], new_thread, "one more, in a new chat"), "banking")
    assert plan.error is not None and plan.error.code == "too_many_runs"
    assert not Thread.objects.filter(pk=new_thread).exists()  # the new thread went with its refused run
    error = refusal(agui_post(client, alice, new_thread, "one more, in a new chat"))
    assert error["code"] == "too_many_runs"
    assert re.fullmatch(r"This account started 2 agent runs in the last hour, the most one account may\. "
                        r"Nothing was stored: try again in 6[01] minutes\.", error["message"]), error["message"]
    error = refusal(agui_post(client, alice, thread.pk, "one more, in the same chat"))
    assert error["code"] == "too_many_runs"
    assert not Thread.objects.filter(pk=new_thread).exists()
    assert (Run.objects.count(), Message.objects.count()) == (runs, messages)
    assert queued == [] and fake_llm.requests == []  # nothing handed to a worker: the model is not asked


def test_the_rest_api_answers_429_with_retry_after_for_a_message_and_a_retry(demo, api, settings):
    settings.AGUI_MAX_RUNS_PER_HOUR = 1
    thread = started(demo["alice"])
    first = thread.runs.get()
    # started half an hour ago: the count falls below the limit when it is an hour old
    Run.objects.filter(pk=first.pk).update(created_at=timezone.now() - timedelta(minutes=30),
                                           status=Run.Status.FAILED)
    alice = api("alice")
    resp = alice.post(f"/api/threads/{thread.pk}/messages/", {"content": "again"}, format="json")
    assert resp.status_code == 429, resp.content
    assert resp.json()["code"] == "too_many_runs"
    assert 1795 <= int(resp["Retry-After"]) <= 1802  # the first run an hour old: when one may start again
    assert resp.json()["message"] == (
        "This account started 1 agent run in the last hour, the most one account may. Nothing was stored: "
        f"try again in {-(-int(resp['Retry-After']) // 60)} minutes.")
    resp = alice.post(f"/api/runs/{first.pk}/retry/", {}, format="json")
    assert resp.status_code == 429 and resp.json()["code"] == "too_many_runs" and int(resp["Retry-After"]) > 0
    assert list(thread.runs.values_list("pk", flat=True)) == [first.pk]
    assert list(thread.messages.values_list("content", flat=True)) == ["hello"]


def test_a_continuation_after_a_decision_is_not_refused_nor_counted(demo, api, settings):
    settings.AGUI_MAX_RUNS_PER_HOUR = 1
    paused, req = paused_transfer(demo["alice"], fresh("call"))  # the one run alice started
    with pytest.raises(services.TooManyRuns):
        services.start_run(started(demo["alice"], 0), demo["alice"], "one too many")
    resp = api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve"}, format="json")
    assert resp.status_code == 200
    continuation = Run.objects.get(parent_run=paused)
    assert continuation.status == Run.Status.QUEUED
    settings.AGUI_MAX_RUNS_PER_HOUR = 2  # the continuation is not one of alice's: one start is left
    assert services.start_run(started(demo["alice"], 0), demo["alice"], "this one fits")
    with pytest.raises(services.TooManyRuns):
        services.start_run(started(demo["alice"], 0), demo["alice"], "this one does not")


def test_the_limit_is_each_accounts_own(demo, api, settings):
    settings.AGUI_MAX_RUNS_PER_HOUR = 1
    started(demo["alice"])
    with pytest.raises(services.TooManyRuns):
        services.start_run(started(demo["alice"], 0), demo["alice"], "alice again")
    thread = api("bob").post("/api/threads/", {"agent": "banking"}, format="json").json()["id"]
    resp = api("bob").post(f"/api/threads/{thread}/messages/", {"content": "bob's first"}, format="json")
    assert resp.status_code == 202 and Run.objects.filter(thread__owner=demo["bob"]).count() == 1


def test_runs_older_than_an_hour_do_not_count(demo, settings):
    settings.AGUI_MAX_RUNS_PER_HOUR = 2
    thread = started(demo["alice"], 2)
    with pytest.raises(services.TooManyRuns):
        services.start_run(thread, demo["alice"], "a third")
    Run.objects.filter(thread=thread).update(created_at=timezone.now() - timedelta(hours=1, seconds=1))
    assert services.start_run(thread, demo["alice"], "a third, an hour on")
    assert thread.messages.filter(content="a third, an hour on").exists()
