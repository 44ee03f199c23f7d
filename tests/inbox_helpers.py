"""Builders for the inbox pages' tests (and the browser tests' `manage.py shell`): approval requests
routed anywhere, recorded tool calls, fixed timestamps."""

import uuid
from datetime import timedelta

from django.contrib.auth.models import Group, User
from django.utils import timezone

from approvals import registry
from approvals import services as approval_services
from approvals.models import ApprovalRequest, Decision
from approvals.policy import Verdict

ARGS = {
    "transfer_money": lambda: {"from_account": "1234567890", "to_account": "0987654321", "amount": 500.0,
                               "currency": "USD"},
    "generate_task_steps": lambda: {"steps": [{"description": "Pack the boxes", "status": "pending",
                                               "estimated_duration": "5 min"},
                                              {"description": "Call the movers", "status": "pending",
                                               "estimated_duration": "10 min"}]},
    "send_email": lambda: {"to": "bob@example.com", "subject": "Hello", "body": "Hi Bob"},
    "delete_file": lambda: {"path": "/notes/old.txt"},
    "submit_refund": lambda: {"order_id": "12346", "amount": 59.0, "refund_description": "Broken on arrival"},
}


def user(name):
    return User.objects.get(username=name)


def make_request(requester, tool="transfer_money", arguments=None, group="finance", description=None,
                 agent="banking", thread=None, risk=None, required=1, timeout=3600, excerpt=None, reason=None,
                 allowed=None):
    """A pending request as the runner records it, routed to `group` (None: the requester)."""
    if isinstance(requester, str):
        requester = user(requester)
    defaults = registry.get(tool)
    args = arguments if arguments is not None else ARGS.get(tool, lambda: {"value": 1})()
    verdict = Verdict(
        "approve", approver_kind="group" if group else "requester",
        group=Group.objects.get_or_create(name=group)[0] if group else None,
        required_approvals=required, timeout_seconds=timeout,
        risk=risk or (defaults.risk if defaults else "medium"), matched_rule="test: mode always",
        **({"allowed_decisions": tuple(allowed)} if allowed else {}),
    )
    thread = thread or f"t-{uuid.uuid4().hex[:12]}"
    return approval_services.request(
        tool_name=tool, arguments=args, requester=requester, verdict=verdict,
        description=description or f"{tool} for {requester.username}",
        reason=reason or "The user asked for it.", impact="test impact", agent_name=agent,
        thread_ref=thread, run_ref=f"r-{uuid.uuid4().hex[:8]}", tool_call_ref=f"c-{uuid.uuid4().hex[:8]}",
        context={"excerpt": excerpt if excerpt is not None else [
            {"role": "user", "content": f"Please run {tool}"}, {"role": "assistant", "content": "On it."}]},
    )


def backdate(req, *, created=None, decided=None):
    """Set timestamps auto_now_add would not let a test choose."""
    fields = {}
    if created is not None:
        fields["created_at"] = created
    if decided is not None:
        fields["decided_at"] = decided
    ApprovalRequest.objects.filter(pk=req.pk).update(**fields)
    req.refresh_from_db()
    return req


def decide_at(req, username, decision, at, feedback="", arguments=None):
    """Decide through the service, then move the decision (and the request's decided_at) to `at`."""
    approval_services.decide(req.pk, user(username), decision, feedback=feedback, arguments=arguments)
    Decision.objects.filter(request=req).update(created_at=at)
    req.refresh_from_db()
    if req.decided_at:
        ApprovalRequest.objects.filter(pk=req.pk).update(decided_at=at)
        req.refresh_from_db()
    return req


def record_call(owner, tool, arguments, *, agent="banking", status="succeeded", approval_id="", thread=None,
                seconds_ago=0):
    """A recorded ToolCall (thread, run, message and call), for the policy simulator."""
    from agents.models import Message, Run, Thread, ToolCall

    if isinstance(owner, str):
        owner = user(owner)
    thread = thread or Thread.objects.create(owner=owner, agent=agent)
    run = Run.objects.create(thread=thread, status=Run.Status.SUCCEEDED)
    seq = thread.messages.count() + 1
    message = Message.objects.create(thread=thread, run=run, seq=seq, role=Message.Role.ASSISTANT, content="")
    call = ToolCall.objects.create(id=f"call-{uuid.uuid4().hex[:12]}", thread=thread, run=run, message=message,
                                   name=tool, arguments=arguments, status=status, approval_id=approval_id)
    if seconds_ago:
        ToolCall.objects.filter(pk=call.pk).update(created_at=timezone.now() - timedelta(seconds=seconds_ago))
    return call
