"""request / decide / expire / remind / escalate / cancel, policy changes and thread grants:
the ONLY code that changes approval records. Every change writes an AuditEvent."""

import logging
from datetime import timedelta

import kombu.exceptions
import redis
from celery import current_app, signature
from django.apps import apps
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef, Q
from django.utils import timezone
from django.utils.text import get_text_list
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agui_project.answer_first import later
from agui_project.queries import (
    Prepared,
    PreparedInsert,
    PreparedUpdate,
    flush_after_hand_over,
    one,
    prefetched,
    unanswered,
)
from agui_project.visible import says_nothing

from . import (
    access,
    mail,
    notify,
    policy,
    reader_schema,
    refusals,
    registry,
    rule_words,
    schemas,
    selectors,
    validators,
)
from .access import mail_key, same_address
from .choices import DEFAULT_DECISIONS, REFUSALS, RISK_ORDER
from .models import (
    REQUESTER_OFF,
    ApprovalRequest,
    ApproverKind,
    AuditEvent,
    Decision,
    HeldDecision,
    MailDue,
    Risk,
    ThreadGrant,
    TimeoutAction,
    ToolPolicy,
    arguments_hash,
)
from .signals import approval_resolved

log = logging.getLogger(__name__)
# A deadline this close gets its own countdown task; later ones are left to the beat sweep,
# since Redis redelivers an ETA task held longer than the broker's visibility timeout.
ETA_HORIZON_SECONDS = 120
DEFAULT_ESCALATION_FRACTION = 0.75
BULK_LIMIT = 200
DEADLINE_TASK = "approvals.tasks.deadline_due"
HELD_TASK = "approvals.tasks.held_due"
MAIL_TASK = "approvals.tasks.mail_due"
Status = ApprovalRequest.Status
Action = AuditEvent.Action


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


class RequestExpired(NotPending):
    """Its deadline passed before the decision (code already_decided, like any other late answer):
    callers tell it apart by its class, never by its words, which are in the reader's language."""


class AlreadyApproved(DecisionError):
    status_code = 409
    code = "already_approved"


class AlreadyHeld(DecisionError):
    """The reviewer holds another decision of this request in its undo window (services.hold)."""
    status_code = 409
    code = "already_held"


class Forbidden(DecisionError):
    status_code = 403
    code = "forbidden"


class NotFound(DecisionError):
    status_code = 404
    code = "not_found"


class InvalidArguments(DecisionError):
    code = "invalid_arguments"

    def __init__(self, message, errors=None, labels=None):
        super().__init__(message, errors)
        self.labels = labels or {}  # argument -> the label readers know it by (reader_schema.labels)


class FeedbackRequired(DecisionError):
    code = "feedback_required"


class ToolWouldRefuse(InvalidArguments):
    """An edit its tool will certainly refuse (ToolDefaults.refuses): the message is the tool's own sentence."""


class ArgumentsChanged(DecisionError):
    """An approval made on arguments someone has edited since (services.decide's `seen`)."""
    status_code = 409
    code = "arguments_changed"


class RequesterInactive(DecisionError):
    """The account the call would act for is switched off: it may be rejected, never approved."""
    status_code = 409
    code = "requester_inactive"


class DecisionNotAllowed(DecisionError):
    """This tool's policy does not offer that answer (ToolPolicy.allowed_decisions)."""
    code = "decision_not_allowed"


DECISION_WORDS = {"approve": gettext_lazy("approve"), "edit": gettext_lazy("approve with edits"),
                  "reject": gettext_lazy("reject"), "respond": gettext_lazy("answer with guidance")}


def _offered(req):
    words = [str(DECISION_WORDS[d]) for d in DECISION_WORDS if req.allows(d)]
    if not words:
        return _("nothing")
    if len(words) == 1:
        return words[0]
    return _("%(first)s or %(last)s") % {"first": ", ".join(words[:-1]), "last": words[-1]}


def _refuse_unless_allowed(req, kind):
    if not req.allows(kind):
        message = _("This tool's policy does not let reviewers %(kind)s; you can %(offered)s.") % {
            "kind": DECISION_WORDS[kind], "offered": _offered(req)}
        raise DecisionNotAllowed(message, {"decision": [message]})


class EditDenied(DecisionError):
    """The edited arguments are blocked by the policy that applies to them."""
    code = "edit_denied"


class EditNeedsOtherApprover(DecisionError):
    """The edited arguments need another group, more approvals or a higher risk than this request has."""
    code = "edit_needs_other_approver"


def _move(req, to):
    """A locked request's status -> `to`, as ApprovalRequest.TRANSITIONS allows (else it raises)."""
    if to not in ApprovalRequest.TRANSITIONS.get(req.status, ()):
        raise ValueError(f"approval request {req.pk}: {req.status} -> {to} is not an allowed transition")
    req.status = to


def _snapshot(req):
    return {"status": req.status, "arguments": req.current_arguments, "feedback": req.feedback}


# the rows every request and decision add, their INSERTs compiled once; an audit row's key and a
# decision's are read by nobody (the answer shows a decision's fields, not its id): add()
_AUDIT_ROW = PreparedInsert(AuditEvent)
_REQUEST_ROW = PreparedInsert(ApprovalRequest)
_DECISION_ROW = PreparedInsert(Decision)


def _audit(action, req, actor=None, before=None, after=None):
    record(action, actor=actor, object_ref=req.id, tool_name=req.tool_name, request=req, before=before, after=after)


def record(action, *, actor=None, object_ref="", tool_name="", request=None, before=None, after=None):
    """An audit row for events other apps observe (e.g. a tool call whose outcome is unknown); inside
    a transaction on PostgreSQL it goes with the transaction's next statement (queries.unanswered)."""
    _AUDIT_ROW.add(action=action, actor=actor, object_ref=object_ref, tool_name=tool_name,
                   request=request, before=before, after=after)


def _resolved(req, kind, resolve_here=None):
    """After commit: wake whoever waits on this request (the paused run first: its continuation
    does not wait on the inbox's notices and the webhooks' reads), then tell the inbox; that after
    the answer, when the request answers first (agui_project/answer_first.py). The run is woken
    before the answer: what the person waiting on it sees is not put behind the decider's answer.
    `resolve_here`: the caller's own wake-up, now, in its transaction (decide()); what it leaves
    for after commit still goes before the inbox's notice."""
    if resolve_here is None:
        transaction.on_commit(lambda: approval_resolved.send(sender=ApprovalRequest, request=req), robust=True)
    elif resolve_here(req) is not None:  # a continuation, announced after commit: the worker's first steps
        flush_after_hand_over(ApprovalRequest, req.pk)  # overlap the commit's flush; what follows waits for it
    _tell_inbox(kind, req)


def _tell_inbox(kind, req):
    """After commit, and after the answer when the request answers first: the inbox's notice."""
    transaction.on_commit(lambda: later(lambda: notify.inbox_notice(kind, req)))


