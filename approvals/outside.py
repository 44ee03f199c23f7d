"""Requests from agents that run elsewhere (POST /api/approvals/) and the outcome they report.

The same engine as the project's own agents: policy.evaluate judges the call, services.request
records what a person decides. What the runner does itself for its own agents (run at once,
refuse) is recorded here as an answered request, so that the outside agent reads its answer
where it reads every other: `never` -> approved at once, `deny` -> denied with the rule.
A tool the project has never seen is asked of the `reviewers` group at high risk until an admin
sets its policy; its arguments are checked against the JSON Schema the caller sends.
"""

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from . import policy, registry, schemas, selectors, services
from .access import UNKNOWN_TOOL_GROUP
from .models import ApprovalRequest, ApproverKind, AuditEvent, OutsideCall, Risk, arguments_hash
from .signals import approval_event, tool_outcome

log = logging.getLogger(__name__)

Status = ApprovalRequest.Status


class OutsideError(services.DecisionError):
    pass


class UnknownTool(OutsideError):
    code = "unknown_tool"


class InvalidSchema(OutsideError):
    code = "invalid_schema"


class IdempotencyMismatch(OutsideError):
    status_code = 422
    code = "idempotency_key_reused"


class NotOutside(OutsideError):
    status_code = 409
    code = "not_outside"


class OutcomeReported(OutsideError):
    status_code = 409
    code = "outcome_already_reported"


class NotApproved(OutsideError):
    status_code = 409
    code = "not_approved"


class TooManyPending(OutsideError):
    status_code = 429
    code = "too_many_pending"


class TooManyRequests(OutsideError):
    status_code = 429
    code = "too_many_requests"

    def __init__(self, message, retry_after):
        super().__init__(message)
        self.retry_after = retry_after  # seconds: the Retry-After header


def body_hash(body):
    return arguments_hash(body)  # the same canonical JSON digest as arguments


def _checked_arguments(tool_name, arguments, schema, requester):
    """(arguments as they will be judged, the schema stored with the request, the objects they act
    on with their owners: [] when the tool names none)."""
    defaults = registry.get(tool_name)
    if defaults is not None:  # a tool of this project: its own validator, its own schema
        try:
            arguments = defaults.validate(arguments, requester=requester)
        except registry.ArgumentsInvalid as exc:
            raise services.InvalidArguments(_("the arguments do not fit the tool"), exc.errors) from exc
        # and its own owner check, as for our agents' calls and every edit: a caller asks only for
        # what acts on its own objects (another user's account was asked for, and approved as it stood)
        objects = []
        if defaults.authorize is not None:
            try:
                objects = defaults.authorize(arguments, requester)
            except registry.ArgumentsInvalid as exc:
                raise services.InvalidArguments(_("the arguments act on something that is not the requester's"),
                                                exc.errors) from exc
        return arguments, defaults.schema, objects
    if schema is None:
        if policy.effective(tool_name) is None:
            raise UnknownTool(_("this project does not know the tool %(tool)s: send its arguments' JSON Schema "
                                "in `schema`") % {"tool": tool_name},
                              {"schema": [_("required for a tool this project does not know")]})
        return arguments, {}, []
    try:
        errors = schemas.errors(schema, arguments)
        if errors:
            raise services.InvalidArguments(_("the arguments do not fit the schema"), errors)
        return schemas.filled(schema, arguments), schema, []
    except schemas.SchemaInvalid as exc:
        raise InvalidSchema(exc.message, {"schema": [exc.message]}) from exc


