"""What a decision does after its commit, in the order that keeps the paused run's wait short:
the continuation is made and handed to a worker first; the inbox's notices and the webhooks'
reads follow (README "Performance")."""

import json

import kombu.exceptions
import pytest

from agents import dispatch, services
from agents.models import Run
from approvals import notify
from tests.conftest import stream_events
from tests.helpers import paused_transfer


@pytest.mark.django_db(transaction=True)
def test_the_paused_run_is_continued_before_the_inbox_hears_of_the_decision(demo, api, monkeypatch):
    run, req = paused_transfer(demo["alice"], "call-w")
    handed, heard = [], []
    monkeypatch.setattr(dispatch, "enqueue_run", lambda run_id: handed.append(run_id))
    real_notice = notify.inbox_notice

    def notice(kind, request):
        heard.append((kind, list(handed)))
        return real_notice(kind, request)

    monkeypatch.setattr(notify, "inbox_notice", notice)
    resp = api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve"}, format="json")
    assert resp.status_code == 200
    continuation = Run.objects.get(parent_run=run)
    assert heard == [("decided", [continuation.pk])]  # the worker had the run when the inbox was told
    assert continuation.stream_id  # where its events begin, written after the hand-over


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_task_the_broker_refused_keeps_its_stream_id(demo, monkeypatch):
    """The beat then sends the task again (execution.requeue_lost_runs) instead of announcing the run
    a second time."""
    thread = services.create_thread(demo["alice"], "banking")
    run = Run.objects.create(thread=thread, status=Run.Status.QUEUED)

    def refused(run_id):
        raise kombu.exceptions.OperationalError("broker down")

    monkeypatch.setattr(dispatch, "enqueue_run", refused)
    dispatch.announce_after_commit(run.pk)
    assert Run.objects.get(pk=run.pk).stream_id


@pytest.mark.django_db(transaction=True)
def test_a_decision_writes_its_chat_notice_with_the_continuations_start(demo, api, monkeypatch):
    """One round trip to Redis before the worker is woken, not two: the chat's approval_response,
    then the continuation's RUN_STARTED, in that order."""
    from agents.runtime import events

    run, req = paused_transfer(demo["alice"], "call-n")
    writes = []
    real_append = events.append_encoded

    def append(thread_id, *payloads):
        writes.append([json.loads(p)["type"] + (":" + json.loads(p).get("name", "")).rstrip(":") for p in payloads])
        return real_append(thread_id, *payloads)

    monkeypatch.setattr(dispatch, "enqueue_run", lambda run_id: None)
    monkeypatch.setattr(events, "append_encoded", append)
    resp = api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve"}, format="json")
    assert resp.status_code == 200
    assert Run.objects.filter(parent_run=run).exists()
    assert writes == [["CUSTOM:approval_response", "RUN_STARTED"]]
    stream = [e["type"] for e in stream_events(run.thread_id)]
    assert stream[-2:] == ["CUSTOM", "RUN_STARTED"]