def _at(now, seconds, fraction):
    return now + timedelta(seconds=seconds * fraction)


def request(*, tool_name, arguments, requester, verdict, description, reason="", reversible=False,
            impact="", context=None, agent_name="", thread_ref="", run_ref="", tool_call_ref="", schema=None,
            said=None):
    """Record a pending request for a person (verdict comes from policy.evaluate). `said`: the
    description and impact in every language ({language: {"description", "impact"}}; models.said)."""
    defaults = registry.get(tool_name)
    now = timezone.now()
    # a policy saved before deadlines had a ceiling may hold one no date reaches (10**12 s): every
    # call of the tool failed computing it; it is held to the ceiling policies now have
    timeout = min(verdict.timeout_seconds, validators.MAX_TIMEOUT) if verdict.timeout_seconds else None
    expires_at = now + timedelta(seconds=timeout) if timeout else None
    remind_at = _at(now, timeout, verdict.reminder_fraction) if timeout and verdict.reminder_fraction else None
    escalation = verdict.escalation_group if verdict.approver_kind == ApproverKind.GROUP else None
    escalate_at = (_at(now, timeout, verdict.escalation_fraction or DEFAULT_ESCALATION_FRACTION)
                   if timeout and escalation else None)
    with transaction.atomic():
        req = _REQUEST_ROW.create(
            tool_name=tool_name,
            arguments=arguments,
            schema=schema if schema is not None else (defaults.schema if defaults else {}),
            description=description,
            reason=reason,
            reversible=reversible,
            impact=impact,
            said=said or {},
            risk=verdict.risk,
            matched_rule=verdict.matched_rule[:200],
            self_check=verdict.reason,
            requester=requester,
            approver_kind=verdict.approver_kind,
            approver_group=verdict.group if verdict.approver_kind == ApproverKind.GROUP else None,
            required_approvals=verdict.required_approvals,
            expires_at=expires_at,
            remind_at=remind_at,
            escalation_group=escalation,
            escalate_at=escalate_at,
            timeout_action=verdict.timeout_action,
            allowed_decisions=list(verdict.allowed_decisions),
            agent_name=agent_name,
            thread_ref=thread_ref,
            run_ref=run_ref,
            tool_call_ref=tool_call_ref,
            context=context or {},
        )
        _audit(Action.REQUESTED, req, actor=requester, after={
            **_snapshot(req), "matched_rule": req.matched_rule, "risk": req.risk, "self_check": req.self_check,
            "approver": req.approver_label, "required_approvals": req.required_approvals,
            "expires_at": expires_at.isoformat() if expires_at else None,
        })
        _warn_if_nobody_decides(req)

        def after_commit():
            notify.inbox_notice("requested", req)
            for moment in {m for m in (remind_at, escalate_at, expires_at) if m}:
                if (moment - now).total_seconds() <= ETA_HORIZON_SECONDS:
                    _countdown(DEADLINE_TASK, req.id, eta=moment)

        transaction.on_commit(after_commit)
        mail_later("request", req)  # the group's members, with one-click links
    return req


def _warn_if_nobody_decides(req):
    """The admins are told, once per request and group, when a group that decides it has nobody who may
    (access.deciders_in: no member, every one switched off, or only the requester under four eyes): such a
    request waited unseen until its deadline. Asked when it is requested, routed elsewhere, escalated and
    reminded of (a group emptied meanwhile); the audit row (no_deciders) is the once, written under the
    request's lock; the mail to staff and ADMINS and the staff's inbox notice follow the commit."""
    groups = [(req.approver_group, "approver")] if req.approver_kind == ApproverKind.GROUP else []
    if req.escalated_at and req.escalation_group_id:
        groups.append((req.escalation_group, "escalation"))
    for group, role in groups:
        if group is None or access.deciders_in(group.pk, req.requester).exists():
            continue
        if AuditEvent.objects.filter(request=req, action=Action.NO_DECIDERS, after__group=group.name).exists():
            continue
        _audit(Action.NO_DECIDERS, req, after={"group": group.name, "as": role})
        transaction.on_commit(lambda group=group.name, role=role: notify.operator_notice(
            "approval.no_deciders", {"approval": {"id": str(req.pk), "tool_name": req.tool_name, "group": group,
                                                  "as": role}}))
        mail_later("nobody", req, group.name, role)
    _warn_if_too_few_decide(req, [group for group, _role in groups if group is not None])


def _warn_if_too_few_decide(req, groups):
    """The same for a quorum out of reach: fewer people may decide than the approvals the request needs
    (none at all is said above, per group). Before its escalation and after it (both groups decide then),
    once each, as above; a policy page says it too while the policy is set (reach.short_quorums)."""
    needed = req.required_approvals
    if needed <= 1 or not groups:
        return
    can = access.deciders_among([group.pk for group in groups], req.requester).count()
    stage = "escalation" if len(groups) > 1 else "approver"
    if not 0 < can < needed or AuditEvent.objects.filter(
            request=req, action=Action.TOO_FEW_DECIDERS, after__as=stage).exists():
        return
    names = [group.name for group in groups]
    _audit(Action.TOO_FEW_DECIDERS, req, after={"groups": names, "as": stage, "needed": needed, "can": can})
    transaction.on_commit(lambda: notify.operator_notice("approval.too_few_deciders", {"approval": {
        "id": str(req.pk), "tool_name": req.tool_name, "groups": names, "needed": needed, "can": can}}))
    mail_later("too_few", req, names, needed, can)


def _sent(task_name, args, **when):
    """A task sent after a commit; the broker's error when it is away, never raised into a change
    that is committed (the reviewer got a 500 for a decision that stood)."""
    try:  # by name: tasks import this module, so this one does not import tasks
        signature(task_name, args=args, app=current_app).apply_async(**when)
    except (redis.RedisError, kombu.exceptions.OperationalError) as exc:
        return exc
    return None


def _countdown(task_name, object_id, **when):
    """A task for a near moment. The beat's sweeps (every few seconds) do the same work whatever
    became of it, so a broker away is only logged."""
    if (exc := _sent(task_name, (object_id,), **when)) is not None:
        log.warning("%s(%s) not sent (broker unreachable: %s); the beat's sweep does it", task_name, object_id, exc)


def mail_later(kind, req, *args):
    """A request's mails (mail.deliver's kinds) go out from a task of their own, after the commit of
    the change that makes them due (called inside it, a row of MailDue is written with it). Sent in
    place, an SMTP server slow to answer held what filed the request: the run (its card, its pause, a
    worker slot) or the HTTP request of an outside agent or of a policy change. A broker away: sent
    here after all; a task lost with the broker's queue: the beat's sweep sends the row. A mail is
    never worth losing for speed."""
    due = MailDue.objects.create(request_id=req.pk, kind=kind, args=list(args))

    def send():
        if (exc := _sent(MAIL_TASK, (due.pk,))) is not None:
            log.warning("%s mail for %s sent in place (broker unreachable: %s)", kind, req.pk, exc)
            send_due_mail(due.pk, req=req)

    transaction.on_commit(send)


