"""The generic approval engine's records. Subjects (threads, runs, tool calls) are opaque refs."""

import hashlib
import json
import uuid

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _

from . import registry
from .choices import ApproverKind, Mode, Risk, TimeoutAction, default_decisions  # noqa: F401  (re-exported: the models' fields)
from .validators import policy_errors


def new_id():
    return str(uuid.uuid4())


def arguments_hash(arguments):
    """What an approval approves (Decision.arguments_hash): the same arguments, the same digest."""
    return hashlib.sha256(json.dumps(arguments, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def default_reminder_fraction():
    return 0.5


class ToolPolicy(models.Model):
    """An admin's override of a tool's code defaults (registered by agents at start-up).

    Saved only through approvals.services.save_policy / delete_policy (audited, before/after);
    clean() and the REST serializer share approvals.validators.policy_errors.
    """

    tool_name = models.CharField(max_length=100, unique=True)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.ALWAYS)
    conditions = models.JSONField(
        default=list, blank=True,
        help_text="Rules for the modes that ask when a rule says so (conditional, model), tried in order: the "
        "first that matches decides. Each has a name, a condition on the call (when) and an action: gate (a "
        'person decides), deny (blocked) or allow (runs at once), e.g. [{"name": "large", "when": {"path": '
        '"args.amount", "op": "gt", "value": 1000}, "action": "gate"}].',
    )
    approver_kind = models.CharField(max_length=16, choices=ApproverKind.choices, default=ApproverKind.GROUP)
    approver_group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.PROTECT)
    required_approvals = models.PositiveSmallIntegerField(default=1)
    timeout_seconds = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: the global default")
    timeout_action = models.CharField(
        max_length=16, choices=TimeoutAction.choices, default=TimeoutAction.REJECT,
        help_text="What happens when nobody decides in time; approve is allowed only for low-risk tools",
    )
    risk = models.CharField(max_length=16, choices=Risk.choices, default=Risk.MEDIUM)
    reminder_fraction = models.FloatField(
        null=True, blank=True, default=default_reminder_fraction,
        help_text="Remind the approvers when this fraction of the timeout has passed (empty: no reminder)",
    )
    escalation_group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        help_text="A second group told (and allowed to decide) when the request is still pending",
    )
    escalation_fraction = models.FloatField(
        null=True, blank=True, help_text="Escalate at this fraction of the timeout (empty: 0.75)"
    )
    allowed_decisions = models.JSONField(
        default=default_decisions, blank=True,
        help_text="What reviewers may answer: any of approve, edit (approve changed arguments), reject and "
        "respond (guidance for the agent instead of running the call)",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "tool policies"

    def __str__(self):
        return f"{self.tool_name}: {self.mode}"

    def clean(self):
        errors = policy_errors(self, schema=registry.schema_of(self.tool_name))
        if errors:
            raise ValidationError(errors)


class ApprovalRequest(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        APPROVED = "approved", _("Approved")
        MODIFIED = "modified", _("Approved with edits")  # capitalised like the others
        REJECTED = "rejected", _("Rejected")
        RESPONDED = "responded", _("Answered with guidance")  # not run: the model reads the reviewer's words
        EXPIRED = "expired", _("Expired")
        CANCELLED = "cancelled", _("Cancelled")
        DENIED = "denied", _("Denied")  # blocked by policy when asked through the API (never pending, approvals/outside.py)

    TRANSITIONS = {Status.PENDING: {Status.APPROVED, Status.MODIFIED, Status.REJECTED, Status.RESPONDED,
                                    Status.EXPIRED, Status.CANCELLED}}
    RESOLVED_APPROVED = {Status.APPROVED, Status.MODIFIED}

    id = models.CharField(primary_key=True, max_length=64, default=new_id, editable=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    tool_name = models.CharField(max_length=100)
    arguments = models.JSONField()
    schema = models.JSONField(default=dict)
    final_arguments = models.JSONField(null=True, blank=True)
    description = models.TextField()
    reason = models.TextField(blank=True, default="")
    reversible = models.BooleanField(default=False)
    impact = models.TextField(blank=True, default="")
    risk = models.CharField(max_length=16, choices=Risk.choices, default=Risk.MEDIUM)
    matched_rule = models.CharField(max_length=200, blank=True, default="")
    self_check = models.TextField(blank=True, default="")  # mode model: the model's reason a person is needed
    requester = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    approver_kind = models.CharField(max_length=16, choices=ApproverKind.choices)
    approver_group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.PROTECT)
    required_approvals = models.PositiveSmallIntegerField(default=1)
    expires_at = models.DateTimeField(null=True, blank=True)
    remind_at = models.DateTimeField(null=True, blank=True)
    reminded_at = models.DateTimeField(null=True, blank=True)
    escalation_group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    escalate_at = models.DateTimeField(null=True, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)
    timeout_action = models.CharField(max_length=16, choices=TimeoutAction.choices, default=TimeoutAction.REJECT)
    # what the reviewers may answer, from the policy when the request was made (choices.DECISIONS)
    allowed_decisions = models.JSONField(default=default_decisions, blank=True)
    agent_name = models.CharField(max_length=100, blank=True, default="")
    thread_ref = models.CharField(max_length=200, blank=True, default="")
    run_ref = models.CharField(max_length=200, blank=True, default="")
    tool_call_ref = models.CharField(max_length=200, blank=True, default="")
    context = models.JSONField(default=dict, blank=True)  # conversation excerpt etc.
    feedback = models.TextField(blank=True, default="")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # the inbox: pending first, newest first, per approver group
            models.Index(fields=["status", "approver_group", "-created_at"], name="approval_inbox_idx"),
            # "are all requests of this run resolved?" when a decision lands
            models.Index(fields=["run_ref", "status"], name="approval_run_idx"),
            # the chat's approval cards of a thread
            models.Index(fields=["thread_ref", "created_at"], name="approval_thread_idx"),
            # expiry sweep: pending requests past their deadline
            models.Index(fields=["status", "expires_at"], name="approval_expiry_idx"),
            # reminder sweep: pending requests past remind_at, not yet reminded
            models.Index(fields=["status", "remind_at"], name="approval_remind_idx"),
            # escalation sweep: pending requests past escalate_at, not yet escalated
            models.Index(fields=["status", "escalate_at"], name="approval_escalate_idx"),
            # the inbox (approvals/inbox.py), pending segment and single-status filters:
            # WHERE status = %s [AND created_at < cursor] ORDER BY created_at DESC, id DESC LIMIT 51
            models.Index(fields=["status", "-created_at", "-id"], name="approval_status_recent_idx"),
            # the inbox, "recent decisions" segment:
            # WHERE decided_at IS NOT NULL [AND decided_at < cursor] ORDER BY decided_at DESC, id DESC LIMIT 51
            models.Index(fields=["-decided_at", "-id"], name="approval_decided_recent_idx"),
            # the same for one outcome (?status=rejected), whatever the planner's statistics say:
            # WHERE status = %s AND decided_at IS NOT NULL ORDER BY decided_at DESC, id DESC LIMIT 51
            models.Index(fields=["status", "-decided_at", "-id"], name="approval_status_decided_idx"),
            # the inbox's tool filter over decisions (a rare tool must not walk every decision):
            # WHERE tool_name = %s AND decided_at IS NOT NULL ORDER BY decided_at DESC, id DESC LIMIT 51
            models.Index(fields=["tool_name", "-decided_at", "-id"], name="approval_tool_decided_idx"),
            # the same for the agent filter; also the filter's list of agents (index-only DISTINCT agent_name)
            models.Index(fields=["agent_name", "-decided_at", "-id"], name="approval_agent_decided_idx"),
            # /api/approvals/ with no status filter (an admin's whole list, a requester's own):
            # ORDER BY created_at DESC, id DESC LIMIT n (without it, every row was sorted: 90 ms at 100k)
            models.Index(fields=["-created_at", "-id"], name="approval_recent_idx"),
        ]

    def __str__(self):
        return f"{self.tool_name} ({self.status})"

    @property
    def approver_label(self):
        if self.approver_kind == ApproverKind.GROUP and self.approver_group_id:
            return self.approver_group.name
        return "requester"

    @property
    def is_pending(self):
        return self.status == self.Status.PENDING

    def allows(self, decision):
        """Whether reviewers may answer `decision` (approve, edit, reject, respond) to this request."""
        return decision in (self.allowed_decisions or ())

    @property
    def current_arguments(self):
        """What an approval now approves: the latest edit, else the model's arguments."""
        return self.final_arguments if self.final_arguments is not None else self.arguments


class Decision(models.Model):
    class Kind(models.TextChoices):
        APPROVE = "approve", _("Approve")  # with edited arguments too (then the request is approved with edits)
        REJECT = "reject", _("Reject")
        RESPOND = "respond", _("Respond")  # guidance instead of a decision: the call does not run

    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="decisions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decision = models.CharField(max_length=16, choices=Kind.choices)
    arguments = models.JSONField(null=True, blank=True)
    arguments_hash = models.CharField(max_length=64, blank=True, default="")
    feedback = models.TextField(blank=True, default="")
    # an approval of other arguments stops counting when a reviewer edits them (quorum by hash)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self):  # the admin's inline rows: who decided what, when
        verb = {self.Kind.APPROVE: "approved", self.Kind.RESPOND: "answered with guidance"}.get(self.decision,
                                                                                             "rejected")
        when = f" on {self.created_at:%Y-%m-%d %H:%M} UTC" if self.created_at else ""
        withdrawn = " (withdrawn: the arguments were edited after it)" if self.withdrawn_at else ""
        return f"{self.user.get_username()} {verb}{when}{withdrawn}"


class HeldDecision(models.Model):
    """A reviewer's decision inside its undo window: made, not yet sent. services.hold records it
    (after a dry run of the decision, so its errors show at once), services.undo deletes it, and the
    beat sweep sends it through services.decide once due (services.release_due). The delay lives
    here, not in the browser: a tab closed during the window neither loses nor doubles it."""

    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="held_decisions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    decision = models.CharField(max_length=16, choices=Decision.Kind.choices)
    arguments = models.JSONField(null=True, blank=True)  # edited arguments, or None: as they stand
    feedback = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    due_at = models.DateTimeField()

    class Meta:
        constraints = [
            # deciding again inside the window replaces the held decision
            models.UniqueConstraint(fields=["request", "user"], name="held_decision_one_per_reviewer"),
        ]
        indexes = [
            models.Index(fields=["due_at"], name="held_decision_due_idx"),  # selectors.due_held_ids
        ]


class AppendOnly(Exception):
    pass


class AuditQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnly("audit events are append-only")

    def delete(self):
        raise AppendOnly("audit events are append-only")

    def _raw_delete(self, using):  # the deletion collector's fast path
        raise AppendOnly("audit events are append-only")

    # bulk_update goes through update(); bulk_create stays: it only appends


class AuditEvent(models.Model):
    """Append-only: who did what, when, to what, with before/after.

    Neither the model, its queryset, the admin nor the API can change or delete a row.
    """

    class Action(models.TextChoices):
        REQUESTED = "requested", _("Requested")
        DECIDED = "decided", _("Decided")
        EDITED = "edited", _("Edited")  # an approval with changed arguments
        WITHDRAWN = "withdrawn", _("Withdrawn")  # approvals of earlier arguments stop counting
        EXPIRED = "expired", _("Expired")
        CANCELLED = "cancelled", _("Cancelled")
        REMINDED = "reminded", _("Reminded")
        ESCALATED = "escalated", _("Escalated")
        POLICY_CREATED = "policy_created", _("Policy Created")
        POLICY_CHANGED = "policy_changed", _("Policy Changed")
        POLICY_DELETED = "policy_deleted", _("Policy Deleted")
        GRANT_CREATED = "grant_created", _("Grant Created")
        GRANT_REVOKED = "grant_revoked", _("Grant Revoked")
        OUTCOME_UNKNOWN = "outcome_unknown", _("Outcome Unknown")  # a tool call interrupted mid-execution
        RETRIED = "retried", _("Retried")  # an idempotent tool call re-run after such an interruption
        OUTCOME_REPORTED = "outcome_reported", _("Outcome Reported")  # an outside agent said how its approved call went

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    # PROTECT: a person with history is deactivated, not deleted (the trail keeps who did it)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    action = models.CharField(max_length=32, choices=Action.choices)
    request = models.ForeignKey(ApprovalRequest, null=True, blank=True, on_delete=models.PROTECT, related_name="audit")
    tool_name = models.CharField(max_length=100, blank=True, default="")
    object_ref = models.CharField(max_length=200, blank=True, default="")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # /api/audit/?action=...: one kind of event, newest first
            models.Index(fields=["action", "-created_at"], name="audit_action_idx"),
            # /api/audit/?tool=...: a tool's history, incl. its policy changes
            models.Index(fields=["tool_name", "-created_at"], name="audit_tool_idx"),
        ]

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise AppendOnly("audit events are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnly("audit events are append-only")


class ThreadGrant(models.Model):
    """"Always allow in this thread": the requester waives their own confirmation of one tool.

    Only for requester-routed tools (a group's decision cannot be waived by the requester);
    revoked, never deleted, so the record stays visible.
    """

    tool_name = models.CharField(max_length=100)
    thread_ref = models.CharField(max_length=200)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    source_request = models.ForeignKey(ApprovalRequest, null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["user", "thread_ref", "tool_name"], condition=models.Q(revoked_at=None),
                                    name="grant_one_active_uniq"),
        ]
        indexes = [
            # policy.evaluate: an active grant for (user, thread, tool)?
            models.Index(fields=["thread_ref", "tool_name", "user"], name="grant_lookup_idx"),
        ]

    def __str__(self):
        return f"{self.tool_name} in {self.thread_ref} ({'revoked' if self.revoked_at else 'active'})"

    @property
    def active(self):
        return self.revoked_at is None


