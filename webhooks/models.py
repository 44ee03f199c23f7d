import base64
import secrets
import uuid

from django.conf import settings
from django.db import models

EVENT_TYPES = ("approval.requested", "approval.decided", "approval.expired", "approval.escalated", "tool.outcome")


def new_secret():
    """Standard Webhooks' form: `whsec_` + base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def new_message_id():
    return f"msg_{uuid.uuid4().hex}"


class WebhookEndpoint(models.Model):
    url = models.URLField("URL", max_length=2000)
    events = models.JSONField(default=list, help_text="Event types sent here; empty means every type.")
    secret = models.CharField(max_length=100, default=new_secret, editable=False)
    description = models.CharField(max_length=200, blank=True)
    is_active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return self.url

    def wants(self, event_type):
        return self.is_active and (not self.events or event_type in self.events)


class WebhookDelivery(models.Model):
    """One message to one URL (an endpoint's, or a request's callback_url). The row exists before
    the first attempt, so a receiver that is down, or a lost task, loses nothing."""

    class Status(models.TextChoices):
        PENDING = "pending"
        SUCCEEDED = "succeeded"
        FAILED = "failed"  # every attempt failed; an admin may replay it

    message_id = models.CharField("message id (webhook-id)", max_length=40, unique=True, default=new_message_id)
    endpoint = models.ForeignKey(WebhookEndpoint, null=True, blank=True, on_delete=models.CASCADE,
                                 related_name="deliveries")
    url = models.URLField("URL", max_length=2000)
    event_type = models.CharField(max_length=40)
    payload = models.JSONField()
    approval_ref = models.CharField("approval request", max_length=64, blank=True, db_index=True)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)  # attempts since the last replay (the retry budget)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    claimed_until = models.DateTimeField(null=True, blank=True)  # an attempt is in flight until then
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]
        verbose_name_plural = "webhook deliveries"

    def __str__(self):
        return f"{self.event_type} -> {self.url} ({self.status})"


class WebhookAttempt(models.Model):
    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_rows")
    started_at = models.DateTimeField()
    latency_ms = models.PositiveIntegerField("latency (ms)", default=0)
    response_status = models.PositiveSmallIntegerField("response code", null=True, blank=True)
    response_body = models.TextField(blank=True)  # the first AGUI_WEBHOOK_RESPONSE_BODY_CHARS only
    error = models.CharField(max_length=500, blank=True)
    succeeded = models.BooleanField(default=False)

    class Meta:
        ordering = ["id"]

    def __str__(self):
        return f"attempt at {self.started_at:%Y-%m-%d %H:%M:%S} UTC"