MAIL_ATTEMPTS = 5  # an SMTP server that refuses a mail this often: logged, and given up
MAIL_SWEEP_GRACE_SECONDS = 30  # a due mail this old has lost its task: the beat sends it


def send_due_mail(due_id, req=None):
    """Send a due mail once: claimed (a lost task's sweep and the task may both come), delivered,
    deleted. A delivery that raises leaves it for the sweep once its claim lapses."""
    now = timezone.now()
    lease = now + timedelta(minutes=5)  # a mail to a whole group takes a connection's timeout per recipient at worst
    if not MailDue.objects.filter(_unclaimed(now), pk=due_id).update(claimed_until=lease, attempts=F("attempts") + 1):
        return None
    due = MailDue.objects.get(pk=due_id)
    try:
        sent = mail.deliver(due.kind, req if req is not None else due.request_id, *due.args)
    except Exception:
        if due.attempts >= MAIL_ATTEMPTS:
            log.exception("%s mail for request %s not sent after %s attempts; given up", due.kind, due.request_id,
                          due.attempts)
            due.delete()
        else:
            log.exception("%s mail for request %s not sent (attempt %s); tried again later", due.kind,
                          due.request_id, due.attempts)
        return None
    due.delete()
    return sent


def _unclaimed(now):
    """A due mail nobody is sending: never claimed, or its claim lapsed."""
    return Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)


def mails_due(limit=200):
    """The ids of due mails whose task was lost (older than the grace, not being sent)."""
    now = timezone.now()
    return list(MailDue.objects.filter(_unclaimed(now), created_at__lte=now - timedelta(seconds=MAIL_SWEEP_GRACE_SECONDS))
                .order_by("created_at").values_list("pk", flat=True)[:limit])


def _standing_approvals(req):
    """The approvals of the request's arguments as they now stand (an edit withdraws the others)."""
    return req.decisions.filter(decision=Decision.Kind.APPROVE, withdrawn_at__isnull=True,
                                arguments_hash=arguments_hash(req.current_arguments))


decider_group_ids = access.decider_group_ids


def can_decide(user, req, group_ids=None):
    """access.may_decide, the groups read here unless given: `group_ids`, the user's groups as already
    read (a list of rows shows a button per row; a decision reads them with its locked request, so a
    membership removed a moment ago counts)."""
    if group_ids is None:
        if not user.is_authenticated or not user.is_active or req.approver_kind == ApproverKind.REQUESTER:
            group_ids = ()  # decided without them
        else:
            group_ids = [g for g in decider_group_ids(req) if _MEMBER.one(user.pk, g) is not None]
    return access.may_decide(user, req, group_ids)


# whether a user is in a group, asked by every group decision: compiled once (agui_project/queries.Prepared)
_MEMBER = Prepared("auth.User_groups", lambda user, group: _MEMBER.model.objects.filter(
    user_id=user, group_id=group).only("id")[:1], arity=2, types=(int, int))


def _member(user, group_field):
    """Whether `user` is in the group the request's `group_field` names (a subquery)."""
    return Exists(apps.get_model("auth", "User_groups").objects.filter(user_id=user, group_id=OuterRef(group_field)))


# every decision's first read, compiled once (agui_project/queries.Prepared); with the outside agent's
# call, which the webhooks' notice of the decision reads (its callback_url), and whether the decider
# is in the request's approver and escalation groups (one statement, not one more per group)
_LOCKED = Prepared(ApprovalRequest, lambda pk, user: ApprovalRequest.objects.select_for_update(of=("self",))
                   .select_related("approver_group", "escalation_group", "requester", "outside")
                   .annotate(in_approver_group=_member(user, "approver_group_id"),
                             in_escalation_group=_member(user, "escalation_group_id")).filter(pk=pk),
                   arity=2, types=(str, int))


def _lock(request_id, user):
    """The request under its lock, and the groups of it that `user` is in (group ids)."""
    req = _LOCKED.one(str(request_id), user.pk or 0)
    if req is None:
        raise NotFound(_("no such request"))
    return req, [group for group, member in ((req.approver_group_id, req.in_approver_group),
                                             (req.escalation_group_id, req.in_escalation_group)) if member]


def decide(request_id, user, decision, arguments=None, feedback="", always_allow_in_thread=False, via="",
           resolve_here=None, in_time=False, seen=""):
    """Approve (optionally with edited arguments), reject, or respond (guidance for the model instead
    of a decision: the call does not run). Raises DecisionError subclasses; DecisionNotAllowed for an
    answer the request's policy does not offer (an edit is an approval with changed arguments).
    `via`: how it was given when not signed in as usual (e.g. a mailed link), kept in the audit trail.
    `resolve_here(req)`: the caller records the decision's effect on its run itself, in its own
    transaction, which holds the decision and is rolled back whole on any error (the AG-UI resume):
    called instead of approval_resolved after commit; no savepoint of the decision's own (two round
    trips); a late decision's expiry is left to the caller (this refusal spoils its transaction).
    `in_time`: the decision was made before the deadline and sent later (a held decision's release).
    `seen`: the digest of the arguments the decider saw; an approval is refused (ArgumentsChanged) once
    they have been edited, rather than counted for arguments they never saw.

    Quorum: `required_approvals` distinct approvers of the same arguments (by hash); an edit
    withdraws approvals of other arguments; any rejection rejects; any response answers.
    """
    if decision not in Decision.Kind.values:
        message = _("decision must be approve, reject or respond")
        raise DecisionError(message, {"decision": [message]})
    if arguments is not None and not isinstance(arguments, dict):
        message = _("arguments must be an object")
        raise InvalidArguments(message, {"__root__": [message]})
    feedback = (feedback or "").strip()
    try:
        return _decide(request_id, user, decision, arguments, feedback, always_allow_in_thread, via,
                       resolve_here, in_time, seen)
    except _PastDeadline:
        # A late decision is refused and the deadline's outcome recorded now, in a transaction of
        # its own: raised inside the decision's, the expiry would have been rolled back with it.
        if resolve_here is None:
            expire(request_id)
        raise RequestExpired(_("request expired")) from None


class _PastDeadline(Exception):
    pass


DECIDED_FIELDS = ("status", "feedback", "final_arguments", "decided_by_id", "decided_at", "context")
# what a decision changes (the row is locked): not all 30 columns, compiled once (agui_project/queries)
_DECIDED = PreparedUpdate(ApprovalRequest, lambda pk: ApprovalRequest.objects.filter(pk=pk))


