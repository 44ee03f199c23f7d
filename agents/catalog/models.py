"""The demo agents' small domain: bank accounts, transfers, subscriptions."""

from django.conf import settings
from django.db import models


class Account(models.Model):
    number = models.CharField(max_length=32, unique=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    currency = models.CharField(max_length=3, default="USD")
    balance = models.DecimalField(max_digits=14, decimal_places=2, default=0)

    def __str__(self):
        return f"{self.number}: {self.balance} {self.currency}"


class Transfer(models.Model):
    from_account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="outgoing")
    to_account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="incoming")
    amount = models.DecimalField(max_digits=14, decimal_places=2)
    currency = models.CharField(max_length=3)
    tool_call_ref = models.CharField(max_length=200, unique=True)  # exactly once per approved call
    created_at = models.DateTimeField(auto_now_add=True)


class Subscription(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        CANCELLED = "cancelled"

    ref = models.CharField(max_length=64, unique=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    plan = models.CharField(max_length=100, default="Premium")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    cancelled_at = models.DateTimeField(null=True, blank=True)


class Order(models.Model):
    """The support workflow's orders (agents/catalog/support.py)."""

    class Status(models.TextChoices):
        PROCESSING = "processing"
        SHIPPED = "shipped"
        DELIVERED = "delivered"
        REFUNDED = "refunded"
        REPLACEMENT_SENT = "replacement_sent"

    number = models.CharField(max_length=32, unique=True)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="orders")
    item_name = models.CharField(max_length=200)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3, default="USD")
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.DELIVERED)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.number}: {self.item_name} ({self.status})"


class OrderAction(models.Model):
    """A refund or replacement the support agents carried out, exactly once per tool call."""

    class Kind(models.TextChoices):
        REFUND = "refund"
        REPLACEMENT = "replacement"

    order = models.ForeignKey(Order, on_delete=models.PROTECT, related_name="actions")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    amount = models.DecimalField(max_digits=12, decimal_places=2, null=True, blank=True)
    details = models.JSONField(default=dict, blank=True)  # description, shipping preference, note
    client_context = models.JSONField(default=dict, blank=True)  # the AG-UI forwardedProps the tool received
    tool_call_ref = models.CharField(max_length=200, unique=True)  # exactly once per approved call
    created_at = models.DateTimeField(auto_now_add=True)
