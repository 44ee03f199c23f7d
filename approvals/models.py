"""The generic approval engine's records. Subjects (threads, runs, tool calls) are opaque refs."""

import hashlib
import json
import uuid

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import translation
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy  # "requester" alone is the inbox's word for who decides

from . import registry
from .choices import DEFAULT_DECISIONS, ApproverKind, Mode, Risk, TimeoutAction, default_decisions  # noqa: F401  (re-exported: the models' fields)
from .validators import policy_errors


def new_id():
    return str(uuid.uuid4())


def arguments_hash(arguments):
    """What an approval approves (Decision.arguments_hash): the same arguments, the same digest."""
    return hashlib.sha256(json.dumps(arguments, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def said(request, field):
    """A request's `description` or `impact` in the active language, where it was written in every
    language (said_in_every_language), else as stored. `request`: a row, or a dict of its values."""
    get = request.get if isinstance(request, dict) else lambda name, default=None: getattr(request, name, default)
    every = get("said") or {}
    if every:
        language = (translation.get_language() or settings.LANGUAGE_CODE).lower()
        words = every.get(language) or every.get(language.split("-")[0]) or {}
        if words.get(field):
            return words[field]
    return get(field) or ""


def default_reminder_fraction():
    return 0.5


class ToolPolicy(models.Model):
    """An admin's override of a tool's code defaults (registered by agents at start-up).

    Saved only through approvals.services.save_policy / delete_policy (audited, before/after);
    clean() and the REST serializer share approvals.validators.policy_errors.
    """

    tool_name = models.CharField(_("tool name"), max_length=100, unique=True)
    mode = models.CharField(_("mode"), max_length=16, choices=Mode.choices, default=Mode.ALWAYS)
    conditions = models.JSONField(
        _("conditions"), default=list, db_default=[], blank=True,
        help_text=_("Rules for the modes that ask when a rule says so (conditional, model), tried in order: the "
                    "first that matches decides. Each has a name, a condition on the call (when) and an action: "
                    'gate (a person decides), deny (blocked) or allow (runs at once), e.g. [{"name": "large", '
                    '"when": {"path": "args.amount", "op": "gt", "value": 1000}, "action": "gate"}].'),
    )
    approver_kind = models.CharField(_("who decides"), max_length=16, choices=ApproverKind.choices,
                                     default=ApproverKind.GROUP)
    approver_group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.PROTECT,
                                       verbose_name=_("deciding group"))
    required_approvals = models.PositiveSmallIntegerField(_("approvals needed"), default=1)
    timeout_seconds = models.PositiveIntegerField(_("time to decide (s)"), null=True, blank=True,
                                                  help_text=_("Empty: the global default"))
    timeout_action = models.CharField(
        _("at the deadline"), max_length=16, choices=TimeoutAction.choices, default=TimeoutAction.REJECT,
        help_text=_("What happens when nobody decides in time; approve is allowed only for low-risk tools"),
    )
    risk = models.CharField(_("risk"), max_length=16, choices=Risk.choices, default=Risk.MEDIUM)
    reminder_fraction = models.FloatField(
        _("reminder fraction"), null=True, blank=True, default=default_reminder_fraction,
        help_text=_("Remind the approvers when this fraction of the timeout has passed (empty: no reminder)"),
    )
    escalation_group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        verbose_name=_("escalates to"),
        help_text=_("A second group told (and allowed to decide) when the request is still pending"),
    )
    escalation_fraction = models.FloatField(
        _("escalation fraction"), null=True, blank=True,
        help_text=_("Escalate at this fraction of the timeout (empty: 0.75)"),
    )
    allowed_decisions = models.JSONField(
        _("allowed decisions"), default=default_decisions, db_default=list(DEFAULT_DECISIONS), blank=True,
        help_text=_("What reviewers may answer: any of approve, edit (approve changed arguments), reject and "
                    "respond (guidance for the agent instead of running the call)"),
    )
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("tool policy")
        verbose_name_plural = _("tool policies")

    def __str__(self):
        return f"{self.tool_name}: {self.mode}"

    def clean(self):
        errors = policy_errors(self, schema=registry.schema_of(self.tool_name))
        if errors:
            raise ValidationError(errors)