def _decide(request_id, user, decision, arguments, feedback, always_allow_in_thread, via, resolve_here, in_time,
            seen):
    with transaction.atomic(savepoint=resolve_here is None):
        req, group_ids = _lock(request_id, user)
        if not can_decide(user, req, group_ids):
            raise Forbidden(_("you may not decide this request"))
        if req.status != Status.PENDING:
            late = RequestExpired if req.status == Status.EXPIRED else NotPending
            raise late(_("request already %(status)s") % {"status": req.get_status_display().lower()})
        if req.expires_at and req.expires_at <= timezone.now() and not in_time:
            raise _PastDeadline
        if always_allow_in_thread and (decision != Decision.Kind.APPROVE or req.approver_kind != ApproverKind.REQUESTER
                                       or not req.thread_ref):
            raise DecisionError(_("'always allow in this thread' applies only when you approve your own request "
                                  "in a thread"), {"always_allow_in_thread": [_("not available for this request")]})
        before = _snapshot(req)
        current = req.current_arguments
        described = ()  # the headline's fields, when an edit describes the call anew (_describe)
        if seen and decision == Decision.Kind.APPROVE and arguments_hash(current) != seen:
            raise ArgumentsChanged(_("the arguments were edited after you read them: read them again and decide"))
        if decision != Decision.Kind.APPROVE:
            _refuse_unless_allowed(req, decision)
        elif not req.requester.is_active:
            # tools act for the requester: an account switched off (someone who left) had its pending
            # calls approved and run as it; a rejection still ends the paused run
            message = _("The requester's account is switched off, so this call cannot run for them; reject it.")
            raise RequesterInactive(message, {"decision": [message]})

        if decision == Decision.Kind.RESPOND:
            if says_nothing(feedback):  # a zero-width space is no guidance
                raise FeedbackRequired(_("write the guidance the agent should follow"),
                                       {"feedback": [_("required to answer with guidance")]})
            made = _DECISION_ROW.add(request=req, user=user, decision=decision, feedback=feedback)
            _move(req, Status.RESPONDED)
            req.feedback = feedback
            approvals = None
        elif decision == Decision.Kind.REJECT:
            if req.approver_kind == ApproverKind.GROUP and says_nothing(feedback):  # nor a reason
                raise FeedbackRequired(_("feedback is required to reject"), {"feedback": [_("required to reject")]})
            made = _DECISION_ROW.add(request=req, user=user, decision=decision, feedback=feedback)
            _move(req, Status.REJECTED)
            req.feedback = feedback
            approvals = None
        else:
            if arguments is not None:
                defaults = registry.get(req.tool_name)
                if defaults is None and req.schema:  # an outside agent's tool: the schema it was asked with
                    defaults = schemas.defaults_for(req)
                if defaults is None:
                    raise InvalidArguments(_("this tool's arguments cannot be edited"),
                                           {"arguments": [_("unknown tool")]})
                try:
                    proposed = defaults.validate(arguments, requester=req.requester)
                except registry.ArgumentsInvalid as exc:
                    _refuse_unless_allowed(req, "edit")  # not the arguments that stand: an edit, offered or not
                    raise InvalidArguments(_("The edited arguments are not valid"), exc.errors,
                                           reader_schema.labels(req.tool_name)) from exc
                if arguments_hash(proposed) != arguments_hash(current):
                    _refuse_unless_allowed(req, "edit")  # an edit the policy does not offer is not judged
                # anything but the arguments as asked and never edited is judged by the policy in force: an
                # edit back to the arguments first asked too (a policy changed since may block them)
                if arguments_hash(proposed) != arguments_hash(req.arguments) or req.final_arguments is not None:
                    _check_edit(req, defaults, proposed)
            else:
                proposed = current
            # the same arguments are the same JSON (what an approval's digest records), not Python's
            # equality: True == 1 and 1 == 1.0 made an edit pass as no edit where none was allowed,
            # and an approval of 1.0 for 1 counted for neither
            digest = arguments_hash(proposed)
            edited = digest != arguments_hash(current)
            _refuse_unless_allowed(req, "edit" if edited else "approve")
            now = timezone.now()

            def active():  # built only when asked: most decisions (one approver, no edit) never are
                return req.decisions.filter(decision=Decision.Kind.APPROVE, withdrawn_at__isnull=True)

            if edited:
                withdrawn = list(active().exclude(arguments_hash=digest).values_list("user__username", flat=True))
                if withdrawn:
                    active().exclude(arguments_hash=digest).update(withdrawn_at=now)
                    _audit(Action.WITHDRAWN, req, actor=user, before={"approved_by": withdrawn},
                           after={"reason": "the arguments were edited", "arguments": proposed})
                _audit(Action.EDITED, req, actor=user, before={"arguments": current}, after={"arguments": proposed})
                # an edit back to the arguments asked stores them as asked: the inbox list compares the two
                # in the database, where on SQLite JSON is text and key order counts
                req.final_arguments = req.arguments if digest == arguments_hash(req.arguments) else proposed
                described = _describe(req, defaults, proposed)
            # one approval required: a pending request has none yet (the first one decides, and
            # nothing returns to pending), so there is nothing to look up and this one is the quorum
            single = req.required_approvals <= 1
            if not single:  # approvals of those who may no longer decide it stop counting (selectors.quorum), for good
                earlier = list(active().exclude(user=user).select_related("user"))
                gone = selectors.may_no_longer_decide(approval=req, decisions=earlier)
                if gone:
                    active().filter(user__in=gone).update(withdrawn_at=now)
                    _audit(Action.WITHDRAWN, req, actor=user,
                           before={"approved_by": sorted({d.user.username for d in earlier if d.user_id in gone})},
                           after={"reason": "the approvers may no longer decide this request (account switched "
                                            "off, no longer in a group that decides it, or four eyes)"})
            if not single:
                # a quorum counts people: an approval by another account of the decider's (their address,
                # access.same_person) is theirs already, as selectors.quorum counts it
                mine = Q(user=user) | (Q(same_address("user__email", user.email)) if mail_key(user.email) else Q())
                if active().filter(mine, arguments_hash=digest).exists():
                    raise AlreadyApproved(_("you already approved these arguments; another approver is needed"))
            made = _DECISION_ROW.add(
                request=req, user=user, decision=decision, arguments=proposed, arguments_hash=digest, feedback=feedback
            )
            # quorum: distinct approvers of exactly these arguments (the current ones, after any edit)
            approvals = 1 if single else selectors.quorum(approval=selectors.with_decisions(approval=req))["have"]
            if feedback:
                req.feedback = feedback
            if approvals >= req.required_approvals:
                _move(req, Status.MODIFIED if digest != arguments_hash(req.arguments) else Status.APPROVED)
                req.final_arguments = proposed
        if req.required_approvals <= 1:  # it had none (any decision of it decides it): this is its only one
            prefetched(req, "decisions", [made])
        if req.status != Status.PENDING:
            req.decided_by, req.decided_at = user, timezone.now()
        with unanswered():  # the row is locked: its count is known, and it goes with the next statement
            _DECIDED.update(req.pk, **{name: getattr(req, name) for name in DECIDED_FIELDS + described})
        _audit(Action.DECIDED, req, actor=user, before=before, after={
            **_snapshot(req), "decision": decision, "approvals": approvals, "required": req.required_approvals,
            **({"via": via} if via else {}),
        })
        if always_allow_in_thread:
            _grant(req, user)
        if req.status != Status.PENDING:
            _resolved(req, "decided", resolve_here)
        else:
            _tell_inbox("decided", req)
    return req


