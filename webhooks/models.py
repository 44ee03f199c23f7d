import base64
import secrets
import uuid

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

EVENT_TYPES = ("approval.requested", "approval.decided", "approval.expired", "approval.escalated", "approval.rerouted",
               "tool.outcome")


def new_secret():
    """Standard Webhooks' form: `whsec_` + base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def new_message_id():
    return f"msg_{uuid.uuid4().hex}"


class WebhookEndpoint(models.Model):
    url = models.URLField(_("URL"), max_length=2000)
    events = models.JSONField(_("events"), default=list,
                              help_text=_("Event types sent here; empty means every type."))
    secret = models.CharField(_("signing secret"), max_length=100, default=new_secret, editable=False)
    description = models.CharField(_("description"), max_length=200, blank=True)
    is_active = models.BooleanField(_("active"), default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+", verbose_name=_("created by"))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("webhook endpoint")
        verbose_name_plural = _("webhook endpoints")
        ordering = ["id"]

    def __str__(self):
        return self.url

    def wants(self, event_type):
        return self.is_active and (not self.events or event_type in self.events)


class WebhookDelivery(models.Model):
    """One message to one URL (an endpoint's, or a request's callback_url). The row exists before
    the first attempt, so a receiver that is down, or a lost task, loses nothing."""

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        SUCCEEDED = "succeeded", _("Succeeded")
        FAILED = "failed", _("Failed")  # every attempt failed; an admin may replay it

    message_id = models.CharField(_("message id (webhook-id)"), max_length=40, unique=True,
                                  default=new_message_id)
    endpoint = models.ForeignKey(WebhookEndpoint, null=True, blank=True, on_delete=models.CASCADE,
                                 related_name="deliveries", verbose_name=_("endpoint"))
    url = models.URLField(_("URL"), max_length=2000)
    event_type = models.CharField(_("event type"), max_length=40)
    payload = models.JSONField(_("payload"))
    approval_ref = models.CharField(_("approval request"), max_length=64, blank=True, db_index=True)
    status = models.CharField(_("status"), max_length=12, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(_("attempts"), default=0)  # attempts since the last replay (the retry budget)
    next_attempt_at = models.DateTimeField(_("next attempt at"), null=True, blank=True)
    claimed_until = models.DateTimeField(_("claimed until"), null=True, blank=True)  # an attempt is in flight until then
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    delivered_at = models.DateTimeField(_("delivered at"), null=True, blank=True)

    class Meta:
        verbose_name = _("webhook delivery")
        verbose_name_plural = _("webhook deliveries")
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]

    def __str__(self):
        return f"{self.event_type} -> {self.url} ({self.status})"


class WebhookAttempt(models.Model):
    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_rows",
                                 verbose_name=_("delivery"))
    started_at = models.DateTimeField(_("started at"))
    latency_ms = models.PositiveIntegerField(_("latency (ms)"), default=0)
    response_status = models.PositiveSmallIntegerField(_("response code"), null=True, blank=True)
    response_body = models.TextField(_("response body"), blank=True)  # the first AGUI_WEBHOOK_RESPONSE_BODY_CHARS only
    error = models.CharField(_("error"), max_length=500, blank=True)
    succeeded = models.BooleanField(_("succeeded"), default=False)

    class Meta:
        verbose_name = _("webhook attempt")
        verbose_name_plural = _("webhook attempts")
        ordering = ["id"]

    def __str__(self):
        return f"attempt at {self.started_at:%Y-%m-%d %H:%M:%S} UTC"