def create(*, requester, body, idempotency_key=None):
    """(request, created). `body`: the validated fields of POST /api/approvals/."""
    digest = body_hash({k: v.isoformat() if isinstance(v, datetime) else v for k, v in body.items()})
    if idempotency_key:
        found = _retry(requester, idempotency_key, digest)
        if found is not None:
            return found, False
    _within_hourly_limit(requester)  # before any work on the body: a refused account costs a count
    tool_name = body["tool_name"]
    arguments, schema, objects = _checked_arguments(tool_name, body["arguments"], body.get("schema"), requester)
    # The caller's thread and run are its own names, kept apart from this project's conversations
    # (thread_ref is where our chats, runs and the reviewer's conversation page look): a ref that
    # happened to name someone's thread here must not attach the request to it.
    own = {"thread": body.get("thread") or "", "run": body.get("run") or ""}
    verdict = policy.evaluate(tool_name, arguments, {"user": requester, "agent": body.get("agent_name", "")})
    if policy.effective(tool_name) is None:  # never seen: a reviewer decides, at high risk
        verdict.approver_kind = ApproverKind.GROUP
        verdict.group = Group.objects.get_or_create(name=UNKNOWN_TOOL_GROUP)[0]
        verdict.risk = Risk.HIGH
        verdict.matched_rule = "a tool this project does not know: reviewers decide until an admin sets its policy"
    if body.get("risk") and services.RISK_ORDER.index(body["risk"]) > services.RISK_ORDER.index(verdict.risk):
        verdict.risk = body["risk"]  # the caller may raise the risk, never lower what policy says
    # no circumvention, as for our own agents: the same call rejected in the caller's thread is not
    # asked again unless the person wrote since (the caller says when, in user_wrote_at)
    earlier = selectors.earlier_outside_rejection(
        requester=requester, tool_name=tool_name, arguments=arguments, outside_thread=own["thread"],
        since=body.get("user_wrote_at")) if verdict.action == "approve" else None
    # a tool of this project says what these arguments do, in every reader's language: the caller's own
    # headline ("Transfer 5.00 USD" over an amount of 90,000) and its word that the call can be undone
    # are not the reviewer's to trust (the caller may say it cannot be undone, never that it can)
    defaults = registry.get(tool_name)
    words = services.described(defaults, arguments, requester) or {
        "description": body.get("description") or f"Call {tool_name}", "impact": body.get("impact", "")}
    reversible = body.get("reversible", False) and (defaults is None or defaults.reversible)
    fields = dict(
        tool_name=tool_name, arguments=arguments, requester=requester, schema=schema,
        reason=body.get("reason", ""), reversible=reversible, **words,
        agent_name=body.get("agent_name", ""), context={"outside": own, **({"objects": objects} if objects else {})},
    )
    if earlier is None and verdict.action == "approve":
        _within_pending_limit(requester)
    try:
        with transaction.atomic():
            if earlier is not None:
                req = _repeated(earlier, verdict, fields)
            elif verdict.action == "approve":
                req = services.request(verdict=verdict, **fields)
            else:
                req = _answered(verdict, fields)
            OutsideCall.objects.create(request=req, requester=requester, idempotency_key=idempotency_key or None,
                                       body_hash=digest, callback_url=body.get("callback_url") or "")
    except IntegrityError:  # a retry with the same key won the race: its request is the answer
        found = _retry(requester, idempotency_key, digest) if idempotency_key else None
        if found is None:
            raise
        return found, False
    if req.status != Status.PENDING:  # answered by policy at once: the same "decided" moment as a reviewer's
        transaction.on_commit(lambda: _decided(req))
    return req, True


def _within_pending_limit(requester):
    """Any account may ask, and each request is mailed to every reviewer who decides it: an account
    waits on at most AGUI_MAX_PENDING_PER_REQUESTER requests at once (our own agents are bounded by
    their runs: AGUI_MAX_TOOL_CALLS_PER_ANSWER a turn, one turn at a time)."""
    limit = settings.AGUI_MAX_PENDING_PER_REQUESTER
    if ApprovalRequest.objects.filter(outside__requester=requester, status=Status.PENDING)[:limit].count() >= limit:
        raise TooManyPending(_("%(count)s requests of this account are still waiting for a decision, the most "
                               "one account may have; ask again once some are decided or withdrawn.")
                             % {"count": limit})


def _within_hourly_limit(requester):
    """At most AGUI_MAX_REQUESTS_PER_HOUR new requests an account, whatever became of them: the pending
    limit alone let one account ask and withdraw without end (300 mails to the reviewers in 8 s), and
    requests policy answers at once (denied, approved) cost rows and a signed callback each, unbounded."""
    limit, now = settings.AGUI_MAX_REQUESTS_PER_HOUR, timezone.now()
    recent = OutsideCall.objects.filter(requester=requester, created_at__gt=now - timedelta(hours=1))
    if recent[:limit].count() < limit:
        return
    oldest = recent.order_by("-created_at").values_list("created_at", flat=True)[limit - 1]
    raise TooManyRequests(_("This account asked for %(count)s approvals in the last hour, the most one account "
                            "may; ask again later.") % {"count": limit},
                          retry_after=max(1, int((oldest + timedelta(hours=1) - now).total_seconds()) + 1))


def _decided(req):
    """approval_event "decided" for a request policy answered (webhooks, callback_url); never raises."""
    for receiver, result in approval_event.send_robust(sender=ApprovalRequest, kind="decided", request=req):
        if isinstance(result, Exception):
            log.error("approval_event receiver %s failed", receiver, exc_info=result)


