"""The demo agents' small domain: bank accounts, transfers, subscriptions."""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Account(models.Model):
    number = models.CharField(_("number"), max_length=32, unique=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                              verbose_name=_("owner"))
    currency = models.CharField(_("currency"), max_length=3, default="USD")
    balance = models.DecimalField(_("balance"), max_digits=14, decimal_places=2, default=0)

    class Meta:
        verbose_name = _("account")
        verbose_name_plural = _("accounts")

    def __str__(self):
        return f"{self.number}: {self.balance} {self.currency}"


class Transfer(models.Model):
    from_account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="outgoing",
                                     verbose_name=_("from account"))
    to_account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="incoming",
                                   verbose_name=_("to account"))
    amount = models.DecimalField(_("amount"), max_digits=14, decimal_places=2)
    currency = models.CharField(_("currency"), max_length=3)
    tool_call_ref = models.CharField(_("tool call"), max_length=200, unique=True)  # exactly once per approved call
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("transfer")
        verbose_name_plural = _("transfers")


class Subscription(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active", _("Active")
        CANCELLED = "cancelled", _("Cancelled")

    ref = models.CharField(_("reference"), max_length=64, unique=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, verbose_name=_("owner"))
    plan = models.CharField(_("plan"), max_length=100, default="Premium")
    status = models.CharField(_("status"), max_length=16, choices=Status.choices, default=Status.ACTIVE)
    cancelled_at = models.DateTimeField(_("cancelled at"), null=True, blank=True)

    class Meta:
        verbose_name = _("subscription")
        verbose_name_plural = _("subscriptions")


class Order(models.Model):
    """The support workflow's orders (agents/catalog/support.py)."""

    class Status(models.TextChoices):
        PROCESSING = "processing", _("Processing")
        SHIPPED = "shipped", _("Shipped")
        DELIVERED = "delivered", _("Delivered")
        REFUNDED = "refunded", _("Refunded")
        REPLACEMENT_SENT = "replacement_sent", _("Replacement Sent")

    number = models.CharField(_("number"), max_length=32, unique=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="orders",
                              verbose_name=_("owner"))
    item_name = models.CharField(_("item"), max_length=200)
    amount = models.DecimalField(_("amount"), max_digits=12, decimal_places=2)
    currency = models.CharField(_("currency"), max_length=3, default="USD")
    status = models.CharField(_("status"), max_length=20, choices=Status.choices, default=Status.DELIVERED)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("order")
        verbose_name_plural = _("orders")

    def __str__(self):
        return f"{self.number}: {self.item_name} ({self.status})"


class OrderAction(models.Model):
    """A refund or replacement the support agents carried out, exactly once per tool call."""

    class Kind(models.TextChoices):
        REFUND = "refund", _("Refund")
        REPLACEMENT = "replacement", _("Replacement")

    order = models.ForeignKey(Order, on_delete=models.PROTECT, related_name="actions",
                              verbose_name=_("order"))
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    amount = models.DecimalField(_("amount"), max_digits=12, decimal_places=2, null=True, blank=True)
    details = models.JSONField(_("details"), default=dict, blank=True)  # description, shipping preference, note
    client_context = models.JSONField(_("client context"), default=dict, blank=True)  # the AG-UI forwardedProps the tool received
    tool_call_ref = models.CharField(_("tool call"), max_length=200, unique=True)  # exactly once per approved call
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("order action")
        verbose_name_plural = _("order actions")
