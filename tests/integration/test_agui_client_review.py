"""The official AG-UI client (@ag-ui/client HttpAgent) when someone else decides: alice's transfer
waits for the finance group and finn approves it in the inbox (tests/agui_client/scenarios/review.mjs).

Her client gets the status (who decides) instead of an interrupt it could only withdraw; while the
review lasts her response stays open and carries the continuation and the result; past the wait
(AGUI_SSE_REVIEW_WAIT_SECONDS) a plain runAgent streams what happened since, or follows the review.
"""

from __future__ import annotations

import pytest

from tests.conftest import wait_for_event
from tests.integration.agui_stack import check_streams, drive_ok

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
SCENARIOS = ["review_followed", "review_past_wait", "review_reconnect"]


@pytest.fixture
def live_stack_env():
    # long enough for finn's decision, made as soon as the paused run ends; short enough to wait out
    return {"AGUI_SSE_REVIEW_WAIT_SECONDS": "8"}


def _approve_as_finn(request):
    """finn (finance) approves in the inbox; `waitFinished`: answer once the continuation has ended."""
    from django.contrib.auth.models import User

    from agents.models import Run
    from approvals import services as approval_services
    from approvals.models import ApprovalRequest

    approval_services.decide(request["approvalId"], User.objects.get(username="finn"), "approve")
    paused = ApprovalRequest.objects.get(pk=request["approvalId"]).run_ref
    if request.get("waitFinished"):
        continuation = Run.objects.get(parent_run_id=paused)
        wait_for_event(request["threadId"], lambda e: e["type"] == "RUN_FINISHED" and e["runId"] == continuation.pk)
        return {"ok": True, "runId": continuation.pk}
    return {"ok": True}


def test_the_requester_gets_the_outcome_of_a_group_decision(live_stack, node):
    from agents.catalog.models import Transfer
    from agents.models import Run
    from approvals.models import ApprovalRequest

    live_stack["controls"]["approve_as_finn"] = _approve_as_finn
    summary = drive_ok(live_stack, node, SCENARIOS)
    check_streams(live_stack, summary)

    scenario = summary["scenarios"]
    for name in SCENARIOS:
        request = ApprovalRequest.objects.get(pk=scenario[name]["approvalId"])
        assert request.status == "approved" and request.decided_by.username == "finn"
        assert Run.objects.get(parent_run_id=request.run_ref).status == "succeeded"
        assert Run.objects.filter(thread_id=scenario[name]["threadId"]).count() == 2  # no extra turn was started
    assert Transfer.objects.count() == 3  # each approved transfer ran once
    for name in ("review_past_wait", "review_reconnect"):  # a plain POST names no run of its own
        assert not Run.objects.filter(pk=scenario[name]["plainRunId"]).exists()
