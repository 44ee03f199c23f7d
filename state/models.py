"""Versioned JSON documents. Knows nothing of agents: a document is named by an opaque key."""

from django.conf import settings
from django.db import models


class SharedState(models.Model):
    key = models.CharField(max_length=255, unique=True)  # e.g. "thread:<id>"
    version = models.PositiveIntegerField(default=0)
    data = models.JSONField(default=dict)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self):
        return f"{self.key}@{self.version}"


class StateChange(models.Model):
    class Source(models.TextChoices):
        AGENT = "agent"
        USER = "user"
        PREDICTION = "prediction"

    state = models.ForeignKey(SharedState, on_delete=models.CASCADE, related_name="changes")
    version = models.PositiveIntegerField()
    patch = models.JSONField()
    source = models.CharField(max_length=16, choices=Source.choices)
    run_ref = models.CharField(max_length=200, blank=True, default="")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["state", "version"], name="statechange_unique_version")]
