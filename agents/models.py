"""Threads, runs, messages and tool calls. Ids are strings: AG-UI clients choose their own."""

import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


def new_id():
    return str(uuid.uuid4())


class Thread(models.Model):
    id = models.CharField(_("ID"), primary_key=True, max_length=200, default=new_id)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="threads",
                              verbose_name=_("owner"))
    agent = models.CharField(_("agent"), max_length=100)
    title = models.CharField(_("title"), max_length=200, blank=True, default="")
    message_seq = models.PositiveIntegerField(_("last message number"), default=0)  # last Message.seq handed out
    # when a notice for its chats could not be written to the stream (Redis away): a socket resuming
    # from a position before it gets the snapshots, not what followed (agents/runtime/notices.py)
    notice_lost_at = models.DateTimeField(_("notice lost at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("thread")
        verbose_name_plural = _("threads")
        indexes = [models.Index(fields=["owner", "-updated_at"], name="thread_owner_recent_idx")]  # thread list

    def __str__(self):
        return self.title or self.id

    @property
    def state_key(self):
        return f"thread:{self.id}"


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        INTERRUPTED = "interrupted", _("Interrupted")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")
        CANCELLED = "cancelled", _("Cancelled")

    ACTIVE = (Status.QUEUED, Status.RUNNING)
    # read by agents/transitions.py, the only writer of run statuses; failed, succeeded and
    # cancelled are final (a run declared worker_lost is never written back by its old worker)
    TRANSITIONS = {
        Status.QUEUED: {Status.RUNNING, Status.CANCELLED},
        Status.RUNNING: {Status.INTERRUPTED, Status.SUCCEEDED, Status.FAILED, Status.CANCELLED},
    }

    id = models.CharField(_("ID"), primary_key=True, max_length=200, default=new_id)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="runs",
                               verbose_name=_("thread"))
    parent_run = models.OneToOneField(  # one continuation per paused run
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="continuation",
        verbose_name=_("continues run"),
    )
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(_("error"), blank=True, default="")
    error_code = models.CharField(_("error code"), max_length=64, blank=True, default="")
    forwarded_props = models.JSONField(_("forwarded props"), default=dict, blank=True)
    stream_id = models.CharField(_("stream id"), max_length=40, blank=True, default="")  # entry id of its RUN_STARTED
    client_tools = models.JSONField(_("client tools"), default=list, db_default=[], blank=True)  # AG-UI frontend tools offered to the model
    context = models.JSONField(_("context"), default=list, db_default=[], blank=True)  # AG-UI context[] ({description, value}) for the model
    # client messages the run did not take, told in-stream (incoming.py): [{id, role, key}], so a
    # resent system message is told about once per thread, not every turn
    ignored_messages = models.JSONField(_("ignored messages"), default=list, db_default=[], blank=True)
    resume_run_id = models.CharField(_("continuation run id"), max_length=200, blank=True, default="", db_default="")  # the client's id for the continuation
    # (id, role, content, tool_call_id) a client sent with its resume: stored and answered by the
    # continuation once the resumed calls have their results (so the stored order is call, result, text)
    queued_messages = models.JSONField(_("queued messages"), default=list, db_default=[], blank=True)
    # the run's RUN_FINISHED / RUN_ERROR when Redis could not take it: published later by the beat
    undelivered_end = models.TextField(_("undelivered end"), blank=True, default="", db_default="")
    # a Stop of the running run that Redis could not take: passed on by the beat (services.pass_on_stops)
    stop_unsent_at = models.DateTimeField(_("stop not passed on since"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    started_at = models.DateTimeField(_("started at"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)

    class Meta:
        verbose_name = _("run")
        verbose_name_plural = _("runs")
        indexes = [
            models.Index(fields=["thread", "status"], name="run_thread_status_idx"),  # active run lookup
            # the runs a person started in a thread since a time: the hourly run limit's count
            # (services.within_hourly_runs); continuations have a parent and are not counted
            models.Index(fields=["thread", "created_at"], condition=models.Q(parent_run__isnull=True),
                         name="run_thread_started_idx"),
            models.Index(fields=["finished_at"], condition=~models.Q(undelivered_end=""), name="run_undelivered_idx"),
            models.Index(fields=["stop_unsent_at"], condition=models.Q(stop_unsent_at__isnull=False),
                         name="run_stop_unsent_idx"),
            # the beat's sweeps (recovery, announce, requeue, resume_stalled, the account-off sweep) read
            # only the runs not yet over: without it each read every run ever made, every 2-30 s. One
            # status per term (not IN): SQLite uses a partial index only when a term of the query is one
            # of the index's OR-ed terms
            models.Index(fields=["status", "created_at"], name="run_unfinished_idx",
                         condition=models.Q(status="queued") | models.Q(status="running")
                         | models.Q(status="interrupted")),
        ]

    def __str__(self):
        return f"{self.id} ({self.status})"


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", _("User")
        ASSISTANT = "assistant", _("Assistant")
        TOOL = "tool", _("Tool")
        SYSTEM = "system", _("System")

    id = models.CharField(_("ID"), primary_key=True, max_length=200, default=new_id)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="messages",
                               verbose_name=_("thread"))
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="messages",
                            verbose_name=_("run"))
    seq = models.PositiveIntegerField(_("number"))
    role = models.CharField(_("role"), max_length=16, choices=Role.choices)
    content = models.TextField(_("content"), blank=True, default="")
    tool_calls = models.JSONField(_("tool calls"), null=True, blank=True)  # OpenAI shape: [{id, type, function: {name, arguments}}]
    tool_call_id = models.CharField(_("tool call id"), max_length=200, blank=True, default="")
    # a user message with images: its AG-UI content parts (wire form); `content` keeps its text
    parts = models.JSONField(_("parts"), null=True, blank=True)
    error = models.TextField(_("error"), blank=True, default="", db_default="")  # a frontend tool's result: why the tool failed
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("message")
        verbose_name_plural = _("messages")
        ordering = ["seq"]
        constraints = [models.UniqueConstraint(fields=["thread", "seq"], name="message_thread_seq_uniq")]

    def __str__(self):
        return f"{self.role}: {self.content[:40]}"


class ToolCall(models.Model):
    class Status(models.TextChoices):
        PROPOSED = "proposed", _("Proposed")
        AWAITING_APPROVAL = "awaiting_approval", _("Awaiting Approval")
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")
        EXPIRED = "expired", _("Expired")
        CANCELLED = "cancelled", _("Cancelled")
        DENIED = "denied", _("Denied")
        CLIENT = "client", _("Client")  # a frontend tool: the AG-UI client runs it and sends the result
        AWAITING_INPUT = "awaiting_input", _("Awaiting Input")  # asked the person for information (InputRequest)
        INVALID = "invalid", _("Invalid")
        EXECUTING = "executing", _("Executing")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")
        OUTCOME_UNKNOWN = "outcome_unknown", _("Outcome Unknown")
        # the reviewer answered with guidance instead of deciding: not run, the model gets their words
        RESPONDED = "responded", _("Responded")
        # the same call (tool and argument hash) a reviewer rejected earlier in the thread, with no
        # word from the user since: refused at once, not sent for review again
        REPEATED = "repeated", _("Repeated")

    # the paused call's fate once its approval is resolved, before it is settled
    SETTLEABLE = (Status.APPROVED, Status.REJECTED, Status.RESPONDED, Status.EXPIRED, Status.CANCELLED)
    # a worker may start executing only from these (the conditional claim, agents/runtime/execution.py);
    # rejected, expired, cancelled and denied calls can never run
    CLAIMABLE = (Status.PROPOSED, Status.APPROVED)
    # the allowed transitions, read by agents/transitions.py (recovery: executing ->
    # outcome_unknown, or -> approved to retry; a handoff or a question is answered in place)
    TRANSITIONS = {
        Status.PROPOSED: {Status.AWAITING_APPROVAL, Status.AWAITING_INPUT, Status.EXECUTING, Status.DENIED,
                          Status.INVALID, Status.CLIENT, Status.SUCCEEDED, Status.REPEATED},
        Status.AWAITING_APPROVAL: {Status.APPROVED, Status.REJECTED, Status.RESPONDED, Status.EXPIRED,
                                   Status.CANCELLED},
        # -> approved: a call that paused inside its tool (ToolCall.resume) runs on once answered
        Status.AWAITING_INPUT: {Status.SUCCEEDED, Status.CANCELLED, Status.APPROVED},
        # -> failed: its tool is no longer offered when the continuation comes to run it (never executed)
        Status.APPROVED: {Status.EXECUTING, Status.FAILED},
        # -> awaiting_input: the tool stopped at a question and let its worker go (agents/runtime/inputs.park)
        Status.EXECUTING: {Status.SUCCEEDED, Status.FAILED, Status.OUTCOME_UNKNOWN, Status.APPROVED,
                           Status.AWAITING_INPUT},
        Status.CLIENT: {Status.SUCCEEDED, Status.FAILED},  # failed: the client's result carried an error
    }
    # a call that keeps its run paused until a person answers
    WAITING = (Status.AWAITING_APPROVAL, Status.AWAITING_INPUT)

    id = models.CharField(_("ID"), primary_key=True, max_length=200)  # the model's tool call id
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="tool_calls",
                               verbose_name=_("thread"))
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="tool_calls", verbose_name=_("run"))
    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="calls",
                                verbose_name=_("message"))
    name = models.CharField(_("tool name"), max_length=100)
    # the agent that made the call: a workflow's active participant, not the thread's workflow, as
    # policy judged it (the simulator replays it so; "" for calls recorded before it was kept)
    agent = models.CharField(_("agent"), max_length=100, blank=True, default="", db_default="")
    raw_arguments = models.TextField(_("raw arguments"), blank=True, default="")
    arguments = models.JSONField(_("arguments"), null=True, blank=True)  # validated
    final_arguments = models.JSONField(_("final arguments"), null=True, blank=True)  # what a reviewer approved
    status = models.CharField(_("status"), max_length=20, choices=Status.choices, default=Status.PROPOSED)
    approval_id = models.CharField(_("approval request"), max_length=64, blank=True, default="")
    feedback = models.TextField(_("feedback"), blank=True, default="")
    result = models.TextField(_("result"), blank=True, default="")
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0, db_default=0)  # claims to execute (retries of idempotent tools)
    claimed_at = models.DateTimeField(_("claimed at"), null=True, blank=True)  # the last claim (proposed|approved -> executing)
    # what a call that paused inside its tool needs to go on, written by the tool (an MCP server's
    # elicitation: the server's session and where its stream stands); JSON the tool alone reads
    resume = models.JSONField(_("resume"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("tool call")
        verbose_name_plural = _("tool calls")
        indexes = [
            models.Index(fields=["thread", "status"], name="toolcall_thread_status_idx"),  # settle pass
            # recovery sweep: calls still executing, claimed longer ago than the lease
            models.Index(fields=["status", "claimed_at"], name="toolcall_recovery_idx"),
            # the policy simulator (agents/simulation.py): a tool's latest calls,
            # WHERE name = %s AND arguments IS NOT NULL ORDER BY created_at DESC LIMIT n
            models.Index(fields=["name", "-created_at"], name="toolcall_name_recent_idx"),
        ]

    def __str__(self):
        return f"{self.name} ({self.status})"


class WorkflowInstance(models.Model):
    """A thread's multi-agent workflow (agents/runtime/workflows.py): where it is, how it got there.

    One per thread; a new case (after completion or cancellation) resets it in place.
    """

    class Status(models.TextChoices):  # AG-UI CUSTOM `status` {"state": ...}
        IN_PROGRESS = "in_progress", _("In Progress")
        IDLE = "idle", _("Idle")  # waiting for the person's next message
        PENDING_REQUESTS = "idle_with_pending_requests", _("Pending Requests")  # paused on an approval or a question
        COMPLETED = "completed", _("Completed")  # the termination condition held
        CANCELLED = "cancelled", _("Cancelled")
        FAILED = "failed", _("Failed")

    FINISHED = (Status.COMPLETED, Status.CANCELLED)

    thread = models.OneToOneField(Thread, on_delete=models.CASCADE, related_name="workflow",
                                  verbose_name=_("thread"))
    workflow = models.CharField(_("workflow"), max_length=100)
    status = models.CharField(_("status"), max_length=32, choices=Status.choices, default=Status.IN_PROGRESS)
    active_agent = models.CharField(_("active agent"), max_length=100)
    case = models.PositiveIntegerField(_("case"), default=1)  # bumped when a finished workflow takes a new request
    case_started_seq = models.PositiveIntegerField(_("case started after message"), default=0)  # Message.seq before the case began
    task = models.TextField(_("task"), blank=True, default="")  # the request that started the case
    path = models.JSONField(_("path"), default=list, blank=True)  # [{agent, from?, toolCallId?, runId, at}] in order
    agent_state = models.JSONField(_("agent state"), default=dict, blank=True)  # {agent: {turns, toolCalls, lastOutput, status}}
    output = models.TextField(_("output"), blank=True, default="")  # the final output once completed
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("workflow instance")
        verbose_name_plural = _("workflow instances")

    def __str__(self):
        return f"{self.workflow} on {self.thread_id}: {self.active_agent} ({self.status})"


class InputRequest(models.Model):
    """An agent asked the person for information: an AG-UI interrupt of reason `input_required`."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        ANSWERED = "answered", _("Answered")
        CANCELLED = "cancelled", _("Cancelled")

    id = models.CharField(_("ID"), primary_key=True, max_length=64, default=new_id, editable=False)
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="input_requests",
                               verbose_name=_("thread"))
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="input_requests",
                            verbose_name=_("run"))
    tool_call = models.OneToOneField(ToolCall, on_delete=models.CASCADE, related_name="input_request",
                                     verbose_name=_("tool call"))
    agent = models.CharField(_("agent"), max_length=100, blank=True, default="")
    message = models.TextField(_("question"))
    response_schema = models.JSONField(_("response schema"), default=dict)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.PENDING)
    answer = models.JSONField(_("answer"), null=True, blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        verbose_name=_("answered by"),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    answered_at = models.DateTimeField(_("answered at"), null=True, blank=True)

    class Meta:
        verbose_name = _("input request")
        verbose_name_plural = _("input requests")
        ordering = ["created_at"]
        # the thread's open questions: new-run check, AG-UI resume, snapshots
        indexes = [models.Index(fields=["thread", "status"], name="input_thread_status_idx")]

    def __str__(self):
        return f"{self.message[:40]} ({self.status})"


class ThreadIdClaim(models.Model):
    """Every thread id ever handed out; the row outlives its thread.

    Clients choose thread ids (AG-UI threadId, REST `id`), and other records name a thread by
    its id alone (the event stream `agui:thread:<id>`, approval requests, the shared state key):
    an id given to a second owner after a deletion would reach the first owner's leftovers.
    """

    id = models.CharField(_("ID"), primary_key=True, max_length=200)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              related_name="+", verbose_name=_("owner"))
    claimed_at = models.DateTimeField(_("claimed at"), auto_now_add=True)
    released_at = models.DateTimeField(_("released at"), null=True, blank=True)  # its thread was deleted

    class Meta:
        verbose_name = _("thread id claim")
        verbose_name_plural = _("thread id claims")

    def __str__(self):
        return self.id