def described(defaults, arguments, requester):
    """{"said", "description", "impact"} of a call as its tool says it (what these arguments do, in
    every language), or None for a tool that describes none (an outside agent's own tool: its words
    are all there is). Whoever asks, a tool of this project heads its request in its own words."""
    if defaults is None or defaults.describe is None:
        return None
    said = defaults.describe(arguments, requester)
    words = said.get(settings.LANGUAGE_CODE) or next(iter(said.values()), {})
    return {"said": said, "description": words.get("description", ""), "impact": words.get("impact", "")}


def _describe(req, defaults, proposed):
    """The request's headline says what its current arguments do: the list, the request page and a
    bulk selection showed the asked call's words over an edit another approver still had to approve.
    Returns the fields it changed, which the decision's UPDATE writes."""
    words = described(defaults, proposed, req.requester)
    if words is None:  # an outside agent's words: its own, of the call it asked
        return ()
    req.said, req.description, req.impact = words["said"], words["description"], words["impact"]
    return ("said", "description", "impact")


def _check_edit(req, defaults, proposed):
    """The arguments that execute have passed the policy that applies to them: an edit is judged
    like a new call from the same requester, agent and thread. Refused (rather than re-routed, so
    nobody's decision is silently handed to someone else) when it is blocked, or needs another
    group, more approvals or a higher risk than this request has; the same approver goes on."""
    if defaults.authorize is not None:
        try:
            objects = defaults.authorize(proposed, req.requester)
        except registry.ArgumentsInvalid as exc:
            raise InvalidArguments(_("the edited arguments act on something that is not the requester's"),
                                   exc.errors) from exc
        req.context = {**(req.context or {}), "objects": objects}
    refusal = refusals.said(defaults, proposed, req.requester)
    if refusal:  # the tool says now what it would answer once approved: nothing would move
        raise ToolWouldRefuse(refusal, {})
    verdict = policy.evaluate(req.tool_name, proposed,
                              {"user": req.requester, "agent": req.agent_name, "thread": req.thread_ref})
    rule = rule_words.rule_part(verdict.matched_rule)  # "policy: rule 1 (x): deny" -> "rule 1 (x): blocked"
    if verdict.action == "deny":  # a reviewer reads it: in their language (the rule's name as written)
        message = _("These arguments are blocked by policy (%(rule)s), so the edit was refused.") % {"rule": rule}
        raise EditDenied(message, {"arguments": [message]})
    if verdict.action != "approve":
        return
    needs = []
    if verdict.approver_kind == ApproverKind.GROUP and verdict.group is not None \
            and verdict.group.pk != req.approver_group_id:
        needs.append(_("approval by %(group)s") % {"group": verdict.group.name})
    if verdict.required_approvals > req.required_approvals:
        needs.append(_("%(count)s approvals") % {"count": verdict.required_approvals})
    if RISK_ORDER.index(verdict.risk) > RISK_ORDER.index(req.risk):
        needs.append(_("a review at %(risk)s risk") % {"risk": Risk(verdict.risk).label})
    if needs:
        message = _("These arguments need %(needs)s (%(rule)s), which this request does not have. Approve the "
                    "arguments as they were, or reject the request with feedback.") % {
            "needs": get_text_list(needs, _("and")), "rule": rule}
        raise EditNeedsOtherApprover(message, {"arguments": [message]})


def bulk_decide(request_ids, user, decision, feedback="", visible=None):
    """Decide many requests with one reason; each on its own (own transaction), reported per item."""
    return _each(request_ids, user, visible,
                 lambda request_id, asked: {"status": decide(request_id, user, decision, feedback=feedback,
                                                             seen=asked).status})


def _each(request_ids, user, visible, act):
    """act(request_id, asked) -> fields of its item, for each visible request (at most BULK_LIMIT); a
    DecisionError is that item's failure, not the batch's. `asked`: the digest of the arguments as
    asked, the `seen` of a bulk approval: a list shows requests as they were asked, so one another
    approver has edited is refused (ArgumentsChanged), to be read on its page. Before, a bulk
    approval counted for an edit its reviewer had never read (a quorum of two made by one of them)."""
    ids = list(dict.fromkeys(str(i) for i in request_ids))[:BULK_LIMIT]
    asked = {pk: arguments_hash(arguments) for pk, arguments in
             (visible if visible is not None else selectors.visible_requests(user=user)).filter(pk__in=ids)
             .values_list("pk", "arguments")}
    results = []
    for request_id in ids:
        item = {"id": request_id}
        try:
            if request_id not in asked:
                raise NotFound(_("no such request"))
            item.update(ok=True, **act(request_id, asked[request_id]))
        except DecisionError as exc:
            item.update(ok=False, code=exc.code, message=exc.message, errors=exc.errors or {})
        results.append(item)
    return results


# --- decisions with an undo window (the inbox pages) ------------------------------------------


class _DryRun(Exception):
    pass


def hold(request_id, user, decision, arguments=None, feedback="", seconds=None, seen=None):
    """A decision the reviewer may still undo for `seconds` (AGUI_UNDO_SECONDS), sent afterwards by
    release(). It is tried first, in a transaction rolled back (its notices and signals with it), so
    a refusal (not yours, decided meanwhile, a reason missing, an edit policy refuses) is raised now,
    to the person who made it. 0 seconds: decided at once (returns the request, not a hold).
    `seen`: as for decide(), the arguments the page showed; by default those standing now."""
    seconds = settings.AGUI_UNDO_SECONDS if seconds is None else seconds
    if seconds <= 0:
        return decide(request_id, user, decision, arguments=arguments, feedback=feedback, seen=seen or "")
    with transaction.atomic():
        # locked across the dry run and the hold (a savepoint's rollback drops its row locks): an
        # expiry either comes first, and the dry run refuses, or finds this hold and waits for it
        req = one(ApprovalRequest.objects.select_for_update().filter(pk=request_id))
        feedback = (feedback or "").strip()
        held = HeldDecision.objects.filter(request_id=request_id, user=user).first()
        if held is not None:
            # a second tab of the same reviewer (or a double click): the same decision is the one held;
            # another is refused. Replacing it told the first tab "Sent." of a decision never sent.
            if (held.decision, held.arguments, held.feedback) == (decision, arguments, feedback):
                return held
            raise AlreadyHeld(_("You decided this request a moment ago (%(decision)s), and it is sent when its "
                                "undo window closes. Undo it where you made it to decide otherwise.")
                              % {"decision": held.get_decision_display().lower()})
        seen = seen or (arguments_hash(req.current_arguments) if req else "")
        try:
            with transaction.atomic():
                decide(request_id, user, decision, arguments=arguments, feedback=feedback, seen=seen)
                raise _DryRun
        except _DryRun:
            pass
        held = HeldDecision.objects.create(request_id=request_id, user=user, decision=decision, arguments=arguments,
                                           feedback=feedback, seen=seen,
                                           due_at=timezone.now() + timedelta(seconds=seconds))
        transaction.on_commit(lambda: _countdown(HELD_TASK, held.pk, countdown=seconds))
        # the reviewer's own inbox drops the row at once (inbox.mine leaves out what they hold)
        transaction.on_commit(lambda: notify.user_notice(user.pk, "held", held.request))
    return held


