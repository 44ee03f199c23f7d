"""manage.py prune_webhook_deliveries: the delivered and failed deliveries older than --days go, with their
attempts, a batch at a time; pending ones and recent ones stay. The admin's page was the only way, and for
months of deliveries it listed each row it deleted (6 MB at 20,000) and logged each in django_admin_log."""

import io
from datetime import timedelta

import pytest
from django.contrib.admin.models import LogEntry
from django.core.management import call_command
from django.utils import timezone

from webhooks.models import WebhookAttempt, WebhookDelivery

pytestmark = pytest.mark.django_db


def delivery(n, status, age_days):
    made = WebhookDelivery.objects.create(message_id=f"msg_{n}", url="https://hooks.example.com/in",
                                          event_type="approval.decided", payload={"n": n}, status=status)
    WebhookDelivery.objects.filter(pk=made.pk).update(created_at=timezone.now() - timedelta(days=age_days))
    WebhookAttempt.objects.create(delivery=made, started_at=timezone.now(), succeeded=status == "succeeded")
    return made.pk


def test_old_finished_deliveries_go_with_their_attempts_and_nothing_else():
    old = [delivery(n, status, 40) for n, status in enumerate(["succeeded", "failed", "succeeded"])]
    kept = [delivery(10, "pending", 40), delivery(11, "succeeded", 5), delivery(12, "failed", 29)]
    out = io.StringIO()
    call_command("prune_webhook_deliveries", "--days", "30", "--batch", "2", stdout=out)
    assert out.getvalue().strip() == "3 webhook deliveries older than 30 days deleted"
    assert sorted(WebhookDelivery.objects.values_list("pk", flat=True)) == sorted(kept)
    assert not WebhookAttempt.objects.filter(delivery_id__in=old).exists()
    assert WebhookAttempt.objects.filter(delivery_id__in=kept).count() == 3
    assert not LogEntry.objects.exists()
