"""The policy vocabulary (modes, approvers, risks, timeout actions), apart from the models so that
the validator and the tool registry can use it without importing models (no import cycle)."""

from django.db import models


class Mode(models.TextChoices):
    ALWAYS = "always"
    NEVER = "never"
    CONDITIONAL = "conditional"
    DENY = "deny"
    MODEL = "model", "model (the model asks itself whether a person is needed)"


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