def hold_many(request_ids, user, decision, feedback="", visible=None):
    """bulk_decide with an undo window: each request held on its own, reported per item."""
    def act(request_id, asked):
        held = hold(request_id, user, decision, feedback=feedback, seen=asked)
        if isinstance(held, HeldDecision):
            return {"held": held.pk, "due_at": held.due_at.isoformat(), "status": Status.PENDING}
        return {"status": held.status}

    return _each(request_ids, user, visible, act)


def undo(held_ids, user):
    """Recall held decisions of this user not yet sent; returns the ids of the requests recalled."""
    with transaction.atomic():
        rows = list(HeldDecision.objects.select_for_update().select_related("request")
                    .filter(pk__in=list(held_ids), user=user))
        HeldDecision.objects.filter(pk__in=[r.pk for r in rows]).delete()
        for r in rows:  # back in the reviewer's list
            transaction.on_commit(lambda req=r.request: notify.user_notice(user.pk, "undone", req))
    for r in rows:  # a deadline that passed while it was held applies now (no-op for the others)
        expire(r.request_id)
    return [r.request_id for r in rows]


def release(held_id, *, now=None):
    """Send a held decision whose window has closed: at most once (the row is deleted in the same
    transaction as the decision it becomes). A decision refused by then (someone else decided, the
    request expired) is dropped and logged: there is nothing left to decide."""
    now = now or timezone.now()
    with transaction.atomic():
        held = one(HeldDecision.objects.select_for_update().select_related("user")
                   .filter(pk=held_id, due_at__lte=now))
        if held is None:
            return None
        held_pk = held.pk
        held.delete()
        try:
            with transaction.atomic():
                # made before any deadline (its dry run checked), so a deadline inside the window has no say
                req = decide(held.request_id, held.user, held.decision, arguments=held.arguments,
                             feedback=held.feedback, in_time=True, seen=held.seen)
        except DecisionError as exc:
            log.info("held %s of %s by %s not sent: %s", held.decision, held.request_id, held.user, exc.message)
            expire(held.request_id)  # refused: a deadline that passed meanwhile applies now
            req = ApprovalRequest.objects.select_related("decided_by").get(pk=held.request_id)
            # the reviewer's page said "sent in 5 s": it says now that it was not, and who came first
            by = req.decided_by.get_username() if req.decided_by_id and req.decided_by_id != held.user_id else ""
            transaction.on_commit(lambda: notify.user_notice(held.user_id, "not_sent", req, held=held_pk, by=by))
            return None
        transaction.on_commit(lambda: notify.user_notice(held.user_id, "sent", req, held=held_pk))
        return req


def release_due():
    for held_id in selectors.due_held_ids():
        release(held_id)


# --- deadlines --------------------------------------------------------------------------------


def _expire_locked(req):
    before = _snapshot(req)
    reason = None
    if req.approves_at_deadline and req.requester.is_active:
        _move(req, Status.APPROVED)
        req.final_arguments = req.arguments
        req.feedback = "approved automatically when the deadline passed (low-risk policy)"
    else:
        _move(req, Status.EXPIRED)
        if req.timeout_action == TimeoutAction.APPROVE and req.final_arguments is not None:
            reason = ("the arguments were edited, and an edit runs only with the approvals the request needs: the "
                      "deadline approves a low-risk call as it was asked")
            req.feedback = ("timed out: a reviewer edited the arguments and the edit was not approved by enough "
                            "reviewers before the deadline, so it was not approved automatically and the action "
                            "was not taken")
        else:
            req.feedback = "timed out: nobody decided before the deadline, so the action was not taken"
    req.decided_at = timezone.now()
    req.save()
    _audit(Action.EXPIRED, req, before=before, after={**_snapshot(req), **({"reason": reason} if reason else {})})
    _resolved(req, "expired")


def expire(request_id):
    """Expire one request if it is pending and past its deadline; returns True when it did."""
    with transaction.atomic():
        req = one(ApprovalRequest.objects.select_for_update().filter(pk=request_id))
        if not req or req.status != Status.PENDING or not req.expires_at or req.expires_at > timezone.now():
            return False
        if HeldDecision.objects.filter(request=req).exists():
            return False  # decided in time, inside its undo window: release() sends it (or undo expires it)
        _expire_locked(req)
        return True


def _recipients(req):
    if req.approver_kind == ApproverKind.REQUESTER:
        return [req.requester.email] if req.requester.email else []
    # who has approved these arguments is not asked again ("awaits your decision": theirs is made)
    approved = _standing_approvals(req).values_list("user_id", flat=True)
    return mail.group_recipients(req.approver_group_id, requester=req.requester, approved=approved)


def remind(request_id):
    """Remind the approvers once, when remind_at has passed; returns True when it did."""
    with transaction.atomic():
        req = one(ApprovalRequest.objects.select_for_update().filter(pk=request_id))
        now = timezone.now()
        if (not req or req.status != Status.PENDING or not req.remind_at or req.remind_at > now
                or req.reminded_at or (req.expires_at and req.expires_at <= now)):
            return False
        req.reminded_at = now
        req.save(update_fields=["reminded_at"])
        _warn_if_nobody_decides(req)
        recipients = _recipients(req)
        _audit(Action.REMINDED, req, after={"recipients": recipients, "expires_at": req.expires_at.isoformat()})
        transaction.on_commit(lambda: notify.inbox_notice("reminded", req))
        mail_later("reminder", req, recipients)
        return True


def escalate(request_id):
    """Tell the escalation group (who may then decide) once escalate_at has passed."""
    with transaction.atomic():
        req = one(ApprovalRequest.objects.select_for_update(of=("self",)).select_related("escalation_group")
                  .filter(pk=request_id))
        now = timezone.now()
        if (not req or req.status != Status.PENDING or not req.escalate_at or req.escalate_at > now
                or req.escalated_at or not req.escalation_group_id or (req.expires_at and req.expires_at <= now)):
            return False
        req.escalated_at = now
        req.save(update_fields=["escalated_at"])
        _warn_if_nobody_decides(req)
        recipients = mail.group_recipients(req.escalation_group_id, requester=req.requester,
                                              kind="escalation")
        _audit(Action.ESCALATED, req, before={"deciders": [req.approver_label]},
               after={"deciders": [req.approver_label, req.escalation_group.name], "recipients": recipients})
        # with one-click links: the escalation group may decide now
        transaction.on_commit(lambda: notify.inbox_notice("escalated", req))
        mail_later("escalation", req)
        return True