class OutsideCall(models.Model):
    """What an agent running elsewhere sent with its request (POST /api/approvals/,
    approvals/outside.py): its Idempotency-Key (a retry returns the same request), where to call
    back, and the outcome it reports once the call ran."""

    class Outcome(models.TextChoices):
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")
        UNKNOWN = "unknown", _("Unknown")

    request = models.OneToOneField(ApprovalRequest, primary_key=True, on_delete=models.CASCADE,
                                   related_name="outside")
    requester = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    idempotency_key = models.CharField(max_length=200, null=True, blank=True)
    body_hash = models.CharField(max_length=64)  # the same key with another body is refused (422)
    callback_url = models.URLField(max_length=2000, blank=True, default="")
    outcome = models.CharField(max_length=16, choices=Outcome.choices, blank=True, default="")
    outcome_detail = models.TextField(blank=True, default="")
    outcome_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            # a retry with the same key finds the first request (and two racing retries make one)
            models.UniqueConstraint(fields=["requester", "idempotency_key"], name="outside_idempotency_uniq",
                                    condition=models.Q(idempotency_key__isnull=False)),
        ]


class NotificationSetting(models.Model):
    """Which approval mails a person gets (approvals.mail_links reads it for request, reminder and
    escalation mails). No row: the default, a mail for every request their group is asked."""

    class Mail(models.TextChoices):
        REQUEST = "request", _("Mail me when a request needs my group")
        ESCALATION = "escalation", _("Only when a request is escalated to me")
        NEVER = "never", _("Never")

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="approval_notifications")
    mail = models.CharField(max_length=16, choices=Mail.choices, default=Mail.REQUEST)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"{self.user}: {self.get_mail_display()}"


class MailLink(models.Model):
    """The Approve and Reject links of one mail to one recipient carry this row's nonce, signed
    (approvals.mail_links): the row binds them to the request and the recipient, and `used_at`
    makes them single use (either link, once)."""

    nonce = models.CharField(primary_key=True, max_length=43)
    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="mail_links")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    used_at = models.DateTimeField(null=True, blank=True)
    used_decision = models.CharField(max_length=16, blank=True)

    def __str__(self):
        return f"mail link for {self.user} on {self.request_id}"
