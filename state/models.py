"""Versioned JSON documents. Knows nothing of agents: a document is named by an opaque key."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class SharedState(models.Model):
    key = models.CharField(_("key"), max_length=255, unique=True)  # e.g. "thread:<id>"
    version = models.PositiveIntegerField(_("version"), default=0)  # of the committed data; predictions do not bump it
    data = models.JSONField(_("data"), default=dict)  # committed; what clients see is data overlaid with live predictions
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("shared state")
        verbose_name_plural = _("shared states")

    def __str__(self):
        return f"{self.key}@{self.version}"


class StateChange(models.Model):
    """One change of a document: committed (a JSON Patch that produced `version`), or a prediction.

    A prediction (source=prediction) starts provisional: its `values` ({top-level key: value})
    overlay the committed data in what clients see, until it is committed (it then gets the
    patch it applied and the version it produced) or reverted.
    """

    class Source(models.TextChoices):
        AGENT = "agent", _("Agent")
        USER = "user", _("User")
        PREDICTION = "prediction", _("Prediction")

    class Status(models.TextChoices):
        COMMITTED = "committed", _("Committed")
        PROVISIONAL = "provisional", _("Provisional")
        REVERTED = "reverted", _("Reverted")

    TRANSITIONS = {Status.PROVISIONAL: {Status.COMMITTED, Status.REVERTED}}

    state = models.ForeignKey(SharedState, on_delete=models.CASCADE, related_name="changes",
                              verbose_name=_("state"))
    version = models.PositiveIntegerField(_("version"), null=True, blank=True)  # produced; null while provisional / if nothing changed
    base_version = models.PositiveIntegerField(_("base version"), default=0, db_default=0)  # the committed version it was made from
    patch = models.JSONField(_("patch"), default=list)  # RFC 6902, as applied to the committed data
    values = models.JSONField(_("values"), null=True, blank=True)  # a prediction's {top-level key: value}
    source = models.CharField(_("source"), max_length=16, choices=Source.choices)
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.COMMITTED,
                              db_default=Status.COMMITTED)
    ref = models.CharField(_("reference"), max_length=200, blank=True, default="", db_default="")  # what a prediction predicts (a tool call id)
    run_ref = models.CharField(_("run"), max_length=200, blank=True, default="")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             verbose_name=_("user"))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    resolved_at = models.DateTimeField(_("resolved at"), null=True, blank=True)

    class Meta:
        verbose_name = _("state change")
        verbose_name_plural = _("state changes")
        constraints = [
            models.UniqueConstraint(fields=["state", "version"], name="statechange_unique_version"),
            models.UniqueConstraint(
                fields=["state", "ref"], condition=models.Q(status="provisional"), name="statechange_one_live_prediction"
            ),
        ]
        indexes = [
            # the live predictions of a document, read to build what clients see
            models.Index(fields=["state", "status"], name="statechange_state_status_idx"),
        ]

    def __str__(self):
        return f"{self.source} {self.status} v{self.version}"