def process_deadlines(request_id):
    """Whatever is due for one request: expiry wins; else escalation and reminder. Safe to run twice."""
    if expire(request_id):
        return ["expired"]
    done = []
    if escalate(request_id):
        done.append("escalated")
    if remind(request_id):
        done.append("reminded")
    return done


def cancel(request_id, user=None, reason="cancelled", resolve_here=None):
    """`resolve_here`: as for decide()."""
    with transaction.atomic(savepoint=resolve_here is None):
        req = ApprovalRequest.objects.select_for_update().get(pk=request_id)
        if req.status != Status.PENDING:
            raise NotPending(_("request already %(status)s") % {"status": req.get_status_display().lower()})
        before = _snapshot(req)
        _move(req, Status.CANCELLED)
        req.feedback, req.decided_by, req.decided_at = reason, user, timezone.now()
        req.save()
        _audit(Action.CANCELLED, req, actor=user, before=before, after=_snapshot(req))
        _resolved(req, "cancelled", resolve_here)
    return req


def withdraw_switched_off(*, requester_ids, limit=100):
    """The pending requests of these accounts, when switched off, -> cancelled, each as cancel() does
    (audit row, the inbox's notice, approval_resolved: its paused run ends; an outside agent's
    callback hears it), with REQUESTER_OFF as the reason. Tools act for the requester: nobody may
    approve these any more (decide() refuses RequesterInactive), and left pending they waited in
    every reviewer's inbox until a deadline. An account switched on again meanwhile keeps its requests.
    Returns the ids withdrawn (at most `limit`: the beat's sweep takes the rest)."""
    ids = list(ApprovalRequest.objects.filter(status=Status.PENDING, requester_id__in=list(requester_ids),
                                              requester__is_active=False).values_list("pk", flat=True)[:limit])
    done = []
    for pk in ids:
        try:
            cancel(pk, reason=REQUESTER_OFF)
            done.append(pk)
        except NotPending:  # decided (rejected) or expired meanwhile: that stands
            pass
    return done


# --- "always allow in this thread" -------------------------------------------------------------


def _grant(req, user):
    grant = ThreadGrant.objects.filter(tool_name=req.tool_name, thread_ref=req.thread_ref, user=user,
                                       revoked_at__isnull=True).first()
    if grant is None:
        try:
            with transaction.atomic():
                grant = ThreadGrant.objects.create(tool_name=req.tool_name, thread_ref=req.thread_ref, user=user,
                                                   source_request=req)
        except IntegrityError:  # a concurrent grant of the same tool in the same thread
            return ThreadGrant.objects.get(tool_name=req.tool_name, thread_ref=req.thread_ref, user=user,
                                           revoked_at__isnull=True)
        _audit(Action.GRANT_CREATED, req, actor=user, after=_grant_snapshot(grant))
    return grant


def _grant_snapshot(grant):
    return {"grant": grant.pk, "tool_name": grant.tool_name, "thread": grant.thread_ref,
            "user": grant.user.get_username(), "active": grant.active}


def revoke_grant(grant_id, user):
    with transaction.atomic():
        grant = one(selectors.visible_grants(user=user).select_for_update(of=("self",)).filter(pk=grant_id))
        if grant is None:
            raise NotFound(_("no such grant"))
        if grant.revoked_at:
            raise NotPending(_("this grant is already revoked"))
        _revoke(grant, user)
    return grant


def _revoke(grant, actor, **said):
    """A locked active grant -> revoked by `actor`, audited (`said`: more for its record, e.g. why)."""
    before = _grant_snapshot(grant)
    grant.revoked_at, grant.revoked_by = timezone.now(), actor
    grant.save(update_fields=["revoked_at", "revoked_by"])
    record(Action.GRANT_REVOKED, actor=actor, object_ref=f"grant:{grant.pk}", tool_name=grant.tool_name,
           request=grant.source_request, before=before, after={**_grant_snapshot(grant), **said})


# --- policies ---------------------------------------------------------------------------------

POLICY_FIELDS = ("mode", "conditions", "approver_kind", "approver_group", "required_approvals", "timeout_seconds",
                 "timeout_action", "risk", "reminder_fraction", "escalation_group", "escalation_fraction",
                 "allowed_decisions")


def policy_snapshot(row):
    if row is None:
        return None
    data = {f: getattr(row, f) for f in POLICY_FIELDS}
    data["approver_group"] = row.approver_group.name if row.approver_group_id else None
    data["escalation_group"] = row.escalation_group.name if row.escalation_group_id else None
    return data


def save_policy(tool_name, values, actor):
    """Create or change a tool's policy row; validated (ValidationError) and audited with before/after."""
    unknown = set(values) - set(POLICY_FIELDS)
    if unknown:
        raise ValidationError({f: ["not a policy field"] for f in unknown})
    with transaction.atomic():
        row = ToolPolicy.objects.select_for_update().filter(tool_name=tool_name).first()
        created = row is None
        before = policy_snapshot(row)
        if created:
            row = ToolPolicy(tool_name=tool_name)
        for field, value in values.items():
            setattr(row, field, value)
        row.full_clean()
        row.save()
        after = policy_snapshot(row)
        if before != after:
            record(Action.POLICY_CREATED if created else Action.POLICY_CHANGED, actor=actor,
                   object_ref=f"policy:{tool_name}", tool_name=tool_name, before=before, after=after)
            _withdraw_blocked(tool_name, actor)
            _revoke_grants(tool_name, actor)
            _policy_notice(tool_name, actor)
    return row


def _policy_notice(tool_name, actor):
    """After the commit, policy pages open elsewhere follow the change (static/js/policy-live.js): the
    list redraws its rows, an edit page says who changed the policy under its draft."""
    by = actor.get_username() if actor is not None else None
    transaction.on_commit(lambda: notify.operator_notice("policy.changed", {
        "policy": {"tool_name": tool_name, "by": by}}))


def _withdraw_blocked(tool_name, actor):
    """Pending requests are judged by the policy in force, as their call now stands (edits included):
    one it blocks is withdrawn (cancelled, the rule as the reason): an approval of the call as asked
    must not run what that policy denies (a tool set to deny mid-incident kept its pending calls
    approvable). One it routes otherwise is routed so (_reroute): to the group the policy now names,
    with a quorum and risk that never fall below the ones it was asked with. The old rule was kept, and
    one finance approval ran a call the policy now gave to two of treasury. Done when a policy
    changes, not on every decision."""
    pending = ApprovalRequest.objects.filter(tool_name=tool_name, status=Status.PENDING).select_related("requester")
    for req in pending:
        verdict = policy.evaluate(tool_name, req.current_arguments,
                                  {"user": req.requester, "agent": req.agent_name, "thread": req.thread_ref})
        if verdict.action == "deny":
            rule = verdict.matched_rule.split(": ", 1)[-1]
            cancel(req.pk, actor, reason=_("The policy now blocks this call (%(rule)s), so it was withdrawn.")
                   % {"rule": rule})
        elif verdict.action == "approve":
            _reroute(req.pk, verdict, actor)