# The keys of the agent filter's indexes (selectors.visible_agent_names), one per branch of
# visible_requests: the group a request is routed to (NULL when its requester decides), the group
# it is escalated to (NULL until then), and its requester, where it names an agent. Expressions no
# other query writes, so that PostgreSQL's planner does not weigh these indexes for the inbox's
# ORs (plain (approver_group_id, approver_kind, agent_name) and (requester_id, agent_name) added
# 0.3-1 ms of planning to every such statement); selectors writes them as Django writes them here.
ROUTED_TO = models.Case(models.When(approver_kind=ApproverKind.GROUP, then=models.F("approver_group")))
ESCALATED_TO = models.Case(models.When(escalated_at__isnull=False, then=models.F("escalation_group")))
NAMED_BY = models.Case(models.When(agent_name__gt="", then=models.F("requester")))


# the reason a request of an account switched off is withdrawn with (services.withdraw_switched_off): its
# `feedback`, for the model, the API and the webhooks, in English as the engine's other reasons; pages say
# it in their own words (requester_was_off)
REQUESTER_OFF = "withdrawn: the requester's account was switched off, so the call will not run for them"


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

    id = models.CharField(_("ID"), primary_key=True, max_length=64, default=new_id, editable=False)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.PENDING)
    tool_name = models.CharField(_("tool name"), max_length=100)
    arguments = models.JSONField(_("arguments"))
    schema = models.JSONField(_("schema"), default=dict)
    final_arguments = models.JSONField(_("final arguments"), null=True, blank=True)
    description = models.TextField(_("description"))
    reason = models.TextField(_("reason"), blank=True, default="")
    reversible = models.BooleanField(_("reversible"), default=False)
    impact = models.TextField(_("impact"), blank=True, default="")
    # {language: {"description", "impact"}}: our own tools say a request in every language of the
    # site when it is made (`description` and `impact` hold the requester's), so that each reviewer
    # reads it in theirs (said()); empty for an outside agent's, which reads as it was sent
    said = models.JSONField(_("in every language"), default=dict, db_default={}, blank=True)
    risk = models.CharField(_("risk"), max_length=16, choices=Risk.choices, default=Risk.MEDIUM)
    matched_rule = models.CharField(_("rule that matched"), max_length=200, blank=True, default="")
    self_check = models.TextField(_("model self-check"), blank=True, default="", db_default="")  # mode model: the model's reason a person is needed
    requester = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+",
                                  verbose_name=pgettext_lazy("field", "requester"))
    approver_kind = models.CharField(_("who decides"), max_length=16, choices=ApproverKind.choices)
    approver_group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.PROTECT,
                                       verbose_name=_("deciding group"))
    required_approvals = models.PositiveSmallIntegerField(_("approvals needed"), default=1)
    expires_at = models.DateTimeField(_("deadline"), null=True, blank=True)
    remind_at = models.DateTimeField(_("remind at"), null=True, blank=True)
    reminded_at = models.DateTimeField(_("reminded at"), null=True, blank=True)
    escalation_group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.PROTECT,
                                         related_name="+", verbose_name=_("escalates to"))
    escalate_at = models.DateTimeField(_("escalate at"), null=True, blank=True)
    escalated_at = models.DateTimeField(_("escalated at"), null=True, blank=True)
    timeout_action = models.CharField(_("at the deadline"), max_length=16, choices=TimeoutAction.choices,
                                      default=TimeoutAction.REJECT)
    # what the reviewers may answer, from the policy when the request was made (choices.DECISIONS)
    allowed_decisions = models.JSONField(_("allowed decisions"), default=default_decisions,
                                         db_default=list(DEFAULT_DECISIONS), blank=True)
    agent_name = models.CharField(_("agent"), max_length=100, blank=True, default="")
    thread_ref = models.CharField(_("thread"), max_length=200, blank=True, default="")
    run_ref = models.CharField(_("run"), max_length=200, blank=True, default="")
    tool_call_ref = models.CharField(_("tool call"), max_length=200, blank=True, default="")
    context = models.JSONField(_("context"), default=dict, blank=True)  # conversation excerpt etc.
    feedback = models.TextField(_("feedback"), blank=True, default="")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        verbose_name=_("decided by"),
    )
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("approval request")
        verbose_name_plural = _("approval requests")
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
            # the same for the agent filter; also an admin's list of agents (selectors.visible_agent_names)
            models.Index(fields=["agent_name", "-decided_at", "-id"], name="approval_agent_decided_idx"),
            # the agent filter's list for a reader who is not an admin (selectors.visible_agent_names):
            # per branch of visible_requests and key (a group, the reader), the next name after the last:
            # WHERE CASE WHEN approver_kind = 'group' THEN approver_group_id ELSE NULL END = %s
            #   AND agent_name > %s ORDER BY agent_name LIMIT 1
            models.Index(ROUTED_TO, models.F("agent_name"), name="approval_routed_agent_idx"),
            # WHERE CASE WHEN escalated_at IS NOT NULL THEN escalation_group_id ELSE NULL END = %s AND ...
            models.Index(ESCALATED_TO, models.F("agent_name"), name="approval_escalated_agent_idx"),
            # WHERE CASE WHEN agent_name > '' THEN requester_id ELSE NULL END = %s AND ...
            models.Index(NAMED_BY, models.F("agent_name"), name="approval_requester_agent_idx"),
            # /api/approvals/ with no status filter (an admin's whole list, a requester's own):
            # ORDER BY created_at DESC, id DESC LIMIT n (without it, every row was sorted: 90 ms at 100k)
            models.Index(fields=["-created_at", "-id"], name="approval_recent_idx"),
        ]

    def __str__(self):  # the admin's title and breadcrumbs: the status in the reader's words
        return f"{self.tool_name} ({self.get_status_display()})"

    @property
    def approver_label(self):  # the engine's value (the API, the audit record); pages show approver_said
        if self.approver_kind == ApproverKind.GROUP and self.approver_group_id:
            return self.approver_group.name
        return "requester"

    @property
    def approver_said(self):
        """Who decides, in the reader's words: the group's name, or "the requester" in their language."""
        if self.approver_kind == ApproverKind.GROUP and self.approver_group_id:
            return self.approver_group.name
        return _("requester")

    @property
    def is_pending(self):
        return self.status == self.Status.PENDING

    def allows(self, decision):
        """Whether reviewers may answer `decision` (approve, edit, reject, respond) to this request."""
        return decision in (self.allowed_decisions or ())

    @property
    def person_feedback(self):
        """The feedback a reviewer wrote, for people to read; "" when `feedback` is the engine's
        own sentence for the model (an expiry, an approval at the deadline, a withdrawal's reason),
        in English on every page: the pages say those outcomes in their own words."""
        decided = (self.Status.APPROVED, self.Status.MODIFIED, self.Status.REJECTED, self.Status.RESPONDED)
        return self.feedback if self.status in decided and self.decided_by_id else ""

    @property
    def requester_was_off(self):
        """Whether it was withdrawn because its requester's account was switched off."""
        return self.status == self.Status.CANCELLED and self.feedback == REQUESTER_OFF

    @property
    def approves_at_deadline(self):
        """Whether the deadline approves it (services._expire_locked, and what the pages and mails say
        of its deadline): a low-risk policy's call as it was asked, never edited. The policy judged those
        arguments safe to run unattended; an edit is approved by the request's quorum only (one approver
        of two edited, and the deadline ran the edit with one approval)."""
        return self.timeout_action == TimeoutAction.APPROVE and self.risk == Risk.LOW and self.final_arguments is None

    @property
    def edited(self):
        """A reviewer edited the arguments: what runs (or would) is not what the agent asked. The
        inbox list asks the database the same (inbox.ROW_NAMES). By digest: 1 == 1.0 in Python."""
        return self.final_arguments is not None and arguments_hash(self.final_arguments) != arguments_hash(self.arguments)

    @property
    def current_arguments(self):
        """What an approval now approves: the latest edit, else the model's arguments."""
        return self.final_arguments if self.final_arguments is not None else self.arguments