def refs(req):
    """The outside agent's own thread and run refs of a request ("" when it gave none)."""
    own = (req.context or {}).get("outside") or {}
    return {"thread": own.get("thread", ""), "run": own.get("run", "")}


def _retry(requester, key, digest):
    row = OutsideCall.objects.filter(requester=requester, idempotency_key=key).select_related("request").first()
    if row is None:
        return None
    if row.body_hash != digest:
        raise IdempotencyMismatch(_("this Idempotency-Key was used for another request body"),
                                  {"idempotency_key": [_("already used for request %(id)s") % {"id": row.request_id}]})
    return row.request


def _answered(verdict, fields):
    """A call policy runs at once (approved) or blocks (denied): recorded already answered."""
    approved = verdict.action == "auto"
    rule = verdict.matched_rule[:200]
    return _recorded(fields, status=Status.APPROVED if approved else Status.DENIED, risk=verdict.risk, rule=rule,
                     final_arguments=fields["arguments"] if approved else None,
                     feedback="" if approved else f"Blocked by policy ({rule.split(': ', 1)[-1]}).")


def _repeated(earlier, verdict, fields):
    """The same call rejected before in the caller's thread: rejected again at once with the
    reviewer's earlier feedback, without asking anyone (the trail names the earlier request)."""
    fields = {**fields, "context": {**fields["context"], "repeat_of": earlier.pk}}
    return _recorded(fields, status=Status.REJECTED, risk=verdict.risk, feedback=earlier.feedback,
                     rule="already rejected in this thread: not asked again until the person writes",
                     extra={"repeat_of": earlier.pk})


def _recorded(fields, *, status, risk, rule, feedback, final_arguments=None, extra=None):
    req = ApprovalRequest.objects.create(
        **fields, status=status, risk=risk, matched_rule=rule, approver_kind=ApproverKind.REQUESTER,
        final_arguments=final_arguments, feedback=feedback, decided_at=timezone.now(),
    )
    services.record(AuditEvent.Action.REQUESTED, actor=fields["requester"], object_ref=req.id,
                    tool_name=req.tool_name, request=req, after={
                        "status": req.status, "arguments": req.arguments, "matched_rule": rule, "risk": req.risk,
                        **(extra or {})})
    return req


def report_outcome(*, request_id, user, outcome, detail=""):
    """The outside agent's word on how its approved call went: once (a second report is 409)."""
    with transaction.atomic():
        row = (OutsideCall.objects.select_for_update().select_related("request")
               .filter(request_id=request_id).first())
        if row is None:
            raise NotOutside(_("only requests made through POST /api/approvals/ take an outcome"))
        if row.requester_id != user.pk:
            raise services.Forbidden(_("only the agent that made the request reports its outcome"))
        if row.request.status not in ApprovalRequest.RESOLVED_APPROVED:
            raise NotApproved(_("the request is %(status)s: only an approved call has an outcome") % {
                "status": row.request.get_status_display().lower()})
        if row.outcome:
            outcome = row.get_outcome_display().lower()
            raise OutcomeReported(_("the outcome was already reported (%(outcome)s)") % {"outcome": outcome},
                                  {"outcome": [_("already %(outcome)s") % {"outcome": outcome}]})
        row.outcome, row.outcome_detail, row.outcome_at = outcome, detail, timezone.now()
        row.save(update_fields=["outcome", "outcome_detail", "outcome_at"])
        services.record(AuditEvent.Action.OUTCOME_REPORTED, actor=user, object_ref=row.request_id,
                        tool_name=row.request.tool_name, request=row.request,
                        after={"outcome": outcome, "detail": detail})
        req = row.request
        transaction.on_commit(lambda: tool_outcome.send_robust(sender=OutsideCall, approval_ref=req.id, data={
            "tool_name": req.tool_name, "outcome": outcome, "detail": detail, "approval": req.id,
            "thread": refs(req)["thread"] or None, "run": refs(req)["run"] or None, "tool_call": req.tool_call_ref or None}))
    return row.request


def withdraw(*, request_id, user, reason=""):
    """The agent that asked no longer wants the call (it gave up waiting, its user went away): the
    pending request is cancelled, so no reviewer approves a call that will never run; its callback and
    the endpoints hear approval.decided (cancelled). Only that agent; a settled request is 409."""
    row = OutsideCall.objects.filter(request_id=request_id).first()
    if row is None:
        raise NotOutside(_("only requests made through POST /api/approvals/ are withdrawn by their agent"))
    if row.requester_id != user.pk:
        raise services.Forbidden(_("only the agent that made the request withdraws it"))
    return services.cancel(request_id, user, reason=reason or _("Withdrawn by the agent that asked."))
