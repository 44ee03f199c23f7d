"""@ag-ui/client when its interrupt is decided elsewhere: alice approves her own call through the
REST API while her client still holds it (tests/agui_client/scenarios/elsewhere.mjs). The client's
`cancelled` answer gets it past the interrupt without asking the model again."""

from __future__ import annotations

import pytest

from tests.conftest import wait_for_event
from tests.integration.agui_stack import check_streams, drive_ok

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _approve_as_alice(request):
    """alice approves in the inbox; answers once the continuation has ended, with its run id."""
    from django.contrib.auth.models import User

    from agents.models import Run
    from approvals import services as approval_services
    from approvals.models import ApprovalRequest

    approval_services.decide(request["interruptId"], User.objects.get(username="alice"), "approve")
    continuation = Run.objects.get(parent_run_id=ApprovalRequest.objects.get(pk=request["interruptId"]).run_ref)
    wait_for_event(request["threadId"], lambda e: e["type"] == "RUN_FINISHED" and e["runId"] == continuation.pk)
    return {"ok": True, "runId": continuation.pk}


def test_a_stock_client_gets_past_an_interrupt_decided_elsewhere(live_stack, node):
    from agents.catalog.models import Subscription
    from agents.models import Message, Run

    live_stack["controls"]["approve_as_alice"] = _approve_as_alice
    summary = drive_ok(live_stack, node, ["decided_elsewhere"])
    check_streams(live_stack, summary)

    scenario = summary["scenarios"]["decided_elsewhere"]
    assert Subscription.objects.get(ref="sub_456").status == "cancelled"
    assert Message.objects.filter(role="tool", tool_call_id=scenario["toolCallId"]).count() == 1  # ran once
    # the paused run, its continuation and the "Thanks" turn: the cancel named no run of its own
    assert Run.objects.filter(thread_id=scenario["threadId"]).count() == 3
    assert not Run.objects.filter(pk=scenario["cancelRunId"]).exists()