class Decision(models.Model):
    class Kind(models.TextChoices):
        APPROVE = "approve", _("Approve")  # with edited arguments too (then the request is approved with edits)
        REJECT = "reject", _("Reject")
        RESPOND = "respond", _("Respond")  # guidance instead of a decision: the call does not run

    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="decisions",
                                verbose_name=_("request"))
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+",
                             verbose_name=_("reviewer"))
    decision = models.CharField(_("decision"), max_length=16, choices=Kind.choices)
    arguments = models.JSONField(_("arguments"), null=True, blank=True)
    arguments_hash = models.CharField(_("arguments hash"), max_length=64, blank=True, default="")
    feedback = models.TextField(_("feedback"), blank=True, default="")
    # an approval of other arguments stops counting when a reviewer edits them (quorum by hash)
    withdrawn_at = models.DateTimeField(_("withdrawn at"), null=True, blank=True)
    created_at = models.DateTimeField(_("decided at"), auto_now_add=True)

    class Meta:
        verbose_name = _("decision")
        verbose_name_plural = _("decisions")
        ordering = ["created_at"]

    @property
    def with_edits(self):
        """An approval of other arguments than the model asked for (the request's own, read with it)."""
        return (self.decision == self.Kind.APPROVE and bool(self.arguments_hash)
                and self.arguments_hash != arguments_hash(self.request.arguments))

    def __str__(self):  # the admin's inline rows: who decided what, when, in the admin's language
        if self.decision == self.Kind.RESPOND:
            verb = _("%(user)s answered with guidance")
        elif self.decision == self.Kind.REJECT:
            verb = _("%(user)s rejected")
        else:
            verb = _("%(user)s approved with edits") if self.with_edits else _("%(user)s approved")
        text = verb % {"user": self.user.get_username()}
        if self.created_at:
            text = _("%(decision)s on %(when)s UTC") % {"decision": text, "when": f"{self.created_at:%Y-%m-%d %H:%M}"}
        if self.withdrawn_at:
            text = _("%(decision)s (withdrawn: the arguments were edited after it)") % {"decision": text}
        return text