def _revoke_grants(tool_name, actor):
    """A requester's "always allow in this thread" was given under the tool's policy of its moment:
    a changed policy is judged anew, so the grants of that tool end (revoked and audited, as a
    person's revocation is). Kept, a grant went on running a tool whose policy no longer let the
    requester approve it, or now said it was of higher risk."""
    for grant in ThreadGrant.objects.select_for_update(of=("self",)).select_related("user", "source_request").filter(
            tool_name=tool_name, revoked_at__isnull=True):
        _revoke(grant, actor, reason="the tool's policy changed")


def _asked(req):
    """The routing a request was asked with (its `requested` audit row): {"required_approvals", "risk"}."""
    row = AuditEvent.objects.filter(request=req, action=Action.REQUESTED).values_list("after", flat=True).first()
    return row or {}


def _reroute(request_id, verdict, actor):
    """A pending request given the stricter of the routing it was asked with and `verdict`'s: the
    verdict's group when it names another one (the approvals given so far were the old deciders':
    withdrawn), the larger quorum, the higher risk, no approval at the deadline unless both say so.
    Returns True when it changed."""
    with transaction.atomic():
        req = one(ApprovalRequest.objects.select_for_update(of=("self",))
                  .select_related("approver_group", "escalation_group").filter(pk=request_id))
        if req is None or req.status != Status.PENDING:
            return False
        before = {"deciders": req.approver_label, "required_approvals": req.required_approvals, "risk": req.risk,
                  "timeout_action": req.timeout_action, "allowed_decisions": list(req.allowed_decisions or ())}
        deciders = decider_group_ids(req)
        regroup = (verdict.approver_kind == ApproverKind.GROUP and verdict.group is not None
                   and verdict.group.pk != req.approver_group_id)
        # the stricter of the verdict and the request as it was asked, not as the last change left it:
        # a quorum raised a moment by mistake stuck (3 of a group of 2, a request that could only expire).
        # Never below the approvals it has (+1): lowered to them, it would stand approved undecided.
        asked = _asked(req)
        given = 0 if regroup else _standing_approvals(req).count()
        required = max(asked.get("required_approvals") or 1, verdict.required_approvals,
                       min(req.required_approvals, given + 1))
        risk = max(asked.get("risk") or req.risk, verdict.risk, key=RISK_ORDER.index)
        # what runs unattended is the policy in force's to say, and it may only take that away: a policy
        # that no longer approves at the deadline left its waiting requests approving themselves
        at_deadline = req.timeout_action if verdict.timeout_action == TimeoutAction.APPROVE else TimeoutAction.REJECT
        # the answers it offers, likewise only narrowed: an admin who takes `edit` away mid-incident takes it
        # from the waiting requests too (none in common: the policy's own set). A way to say no is never
        # narrowed away: one refusal runs nothing, and a request left with approve alone could not be stopped
        asked_with = list(req.allowed_decisions or DEFAULT_DECISIONS)
        allowed = [d for d in asked_with if d in verdict.allowed_decisions]
        if not set(allowed) & set(REFUSALS):
            allowed += [d for d in verdict.allowed_decisions if d in REFUSALS] or [d for d in asked_with if d in REFUSALS]
        allowed = allowed or list(verdict.allowed_decisions)
        if not regroup and required == req.required_approvals and risk == req.risk \
                and at_deadline == req.timeout_action and allowed == asked_with:
            return False
        told = req.escalation_group_id if req.escalated_at else None  # the group an escalation told
        if regroup:
            req.approver_kind, req.approver_group = ApproverKind.GROUP, verdict.group
            req.escalation_group = verdict.escalation_group
            # a request escalates once, and nothing resets that: one escalated already stays so, the group
            # the policy now names deciding at once (told below, when it is another one). Clearing it had the
            # next sweep escalate it again: a second escalation, its mails and notices to a group told before.
            if req.escalated_at is None and req.escalation_group is None:
                req.escalate_at = None
            elif req.escalated_at is None and req.escalate_at is None and req.expires_at:
                fraction = verdict.escalation_fraction or DEFAULT_ESCALATION_FRACTION
                req.escalate_at = req.created_at + (req.expires_at - req.created_at) * fraction
            withdrawn = list(req.decisions.filter(decision=Decision.Kind.APPROVE, withdrawn_at__isnull=True)
                             .values_list("user__username", flat=True))
            if withdrawn:
                req.decisions.filter(decision=Decision.Kind.APPROVE, withdrawn_at__isnull=True) \
                    .update(withdrawn_at=timezone.now())
                _audit(Action.WITHDRAWN, req, actor=actor, before={"approved_by": withdrawn},
                       after={"reason": "the policy routed the request to another group"})
        req.required_approvals, req.risk, req.timeout_action = required, risk, at_deadline
        req.allowed_decisions = allowed
        req.matched_rule = verdict.matched_rule[:200]
        req.save(update_fields=["approver_kind", "approver_group", "escalation_group", "escalated_at", "escalate_at",
                                "required_approvals", "risk", "timeout_action", "allowed_decisions", "matched_rule"])
        _audit(Action.POLICY_CHANGED, req, actor=actor, before=before, after={
            "deciders": req.approver_label, "required_approvals": required, "risk": risk, "timeout_action": at_deadline,
            "allowed_decisions": allowed, "matched_rule": req.matched_rule,
            **({"escalated_to": req.escalation_group.name} if req.escalated_at and req.escalation_group_id else {})})

        _warn_if_nobody_decides(req)
        former = [g for g in deciders if g not in decider_group_ids(req)]  # an escalation group kept still decides
        newly_told = bool(req.escalated_at and req.escalation_group_id and req.escalation_group_id != told)

        def after_commit():
            notify.inbox_notice("rerouted", req)  # the new group's inboxes list it
            if regroup:
                notify.gone_notice(req, former)

        transaction.on_commit(after_commit)
        if regroup:
            mail_later("request", req)  # and its members get their one-click links
        if newly_told:  # the escalation group it now has: told once, as its escalation would have
            mail_later("escalation", req)
    return True


def delete_policy(tool_name, actor):
    """Remove the override: the tool's code defaults apply again."""
    with transaction.atomic():
        row = ToolPolicy.objects.select_for_update().filter(tool_name=tool_name).first()
        if row is None:
            return False
        before = policy_snapshot(row)
        row.delete()
        defaults = registry.get(tool_name)
        record(Action.POLICY_DELETED, actor=actor, object_ref=f"policy:{tool_name}", tool_name=tool_name,
               before=before, after={"source": "default"} if defaults else None)
        _withdraw_blocked(tool_name, actor)
        _revoke_grants(tool_name, actor)
        _policy_notice(tool_name, actor)
    return True
