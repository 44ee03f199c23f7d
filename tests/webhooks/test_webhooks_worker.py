"""Webhooks through a real Celery worker and real Redis: the first attempt is the task queued on
commit, and a receiver that answers 500 gets the message again from the countdown task the
failure scheduled (backoff shortened to a fraction of a second for the test)."""

import time

import pytest
from django.db import close_old_connections

from tests.helpers import transfer_request
from webhooks.models import WebhookDelivery


def wait_until(check, timeout=20.0, what="condition"):
    """Wait on real state (a row) rather than a fixed sleep."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        close_old_connections()
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.django_db(transaction=True)
def test_a_worker_delivers_and_retries_after_a_500(demo, api, settings, receiver, celery_worker_live):
    settings.AGUI_WEBHOOK_BACKOFF_SECONDS = 0.2
    created = api("admin").post("/api/webhooks/", {"url": receiver.url, "events": ["approval.requested"]},
                                format="json")
    secret = created.json()["secret"]
    receiver.codes = [500]
    req = transfer_request(demo["alice"])
    receiver.wait_for(2)
    messages = receiver.verified(secret)
    assert [m["type"] for m in messages] == ["approval.requested"] * 2 and messages[0]["data"]["id"] == req.pk
    assert receiver.received[0][0]["webhook-id"] == receiver.received[1][0]["webhook-id"]
    wait_until(lambda: WebhookDelivery.objects.get().status == "succeeded", what="the delivery to be recorded")
    delivery = WebhookDelivery.objects.get()
    assert [a.response_status for a in delivery.attempt_rows.all()] == [500, 200] and delivery.attempts == 2
