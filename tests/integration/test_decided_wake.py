"""A decision's wake-up is a worker's task (agents.tasks.continue_decided): the decider's request
only hands it over, and the worker that makes the continuation runs it in that same task."""

import logging

import kombu.exceptions
import pytest
from celery.signals import task_prerun

from agents import dispatch, services, tasks, transitions
from agents.models import Run, ToolCall
from agents.runtime import runner
from tests.conftest import stream_events, wait_for_event
from tests.helpers import paused_transfer
from tests.integration.test_integration import continuation_finished, start_transfer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.slow
def test_a_decision_is_continued_and_run_by_one_worker_task(celery_worker_live, fake_llm, api):
    thread_id, run_id, interrupt = start_transfer(api)
    tasks = []

    def seen(sender=None, **kwargs):
        tasks.append(sender.name)

    task_prerun.connect(seen, weak=False)
    try:
        resp = api("finn").post(f"/api/approvals/{interrupt['id']}/decide/", {"decision": "approve"}, format="json")
        assert resp.status_code == 200, resp.content
        event, _ = wait_for_event(thread_id, continuation_finished(run_id))
    finally:
        task_prerun.disconnect(seen)
    assert event["type"] == "RUN_FINISHED", event
    assert tasks == [dispatch.CONTINUE_DECIDED]  # no run_agent: no second trip through the broker
    continuation = Run.objects.get(parent_run_id=run_id)
    assert continuation.status == Run.Status.SUCCEEDED and continuation.stream_id
    assert ToolCall.objects.get(pk=interrupt["toolCallId"]).status == ToolCall.Status.SUCCEEDED
    ours = [e for e in stream_events(thread_id) if e["type"] in ("RUN_STARTED", "TOOL_CALL_RESULT")
            or e.get("name") == "approval_response"]
    # the decision's notice, then the continuation's start and the transfer's result
    assert [e.get("name", e["type"]) for e in ours][-3:] == ["approval_response", "RUN_STARTED", "TOOL_CALL_RESULT"]
    assert "Transferred 500.00 USD" in ours[-1]["content"]


def test_a_wake_up_delivered_twice_continues_the_run_once(demo, monkeypatch):
    """The task is acked late: a worker lost after the continuation was made gets it again."""
    run, req = paused_transfer(demo["alice"], "call-twice")
    monkeypatch.setattr("agents.tasks.continue_decided.delay", lambda request_id: None)  # delivered below
    services_decide(demo, req)
    assert not Run.objects.filter(parent_run=run).exists()
    first = [r.pk for r in services.continue_decided(req.pk)]
    assert services.continue_decided(req.pk) == []
    assert [r.pk for r in Run.objects.filter(parent_run=run)] == first and len(first) == 1
    assert services.continue_decided("no-such-request") == []


def test_the_worker_runs_the_continuation_it_made_without_reading_it_back(demo, fake_llm, monkeypatch):
    """The task that makes the continuation runs it as made (its thread, owner and profile came with
    the paused call): claimed, then not read again."""
    run, req = paused_transfer(demo["alice"], "call-made")
    monkeypatch.setattr("agents.tasks.continue_decided.delay", lambda request_id: None)  # delivered below
    services_decide(demo, req)

    class NotReadBack:
        def one(self, run_id):
            raise AssertionError(f"run {run_id} was read back after its claim")

    monkeypatch.setattr(runner, "_CLAIMED", NotReadBack())
    tasks.continue_decided(req.pk)
    continuation = Run.objects.get(parent_run=run)
    assert continuation.status == Run.Status.SUCCEEDED and continuation.started_at and continuation.stream_id
    assert ToolCall.objects.get(pk="call-made").status not in ToolCall.WAITING  # settled by the continuation


def test_a_continuation_stopped_before_its_claim_still_has_where_its_events_begin(demo, monkeypatch):
    """The stream id the continuation was announced with is stored by its claim, or on its own when
    there is nothing to claim (stopped in between): snapshots and recovery read it."""
    run, req = paused_transfer(demo["alice"], "call-stopped")
    monkeypatch.setattr("agents.tasks.continue_decided.delay", lambda request_id: None)
    services_decide(demo, req)
    [made] = services.continue_decided(req.pk)
    assert made.stream_id and not Run.objects.get(pk=made.pk).stream_id
    assert transitions.move_run(made.pk, Run.Status.CANCELLED, leaving=[Run.Status.QUEUED])
    assert runner.run_agent(made.pk, made=made) is False
    assert Run.objects.get(pk=made.pk).stream_id == made.stream_id


def test_a_decision_whose_wake_up_the_broker_refused_stands_and_the_beat_continues_it(demo, api, monkeypatch,
                                                                                       caplog):
    run, req = paused_transfer(demo["alice"], "call-refused")

    def refused(request_id):
        raise kombu.exceptions.OperationalError("broker down")

    monkeypatch.setattr("agents.tasks.continue_decided.delay", refused)
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    with caplog.at_level(logging.ERROR, logger="agents.receivers"):
        resp = api("finn").post(f"/api/approvals/{req.pk}/decide/", {"decision": "approve"}, format="json")
    assert resp.status_code == 200 and resp.json()["status"] == "approved"  # the decision is not undone
    assert "the beat continues it" in caplog.text
    assert not Run.objects.filter(parent_run=run).exists()
    assert services.resume_stalled() == [run.pk]
    assert Run.objects.get(parent_run=run).status == Run.Status.QUEUED
    assert ToolCall.objects.get(pk="call-refused").status == ToolCall.Status.APPROVED


def test_an_agui_resume_continues_its_run_on_its_own_thread(demo, monkeypatch):
    """The AG-UI endpoint streams the continuation it starts under the client's run id: what its
    answers wake is made in its request, inside dispatch.announced(), not handed to a worker."""
    run, req = paused_transfer(demo["alice"], "call-resume")
    handed = []
    monkeypatch.setattr("agents.tasks.continue_decided.delay", handed.append)
    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    with dispatch.announced(defer=True) as heads:
        services_decide(demo, req)
    continuation = Run.objects.get(parent_run=run)
    assert handed == [] and [run_id for run_id, _ in heads.deferred] == [continuation.pk]


def services_decide(demo, req):
    from approvals import services as approvals

    approvals.decide(req.pk, demo["finn"], "approve")


def test_an_outside_agents_decision_sends_no_wake_up(demo, api, monkeypatch):
    """No run of ours waits on a request an outside agent made (POST /api/approvals/)."""
    handed = []
    monkeypatch.setattr("agents.tasks.continue_decided.delay", handed.append)
    made = api("alice").post("/api/approvals/", {
        "tool_name": "crm.delete_contact", "arguments": {"email": "a@example.com"},
        "schema": {"type": "object", "properties": {"email": {"type": "string"}}},
        "description": "Delete the contact a@example.com"}, format="json")
    assert made.status_code == 201, made.content
    resp = api("rita").post(f"/api/approvals/{made.json()['id']}/decide/", {"decision": "approve"}, format="json")
    assert resp.status_code == 200 and resp.json()["status"] == "approved"
    assert handed == []
