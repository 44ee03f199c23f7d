"""@ag-ui/client against a live stack: a tool whose policy lets reviewers approve, reject or answer
with guidance (tests/agui_client/scenarios/decisions.mjs)."""

import pytest

from tests.integration.agui_stack import check_streams, drive_ok

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_resume_schema_offers_the_policys_decisions_and_respond_reaches_the_model(live_stack, node):
    import os

    from django.contrib.auth.models import User
    from django.core.management import call_command

    from agents.models import Message, ToolCall
    from approvals import services
    from approvals.models import ApprovalRequest, Decision

    call_command("seed_demo", stdout=open(os.devnull, "w"))  # the admin who sets the policy (drive_ok seeds again)
    services.save_policy("cancel_subscription", {"mode": "always", "approver_kind": "requester",
                                                 "allowed_decisions": ["approve", "reject", "respond"]},
                         User.objects.get(username="admin"))

    def follows_guidance(body):  # the model's turn after the call's result: it repeats what it was told
        last = body["messages"][-1]
        if last["role"] == "tool" and "Pause it for a month" in last["content"]:
            return {"text": f"Understood: {last['content']}"}
        return None

    live_stack["model"].handlers.append(follows_guidance)
    summary = drive_ok(live_stack, node, ["resume_respond"])
    scenario = summary["scenarios"]["resume_respond"]
    req = ApprovalRequest.objects.get(pk=scenario["interruptId"])
    assert req.status == "responded" and req.feedback == "Pause it for a month instead of cancelling"
    assert list(Decision.objects.filter(request=req).values_list("decision", flat=True)) == ["respond"]
    assert ToolCall.objects.get(pk=scenario["toolCallId"]).status == ToolCall.Status.RESPONDED
    result = Message.objects.get(thread_id=scenario["threadId"], role="tool", tool_call_id=scenario["toolCallId"])
    assert "Pause it for a month" in result.content  # the model's conversation holds the guidance as the result
    assert check_streams(live_stack, summary) >= 4
