"""The policy vocabulary (modes, approvers, risks, timeout actions), apart from the models so that
the validator and the tool registry can use it without importing models (no import cycle)."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class Mode(models.TextChoices):
    ALWAYS = "always", _("Always")
    NEVER = "never", _("Never")
    CONDITIONAL = "conditional", _("Conditional")
    DENY = "deny", _("Deny")
    MODEL = "model", _("model (the model asks itself whether a person is needed)")


# The modes in words for the people who choose them (policy console, Django admin); the stored values
# and the API keep the engine's names, and the field's choices stay as they are (no migration).
MODE_LABELS = {
    Mode.ALWAYS: _("Always ask: a person decides every call"),
    Mode.CONDITIONAL: _("Ask when a rule says so (no rule matches: it runs)"),
    Mode.MODEL: _("Ask when a rule says so, else the model's own check decides"),
    Mode.NEVER: _("Never ask: every call runs at once"),
    Mode.DENY: _("Block: no call runs"),
}


class ApproverKind(models.TextChoices):
    REQUESTER = "requester", _("Requester")
    GROUP = "group", _("Group")


class Risk(models.TextChoices):
    LOW = "low", _("Low")
    MEDIUM = "medium", _("Medium")
    HIGH = "high", _("High")
    CRITICAL = "critical", _("Critical")


RISK_ORDER = [Risk.LOW, Risk.MEDIUM, Risk.HIGH, Risk.CRITICAL]  # least to most


# What a reviewer may answer: approve, approve with edited arguments, reject, or respond (guidance
# for the model instead of a decision: the call does not run, the model reads the reviewer's words).
DECISIONS = ("approve", "edit", "reject", "respond")
DEFAULT_DECISIONS = ("approve", "edit", "reject")
# the answers that run nothing: a person asked keeps at least one of them
REFUSALS = ("reject", "respond")


def default_decisions():
    return list(DEFAULT_DECISIONS)


class TimeoutAction(models.TextChoices):
    REJECT = "reject", _("Reject")
    APPROVE = "approve", _("Approve")
