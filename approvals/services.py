"""request / decide / expire / cancel: the ONLY code that changes an approval's status."""

import hashlib
import json
import logging
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from . import notify, registry
from .models import ApprovalRequest, ApproverKind, AuditEvent, Decision, Risk, TimeoutAction
from .signals import approval_resolved

log = logging.getLogger(__name__)
ETA_HORIZON_SECONDS = 120
Status = ApprovalRequest.Status


class DecisionError(Exception):
    status_code = 400
    code = "invalid"

    def __init__(self, message, errors=None):
        super().__init__(message)
        self.message = message
        self.errors = errors or {}


class NotPending(DecisionError):
    status_code = 409
    code = "already_decided"


class Forbidden(DecisionError):
    status_code = 403
    code = "forbidden"


class InvalidArguments(DecisionError):
    code = "invalid_arguments"


class FeedbackRequired(DecisionError):
    code = "feedback_required"


def arguments_hash(arguments):
    return hashlib.sha256(json.dumps(arguments, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _snapshot(req):
    return {
        "status": req.status,
        "arguments": req.final_arguments if req.final_arguments is not None else req.arguments,
        "feedback": req.feedback,
    }


def _audit(action, req, actor=None, before=None, after=None):
    AuditEvent.objects.create(action=action, request=req, actor=actor, object_ref=req.id, before=before, after=after)


def _resolved(req, kind):
    """After commit: tell the inbox and wake whoever waits on this request."""

    def fire():
        notify.inbox_notice(kind, req)
        approval_resolved.send(sender=ApprovalRequest, request=req)

    transaction.on_commit(fire)


def request(*, tool_name, arguments, requester, verdict, description, reason="", reversible=False,
            impact="", context=None, agent_name="", thread_ref="", run_ref="", tool_call_ref="", schema=None):
    """Record a pending request for a person (verdict comes from policy.evaluate)."""
    defaults = registry.get(tool_name)
    expires_at = timezone.now() + timedelta(seconds=verdict.timeout_seconds) if verdict.timeout_seconds else None
    with transaction.atomic():
        req = ApprovalRequest.objects.create(
            tool_name=tool_name,
            arguments=arguments,
            schema=schema if schema is not None else (defaults.schema if defaults else {}),
            description=description,
            reason=reason,
            reversible=reversible,
            impact=impact,
            risk=verdict.risk,
            matched_rule=verdict.matched_rule,
            requester=requester,
            approver_kind=verdict.approver_kind,
            approver_group=verdict.group if verdict.approver_kind == ApproverKind.GROUP else None,
            required_approvals=verdict.required_approvals,
            expires_at=expires_at,
            timeout_action=verdict.timeout_action,
            agent_name=agent_name,
            thread_ref=thread_ref,
            run_ref=run_ref,
            tool_call_ref=tool_call_ref,
            context=context or {},
        )
        _audit("requested", req, actor=requester, after=_snapshot(req))

        def after_commit():
            notify.inbox_notice("requested", req)
            # a near deadline gets its own countdown task; far ones are left to the 5 s beat sweep,
            # since Redis would redeliver an ETA task held longer than the visibility timeout
            if expires_at and verdict.timeout_seconds <= ETA_HORIZON_SECONDS:
                from .tasks import expire_request

                expire_request.apply_async((req.id,), eta=expires_at)

        transaction.on_commit(after_commit)
    return req


def can_decide(user, req):
    if not user.is_authenticated:
        return False
    if req.approver_kind == ApproverKind.REQUESTER:
        return user.pk == req.requester_id
    # four eyes: the requester never decides a group's request, even as a member
    if user.pk == req.requester_id:
        return False
    return user.groups.filter(pk=req.approver_group_id).exists()


def visible_to(user):
    """Requests a user may see: admins all; reviewers their groups'; anyone their own requester-routed ones."""
    from django.db.models import Q

    qs = ApprovalRequest.objects.select_related("requester", "approver_group")
    if user.is_superuser or user.is_staff:
        return qs
    return qs.filter(
        Q(approver_kind=ApproverKind.GROUP, approver_group__in=user.groups.all())
        | Q(requester=user)
    )


def decide(request_id, user, decision, arguments=None, feedback=""):
    """Approve (optionally with edited arguments) or reject. Raises DecisionError subclasses."""
    if decision not in Decision.Kind.values:
        raise DecisionError("decision must be 'approve' or 'reject'", {"decision": ["must be approve or reject"]})
    feedback = (feedback or "").strip()
    with transaction.atomic():
        req = ApprovalRequest.objects.select_for_update(of=("self",)).select_related("approver_group").get(pk=request_id)
        if not can_decide(user, req):
            raise Forbidden("you may not decide this request")
        if req.status != Status.PENDING:
            raise NotPending(f"request already {req.status}")
        if req.expires_at and req.expires_at <= timezone.now():
            # past the deadline: expire now instead of accepting a late decision
            _expire_locked(req)
            raise NotPending("request expired")
        before = _snapshot(req)
        current = req.final_arguments if req.final_arguments is not None else req.arguments

        if decision == Decision.Kind.REJECT:
            if req.approver_kind == ApproverKind.GROUP and not feedback:
                raise FeedbackRequired("feedback is required to reject", {"feedback": ["required to reject"]})
            Decision.objects.create(request=req, user=user, decision=decision, feedback=feedback)
            req.status, req.feedback = Status.REJECTED, feedback
        else:
            edited = arguments is not None and arguments != current
            if edited:
                defaults = registry.get(req.tool_name)
                if defaults is None:
                    raise InvalidArguments("this tool's arguments cannot be edited", {"arguments": ["unknown tool"]})
                try:
                    current = defaults.validate(arguments)
                except registry.ArgumentsInvalid as exc:
                    raise InvalidArguments("invalid arguments", exc.errors) from exc
                req.final_arguments = current
            digest = arguments_hash(current)
            Decision.objects.create(
                request=req, user=user, decision=decision, arguments=current, arguments_hash=digest, feedback=feedback
            )
            # quorum: distinct approvers of exactly these arguments (an edit withdraws the others)
            approvers = (
                req.decisions.filter(decision=Decision.Kind.APPROVE, arguments_hash=digest)
                .exclude(user_id=req.requester_id if req.approver_kind == ApproverKind.GROUP else None)
                .values("user_id").distinct().count()
            )
            req.feedback = feedback
            if approvers >= req.required_approvals:
                req.status = Status.MODIFIED if current != req.arguments else Status.APPROVED
                req.final_arguments = current
        if req.status != Status.PENDING:
            req.decided_by, req.decided_at = user, timezone.now()
        req.save()
        _audit("decided", req, actor=user, before=before, after={**_snapshot(req), "decision": decision})
        if req.status != Status.PENDING:
            _resolved(req, "decided")
        else:
            transaction.on_commit(lambda: notify.inbox_notice("decided", req))
    return req


def _expire_locked(req):
    before = _snapshot(req)
    if req.timeout_action == TimeoutAction.APPROVE and req.risk == Risk.LOW:
        req.status, req.final_arguments = Status.APPROVED, req.arguments
        req.feedback = "approved automatically when the deadline passed"
    else:
        req.status = Status.EXPIRED
        req.feedback = "timed out: nobody decided before the deadline, so the action was not taken"
    req.decided_at = timezone.now()
    req.save()
    _audit("expired", req, before=before, after=_snapshot(req))
    _resolved(req, "expired")


def expire(request_id):
    """Expire one request if it is pending and past its deadline; returns True when it did."""
    with transaction.atomic():
        req = ApprovalRequest.objects.select_for_update().filter(pk=request_id).first()
        if not req or req.status != Status.PENDING or not req.expires_at or req.expires_at > timezone.now():
            return False
        _expire_locked(req)
        return True


def cancel(request_id, user=None, reason="cancelled"):
    with transaction.atomic():
        req = ApprovalRequest.objects.select_for_update().get(pk=request_id)
        if req.status != Status.PENDING:
            raise NotPending(f"request already {req.status}")
        before = _snapshot(req)
        req.status, req.feedback, req.decided_by, req.decided_at = Status.CANCELLED, reason, user, timezone.now()
        req.save()
        _audit("cancelled", req, actor=user, before=before, after=_snapshot(req))
        _resolved(req, "cancelled")
    return req
