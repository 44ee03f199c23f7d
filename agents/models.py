"""Threads, runs, messages and tool calls. Ids are strings: AG-UI clients choose their own."""

import uuid

from django.conf import settings
from django.db import models


def new_id():
    return str(uuid.uuid4())


class Thread(models.Model):
    id = models.CharField(primary_key=True, max_length=200, default=new_id)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="threads")
    agent = models.CharField(max_length=100)
    title = models.CharField(max_length=200, blank=True, default="")
    message_seq = models.PositiveIntegerField(default=0)  # last Message.seq handed out
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["owner", "-updated_at"], name="thread_owner_recent_idx")]  # thread list

    def __str__(self):
        return self.title or self.id

    @property
    def state_key(self):
        return f"thread:{self.id}"


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        INTERRUPTED = "interrupted"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    id = models.CharField(primary_key=True, max_length=200, default=new_id)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="runs")
    parent_run = models.OneToOneField(  # one continuation per paused run
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="continuation"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True, default="")
    error_code = models.CharField(max_length=64, blank=True, default="")
    forwarded_props = models.JSONField(default=dict, blank=True)
    stream_id = models.CharField(max_length=40, blank=True, default="")  # entry id of its RUN_STARTED
    client_tools = models.JSONField(default=list, blank=True)  # AG-UI frontend tools offered to the model
    resume_run_id = models.CharField(max_length=200, blank=True, default="")  # the client's id for the continuation
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["thread", "status"], name="run_thread_status_idx")]  # active run lookup

    def __str__(self):
        return f"{self.id} ({self.status})"


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"
        TOOL = "tool"
        SYSTEM = "system"

    id = models.CharField(primary_key=True, max_length=200, default=new_id)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="messages")
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages")
    seq = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True, default="")
    tool_calls = models.JSONField(null=True, blank=True)  # OpenAI shape: [{id, type, function: {name, arguments}}]
    tool_call_id = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["seq"]
        constraints = [models.UniqueConstraint(fields=["thread", "seq"], name="message_thread_seq_uniq")]

    def __str__(self):
        return f"{self.role}: {self.content[:40]}"


class ToolCall(models.Model):
    class Status(models.TextChoices):
        PROPOSED = "proposed"
        AWAITING_APPROVAL = "awaiting_approval"
        APPROVED = "approved"
        REJECTED = "rejected"
        EXPIRED = "expired"
        CANCELLED = "cancelled"
        DENIED = "denied"
        CLIENT = "client"  # a frontend tool: the AG-UI client runs it and sends the result
        INVALID = "invalid"
        EXECUTING = "executing"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        OUTCOME_UNKNOWN = "outcome_unknown"

    # the paused call's fate once its approval is resolved, before it is settled
    SETTLEABLE = (Status.APPROVED, Status.REJECTED, Status.EXPIRED, Status.CANCELLED)

    id = models.CharField(primary_key=True, max_length=200)  # the model's tool call id
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="tool_calls")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tool_calls")
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="calls")
    name = models.CharField(max_length=100)
    raw_arguments = models.TextField(blank=True, default="")
    arguments = models.JSONField(null=True, blank=True)  # validated
    final_arguments = models.JSONField(null=True, blank=True)  # what a reviewer approved
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PROPOSED)
    approval_id = models.CharField(max_length=64, blank=True, default="")
    feedback = models.TextField(blank=True, default="")
    result = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [models.Index(fields=["thread", "status"], name="toolcall_thread_status_idx")]  # settle pass

    def __str__(self):
        return f"{self.name} ({self.status})"
