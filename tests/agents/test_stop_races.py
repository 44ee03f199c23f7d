"""Stop (POST /api/runs/<id>/cancel/) on a paused run while a reviewer decides one of its requests."""

import threading

import pytest
from django.db import connection

from agents.models import ToolCall
from approvals import services as approval_services
from approvals.models import ApprovalRequest
from tests.helpers import paused_transfer, transfer_request


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
