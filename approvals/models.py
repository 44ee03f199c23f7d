"""The generic approval engine's records. Subjects (threads, runs, tool calls) are opaque refs."""

import uuid

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models


def new_id():
    return str(uuid.uuid4())


class Mode(models.TextChoices):
    ALWAYS = "always"
    NEVER = "never"
    CONDITIONAL = "conditional"
    DENY = "deny"


class ApproverKind(models.TextChoices):
    REQUESTER = "requester"
    GROUP = "group"


class Risk(models.TextChoices):
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class TimeoutAction(models.TextChoices):
    REJECT = "reject"
    APPROVE = "approve"


class ToolPolicy(models.Model):
    """An admin's override of a tool's code defaults (registered by agents at start-up)."""

    tool_name = models.CharField(max_length=100, unique=True)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.ALWAYS)
    approver_kind = models.CharField(max_length=16, choices=ApproverKind.choices, default=ApproverKind.GROUP)
    approver_group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.PROTECT)
    required_approvals = models.PositiveSmallIntegerField(default=1)
    timeout_seconds = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: the global default")
    timeout_action = models.CharField(max_length=16, choices=TimeoutAction.choices, default=TimeoutAction.REJECT)
    risk = models.CharField(max_length=16, choices=Risk.choices, default=Risk.MEDIUM)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "tool policies"

    def __str__(self):
        return f"{self.tool_name}: {self.mode}"


class ApprovalRequest(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        APPROVED = "approved"
        MODIFIED = "modified", "approved with edits"
        REJECTED = "rejected"
        EXPIRED = "expired"
        CANCELLED = "cancelled"

    TRANSITIONS = {Status.PENDING: {Status.APPROVED, Status.MODIFIED, Status.REJECTED, Status.EXPIRED, Status.CANCELLED}}
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
    requester = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    approver_kind = models.CharField(max_length=16, choices=ApproverKind.choices)
    approver_group = models.ForeignKey(Group, null=True, blank=True, on_delete=models.PROTECT)
    required_approvals = models.PositiveSmallIntegerField(default=1)
    expires_at = models.DateTimeField(null=True, blank=True)
    timeout_action = models.CharField(max_length=16, choices=TimeoutAction.choices, default=TimeoutAction.REJECT)
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


class Decision(models.Model):
    class Kind(models.TextChoices):
        APPROVE = "approve"
        REJECT = "reject"

    request = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="decisions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decision = models.CharField(max_length=16, choices=Kind.choices)
    arguments = models.JSONField(null=True, blank=True)
    arguments_hash = models.CharField(max_length=64, blank=True, default="")
    feedback = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at"]


class AuditEvent(models.Model):
    """Append-only: who did what to which request, with before/after."""

    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    action = models.CharField(max_length=32)  # requested, decided, expired, cancelled, policy_changed
    request = models.ForeignKey(ApprovalRequest, null=True, blank=True, on_delete=models.PROTECT, related_name="audit")
    object_ref = models.CharField(max_length=200, blank=True, default="")
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def save(self, *args, **kwargs):
        if self.pk is not None:
            raise ValueError("audit events are append-only")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ValueError("audit events are append-only")
