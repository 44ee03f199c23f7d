"""Stop (POST /api/runs/<id>/cancel/) on a paused run while a reviewer decides one of its requests."""

import threading

import pytest
from django.db import connection

from agents.models import ToolCall
from approvals import services as approval_services
from approvals.models import ApprovalRequest
from tests.conftest import stream_events
from tests.helpers import paused_transfer, run_continuation, transfer_request


@pytest.mark.django_db(transaction=True)
def test_stop_while_a_reviewer_decides_one_request_stops_the_others_and_answers(demo, api, monkeypatch):
    """Before: Stop read the run's pending requests, then cancelled each under its lock; one decided
    in between raised NotPending out of the Stop: a 500, and its other requests stayed pending."""
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: on SQLite the Stop's IMMEDIATE transaction keeps the decision out")
    run, first = paused_transfer(demo["alice"], "call-stop-a")
    second = transfer_request(demo["alice"], amount=7.0)
    ApprovalRequest.objects.filter(pk=second.pk).update(thread_ref=run.thread_id, run_ref=run.pk,
                                                        tool_call_ref="call-stop-b")
    woken, raced = [], []
    monkeypatch.setattr("agents.tasks.continue_decided.delay", woken.append)  # it would wait for Stop's lock
    real_cancel = approval_services.cancel

    def decided_meanwhile(request_id, *args, **kwargs):
        if str(request_id) == str(first.pk) and not raced:  # finn's decision lands after Stop's read
            raced.append(request_id)
            def decide():
                try:
                    approval_services.decide(first.pk, demo["finn"], "approve")
                finally:
                    connection.close()
            thread = threading.Thread(target=decide)
            thread.start()
            thread.join(timeout=30)
        return real_cancel(request_id, *args, **kwargs)

    monkeypatch.setattr(approval_services, "cancel", decided_meanwhile)
    response = api("alice").post(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code == 202, response.content
    assert raced and str(first.pk) in map(str, woken)
    assert ApprovalRequest.objects.get(pk=first.pk).status == "approved"  # the decision that came first stands
    assert ApprovalRequest.objects.get(pk=second.pk).status == "cancelled"
    assert ToolCall.objects.get(pk="call-stop-a").status != "cancelled"


@pytest.mark.django_db(transaction=True)
def test_stop_while_the_run_asks_for_approval_stops_it(demo, fake_llm, monkeypatch):
    """Before: a Stop that landed while the model's calls were being handled (policy, requests) was
    never read again: the run ended paused on its request, the reviewers were asked, and the
    user's Stop (answered 202) did nothing."""
    from agents import services
    from agents.models import Run, Thread
    from agents.runtime import runner
    from approvals import policy

    monkeypatch.setattr("agents.tasks.run_agent.delay", lambda run_id: None)
    thread = Thread.objects.create(owner=demo["alice"], agent="banking")
    fake_llm.push({"tool_calls": [{"id": "c-stopped", "name": "transfer_money", "arguments": (
        '{"from_account": "1234567890", "to_account": "0987654321", "amount": 5, "currency": "USD"}')}]})
    run = services.start_run(thread, demo["alice"], "send 5 USD to bob")
    real_evaluate = policy.evaluate

    def stop_meanwhile(*args, **kwargs):  # the user presses Stop while the call is judged
        assert services.cancel_run(Run.objects.get(pk=run.pk), demo["alice"])
        return real_evaluate(*args, **kwargs)

    monkeypatch.setattr(policy, "evaluate", stop_meanwhile)
    assert runner.run_agent(run.pk)
    request = ApprovalRequest.objects.get(run_ref=run.pk)
    assert request.status == "cancelled"  # no reviewer is left deciding a stopped run's call
    assert ToolCall.objects.get(pk="c-stopped").status == "cancelled"
    # the chat hears the withdrawal: the stopped run's continuation ends cancelled
    assert run_continuation(Run.objects.get(pk=run.pk)).status == "cancelled"
    ends = [e for e in stream_events(thread.pk) if e["type"] == "RUN_FINISHED"]
    assert ends[-1].get("outcome") == {"type": "cancelled"}, ends


@pytest.mark.django_db(transaction=True)
def test_a_stop_that_comes_after_every_decision_says_it_is_too_late(demo, api, monkeypatch):
    """Approved a moment before the Stop, the paused run goes on in its continuation (the approval
    stands): the Stop was answered 202, and read as done while the transfer ran."""
    from agents.models import Run

    run, request = paused_transfer(demo["alice"], "call-stop-late")
    monkeypatch.setattr("agents.tasks.continue_decided.delay", lambda *args: None)
    approval_services.decide(request.pk, demo["finn"], "approve")
    assert not Run.objects.filter(parent_run=run).exists()  # its wake-up has not come yet: it will
    response = api("alice").post(f"/api/runs/{run.pk}/cancel/")
    assert response.status_code == 409, response.content
    assert response.json()["code"] == "decided_first" and "Too late to stop" in response.json()["message"]
    assert ApprovalRequest.objects.get(pk=request.pk).status == "approved"
    assert api("bob").post(f"/api/runs/{run.pk}/cancel/").status_code == 404  # nobody else's to ask