class MailDue(models.Model):
    """A request's mail that is due (services.mail_later): written with the change that makes it due,
    deleted once sent. Its task may be lost (a broker restarted without its queue): the beat sends
    what is still here after a grace (services.mails_due), so a mail is sent late, never not at all."""

    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="+",
                                verbose_name=_("request"))
    kind = models.CharField(_("kind"), max_length=16)  # mail.deliver's kinds
    args = models.JSONField(_("arguments"), default=list, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    claimed_until = models.DateTimeField(_("being sent until"), null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)

    class Meta:
        verbose_name = _("mail due")
        verbose_name_plural = _("mails due")
        indexes = [models.Index(fields=["created_at"], name="mail_due_created_idx")]


class HeldDecision(models.Model):
    """A reviewer's decision inside its undo window: made, not yet sent. services.hold records it
    (after a dry run of the decision, so its errors show at once), services.undo deletes it, and the
    beat sweep sends it through services.decide once due (services.release_due). The delay lives
    here, not in the browser: a tab closed during the window neither loses nor doubles it."""

    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="held_decisions",
                                verbose_name=_("request"))
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+",
                             verbose_name=_("reviewer"))
    decision = models.CharField(_("decision"), max_length=16, choices=Decision.Kind.choices)
    arguments = models.JSONField(_("arguments"), null=True, blank=True)  # edited arguments, or None: as they stand
    feedback = models.TextField(_("feedback"), blank=True, default="")
    # the digest of the arguments as they stood when it was made: an approval is of what was seen
    seen = models.CharField(_("arguments seen"), max_length=64, blank=True, default="", db_default="")
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    due_at = models.DateTimeField(_("due at"))

    class Meta:
        verbose_name = _("held decision")
        verbose_name_plural = _("held decisions")
        constraints = [
            # one held decision per reviewer and request: another is refused until it is undone (services.hold)
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
        # who could decide: accounts, their groups, groups' names (approvals/account_audit.py; staff read them)
        ACCOUNT_CREATED = "account_created", _("Account Created")
        ACCOUNT_CHANGED = "account_changed", _("Account Changed")  # address, name, switched off/on, staff, superuser
        ACCOUNT_DELETED = "account_deleted", _("Account Deleted")
        MEMBER_ADDED = "member_added", _("Added To Group")
        MEMBER_REMOVED = "member_removed", _("Removed From Group")
        GROUP_CREATED = "group_created", _("Group Created")
        GROUP_RENAMED = "group_renamed", _("Group Renamed")
        GROUP_DELETED = "group_deleted", _("Group Deleted")
        # a Django permission given to or taken from an account or a group (saving a policy asks one)
        PERMISSION_GRANTED = "permission_granted", _("Permission Given")
        PERMISSION_REVOKED = "permission_revoked", _("Permission Taken")
        # what the product is connected to: a webhook endpoint (hears every request's arguments), an MCP server
        # (a stdio one is a command run on this host)
        WEBHOOK_ADDED = "webhook_added", _("Webhook Added")
        WEBHOOK_CHANGED = "webhook_changed", _("Webhook Changed")
        WEBHOOK_DELETED = "webhook_deleted", _("Webhook Deleted")
        MCP_SERVER_ADDED = "mcp_server_added", _("MCP Server Added")
        MCP_SERVER_CHANGED = "mcp_server_changed", _("MCP Server Changed")
        MCP_SERVER_DELETED = "mcp_server_deleted", _("MCP Server Deleted")
        OUTCOME_UNKNOWN = "outcome_unknown", _("Outcome Unknown")  # a tool call interrupted mid-execution
        RETRIED = "retried", _("Retried")  # a tool call re-run after such an interruption (idempotent, or not done)
        # an outside agent said how its approved call went, or a tool's records did after its worker died
        OUTCOME_REPORTED = "outcome_reported", _("Outcome Reported")
        NO_DECIDERS = "no_deciders", _("Nobody To Decide")  # a group routed to has nobody who may decide (admins told)
        # fewer people may decide a request than the approvals it needs (admins told)
        TOO_FEW_DECIDERS = "too_few_deciders", _("Too Few To Decide")

    created_at = models.DateTimeField(_("created at"), auto_now_add=True, db_index=True)
    # PROTECT: a person with history is deactivated, not deleted (the trail keeps who did it)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT,
                              verbose_name=_("actor"))
    action = models.CharField(_("action"), max_length=32, choices=Action.choices)
    request = models.ForeignKey(ApprovalRequest, null=True, blank=True, on_delete=models.PROTECT,
                                related_name="audit", verbose_name=_("request"))
    tool_name = models.CharField(_("tool name"), max_length=100, blank=True, default="", db_default="")
    object_ref = models.CharField(_("object"), max_length=200, blank=True, default="")
    before = models.JSONField(_("before"), null=True, blank=True)
    after = models.JSONField(_("after"), null=True, blank=True)

    objects = AuditQuerySet.as_manager()

    class Meta:
        verbose_name = _("audit event")
        verbose_name_plural = _("audit events")
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

    tool_name = models.CharField(_("tool name"), max_length=100)
    thread_ref = models.CharField(_("thread"), max_length=200)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+",
                             verbose_name=_("user"))
    source_request = models.ForeignKey(ApprovalRequest, null=True, blank=True, on_delete=models.SET_NULL,
                                       related_name="+", verbose_name=_("given through"))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)
    revoked_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+", verbose_name=_("revoked by"))

    class Meta:
        verbose_name = _("thread grant")
        verbose_name_plural = _("thread grants")
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
                                   related_name="outside", verbose_name=_("request"))
    requester = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+",
                                  verbose_name=pgettext_lazy("field", "requester"))
    idempotency_key = models.CharField(_("idempotency key"), max_length=200, null=True, blank=True)
    body_hash = models.CharField(_("body hash"), max_length=64)  # the same key with another body is refused (422)
    callback_url = models.URLField(_("callback URL"), max_length=2000, blank=True, default="")
    outcome = models.CharField(_("outcome"), max_length=16, choices=Outcome.choices, blank=True, default="")
    outcome_detail = models.TextField(_("outcome detail"), blank=True, default="")
    outcome_at = models.DateTimeField(_("outcome reported at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("outside call")
        verbose_name_plural = _("outside calls")
        constraints = [
            # a retry with the same key finds the first request (and two racing retries make one)
            models.UniqueConstraint(fields=["requester", "idempotency_key"], name="outside_idempotency_uniq",
                                    condition=models.Q(idempotency_key__isnull=False)),
        ]
        # an account's requests of the last hour, counted before each new one (outside._within_hourly_limit)
        indexes = [models.Index(fields=["requester", "created_at"], name="outside_requester_recent")]


class NotificationSetting(models.Model):
    """Which approval mails a person gets (approvals.mail_links reads it for request, reminder and
    escalation mails). No row: the default, a mail for every request their group is asked."""

    class Mail(models.TextChoices):
        REQUEST = "request", _("Mail me when a request needs my group")
        ESCALATION = "escalation", _("Only when a request is escalated to me")
        NEVER = "never", _("Never")

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                                related_name="approval_notifications", verbose_name=_("user"))
    mail = models.CharField(_("mail"), max_length=16, choices=Mail.choices, default=Mail.REQUEST)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("notification setting")
        verbose_name_plural = _("notification settings")

    def __str__(self):
        return f"{self.user}: {self.get_mail_display()}"


class MailLink(models.Model):
    """The Approve and Reject links of one mail to one recipient carry this row's nonce, signed
    (approvals.mail_links): the row binds them to the request and the recipient, and `used_at`
    makes them single use (either link, once)."""

    nonce = models.CharField(_("nonce"), primary_key=True, max_length=43)
    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="mail_links",
                                verbose_name=_("request"))
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+",
                             verbose_name=_("recipient"))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    used_at = models.DateTimeField(_("used at"), null=True, blank=True)
    used_decision = models.CharField(_("used for"), max_length=16, blank=True)

    class Meta:
        verbose_name = _("mail link")
        verbose_name_plural = _("mail links")

    def __str__(self):
        return f"mail link for {self.user} on {self.request_id}"
