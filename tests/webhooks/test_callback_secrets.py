"""Each account's callbacks are signed with a secret of its own. With one site-wide callback secret,
whoever received one account's callbacks (an outside agent's operator) could sign a callback that another
account's agent verified: a forged approval.decided "approved" of a request nobody had approved."""

import pytest
from django.core.management import call_command
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from approvals import services as approval_services
from webhooks.models import WebhookDelivery

from .test_webhooks import queued, run_queued  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def ask(client, url):
    made = client.post("/api/approvals/", {
        "tool_name": "crm.delete_contact", "arguments": {"email": "a@example.com"}, "callback_url": url,
        "schema": {"type": "object", "properties": {"email": {"type": "string"}}}}, format="json")
    assert made.status_code == 201, made.content
    return made.json()["id"]


def test_one_accounts_callback_secret_signs_nothing_another_account_takes(demo, settings, api, receiver, queued,  # noqa: F811
                                                                          django_capture_on_commit_callbacks, capsys):
    # each account reads its own, and only its own
    alices, bobs = (api(u).get("/api/webhooks/callback-secret/").json()["secret"] for u in ("alice", "bob"))
    assert alices.startswith("whsec_") and bobs.startswith("whsec_") and alices != bobs
    call_command("webhook_callback_secret", "bob")
    assert capsys.readouterr().out.strip() == bobs
    with django_capture_on_commit_callbacks(execute=True):
        ids = {"alice": ask(api("alice"), receiver.url + "/alice"), "bob": ask(api("bob"), receiver.url + "/bob")}
    with django_capture_on_commit_callbacks(execute=True):
        for pk in ids.values():
            approval_services.decide(pk, demo["rita"], "reject", feedback="no")
    run_queued(queued)
    assert WebhookDelivery.objects.filter(endpoint=None).count() == 2
    by_id = {}
    for headers, body in receiver.received:
        message = Webhook(bobs).verify(body, headers) if ids["bob"].encode() in body else None
        if message is None:  # alice's: her secret verifies it, bob's does not
            message = Webhook(alices).verify(body, headers)
            with pytest.raises(WebhookVerificationError):
                Webhook(bobs).verify(body, headers)
        else:
            with pytest.raises(WebhookVerificationError):
                Webhook(alices).verify(body, headers)
        by_id[message["data"]["id"]] = message["data"]["status"]
    assert by_id == {ids["alice"]: "rejected", ids["bob"]: "rejected"}
