"""Webhooks end to end: a real HTTP receiver in the test process checks every message with the
`standardwebhooks` library; approvals made, decided, expired and escalated through the services
reach it; a receiver that answers 500 gets the same message again with exponential backoff (the
retries are driven by calling the task, the clock moved by hand: no sleeps); attempts are recorded,
replayable from the API and the admin; only admins manage endpoints; the secret is shown once."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from approvals import services as approval_services
from approvals.models import ApprovalRequest
from approvals.signals import tool_outcome
from tests.helpers import transfer_request
from webhooks import services, tasks
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def queued(monkeypatch):
    """The delivery tasks the services would send to Celery: (delivery id, countdown)."""
    sent = []
    monkeypatch.setattr(services, "enqueue", lambda pk, countdown=0: sent.append((pk, countdown)))
    return sent


@pytest.fixture
def endpoint(api, receiver):
    answer = api("admin").post("/api/webhooks/", {"url": receiver.url, "events": []}, format="json")
    assert answer.status_code == 201, answer.content
    return WebhookEndpoint.objects.get(pk=answer.json()["id"]), answer.json()["secret"]


def run_queued(queued):
    """What a worker would do with the queued tasks that are due now."""
    while queued:
        pk, _ = queued.pop(0)
        tasks.deliver(pk)


def test_request_decide_and_their_signed_messages(demo, endpoint, receiver, queued,
                                                  django_capture_on_commit_callbacks):
    hook, secret = endpoint
    assert secret.startswith("whsec_") and secret == hook.secret
    with django_capture_on_commit_callbacks(execute=True):
        req = transfer_request(demo["alice"])
    delivery = WebhookDelivery.objects.get(event_type="approval.requested")
    assert delivery.status == "pending" and delivery.attempts == 0  # the row exists before any attempt
    run_queued(queued)
    with django_capture_on_commit_callbacks(execute=True):
        approval_services.decide(req.pk, demo["finn"], "approve", arguments={**req.arguments, "amount": 400.0})
    run_queued(queued)

    messages = receiver.verified(secret)
    assert [m["type"] for m in messages] == ["approval.requested", "approval.decided"]
    assert messages[1]["data"]["id"] == req.pk and messages[1]["data"]["status"] == "modified"
    assert messages[1]["data"]["final_arguments"]["amount"] == 400.0
    headers = receiver.received[1][0]
    assert headers["webhook-id"] == WebhookDelivery.objects.get(event_type="approval.decided").message_id
    with pytest.raises(WebhookVerificationError):  # another secret does not verify
        Webhook("whsec_" + "A" * 44).verify(receiver.received[1][1], headers)
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {"succeeded"}
    attempt = WebhookAttempt.objects.get(delivery__event_type="approval.decided")
    assert attempt.succeeded and attempt.response_status == 200 and attempt.response_body == "ok"


def test_expired_and_escalated_requests_are_sent(demo, endpoint, receiver, queued,
                                                 django_capture_on_commit_callbacks):
    hook, secret = endpoint
    req = transfer_request(demo["alice"])
    queued.clear()
    past = timezone.now() - timedelta(seconds=1)
    ApprovalRequest.objects.filter(pk=req.pk).update(escalate_at=past, escalation_group=Group.objects.get(name="oncall"))
    with django_capture_on_commit_callbacks(execute=True):
        assert approval_services.escalate(req.pk)
    ApprovalRequest.objects.filter(pk=req.pk).update(expires_at=past)
    with django_capture_on_commit_callbacks(execute=True):
        assert approval_services.expire(req.pk)
    run_queued(queued)
    messages = receiver.verified(secret)
    assert [m["type"] for m in messages] == ["approval.escalated", "approval.expired"]
    assert (messages[0]["data"]["deciders"], messages[0]["data"]["escalation_group"]) == ("finance", "oncall")
    assert messages[1]["data"]["status"] == "expired" and "timed out" in messages[1]["data"]["feedback"]


def test_a_receiver_that_fails_gets_the_message_again_with_backoff(demo, settings, endpoint, receiver, queued,
                                                                   django_capture_on_commit_callbacks):
    hook, secret = endpoint
    settings.AGUI_WEBHOOK_BACKOFF_SECONDS = 10
    settings.AGUI_WEBHOOK_RESPONSE_BODY_CHARS = 100
    receiver.codes = [500, 500]  # then 200
    with django_capture_on_commit_callbacks(execute=True):
        transfer_request(demo["alice"])
    delivery = WebhookDelivery.objects.get()
    (pk, countdown), = queued
    assert countdown == 0
    waits = []
    for _ in range(3):
        queued.clear()
        with django_capture_on_commit_callbacks(execute=True):
            tasks.deliver(pk)
        if queued:
            (_, wait), = queued
            waits.append(wait)
            assert tasks.deliver(pk) is None and WebhookAttempt.objects.count() == len(waits)  # not due yet
            # the countdown elapses: move the delivery's moment back instead of sleeping
            WebhookDelivery.objects.filter(pk=pk).update(next_attempt_at=timezone.now())
    assert waits == [10, 20]  # exponential backoff
    delivery.refresh_from_db()
    assert delivery.status == "succeeded" and delivery.attempts == 3
    rows = list(delivery.attempt_rows.all())
    assert [(a.response_status, a.succeeded) for a in rows] == [(500, False), (500, False), (200, True)]
    assert rows[0].error == "the receiver answered 500" and len(rows[0].response_body) == 100  # bounded
    assert all(a.latency_ms >= 0 for a in rows)
    ids = {h["webhook-id"] for h, _ in receiver.received}
    assert ids == {delivery.message_id} and len(receiver.verified(secret)) == 3  # same id, signed each time


def test_bounded_attempts_then_failed_then_replay(demo, settings, api, endpoint, receiver, queued,
                                                  django_capture_on_commit_callbacks, caplog):
    hook, secret = endpoint
    host = receiver.url.split("//")[1]
    WebhookEndpoint.objects.filter(pk=hook.pk).update(url=f"http://ops:hunter2@{host}/in?token=s3cret#f")
    settings.AGUI_WEBHOOK_MAX_ATTEMPTS = 2
    receiver.codes = [503, 503]
    with django_capture_on_commit_callbacks(execute=True):
        transfer_request(demo["alice"])
    delivery = WebhookDelivery.objects.get()
    for _ in range(2):
        WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
        tasks.deliver(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.attempts == 2
    # the log says where it went, not the URL's credentials
    assert f"to http://{host}/in failed 2 times" in caplog.text and "s3cret" not in caplog.text
    assert "hunter2" not in caplog.text
    queued.clear()

    assert api("finn").post(f"/api/webhook-deliveries/{delivery.pk}/replay/").status_code == 403
    with django_capture_on_commit_callbacks(execute=True):
        answer = api("admin").post(f"/api/webhook-deliveries/{delivery.pk}/replay/")
    assert answer.status_code == 202 and answer.json()["status"] == "pending"
    run_queued(queued)
    delivery.refresh_from_db()
    assert delivery.status == "succeeded"
    listed = api("admin").get(f"/api/webhook-deliveries/{delivery.pk}/").json()
    assert [a["response_status"] for a in listed["attempt_log"]] == [503, 503, 200]


def test_a_lost_task_is_picked_up_by_the_sweep(demo, endpoint, receiver, queued,
                                               django_capture_on_commit_callbacks):
    hook, secret = endpoint
    with django_capture_on_commit_callbacks(execute=True):
        transfer_request(demo["alice"])
    queued.clear()  # the broker lost the task
    tasks.deliveries_due()
    assert not queued  # not yet overdue: its task may still come
    WebhookDelivery.objects.update(next_attempt_at=timezone.now() - timedelta(seconds=services.SWEEP_GRACE_SECONDS + 1))
    tasks.deliveries_due()
    run_queued(queued)
    assert [m["type"] for m in receiver.verified(secret)] == ["approval.requested"]


def test_events_filter_and_tool_outcome(demo, api, receiver, queued, django_capture_on_commit_callbacks):
    answer = api("admin").post("/api/webhooks/", {"url": receiver.url, "events": ["tool.outcome"]}, format="json")
    secret = answer.json()["secret"]
    with django_capture_on_commit_callbacks(execute=True):
        transfer_request(demo["alice"])
    assert not WebhookDelivery.objects.exists()  # approval.requested was not asked for
    with django_capture_on_commit_callbacks(execute=True):
        tool_outcome.send(sender=None, approval_ref="apr_1", data={"tool_name": "transfer_money", "outcome": "failed"})
    run_queued(queued)
    (message,) = receiver.verified(secret)
    assert message["type"] == "tool.outcome" and message["data"]["outcome"] == "failed"


def test_an_outside_agents_callback_url_and_outcome(demo, settings, api, receiver, queued,
                                                    django_capture_on_commit_callbacks):
    """POST /api/approvals/ with a callback_url: the answer is pushed there, signed with the callback
    secret; the outcome the agent reports is a tool.outcome event for the admins' endpoints."""
    settings.AGUI_WEBHOOK_CALLBACK_SECRET = ""
    hook = api("admin").post("/api/webhooks/", {"url": receiver.url + "/admin", "events": ["tool.outcome"]},
                             format="json").json()
    alice = api("alice")
    with django_capture_on_commit_callbacks(execute=True):
        made = alice.post("/api/approvals/", {
            "tool_name": "crm.delete_contact", "arguments": {"email": "a@example.com"},
            "schema": {"type": "object", "properties": {"email": {"type": "string"}}},
            "description": "Delete the contact a@example.com", "callback_url": receiver.url,
            "thread": "crm-conversation-7", "run": "crm-run-3"}, format="json")
    assert made.status_code == 201, made.content
    assert not WebhookDelivery.objects.exists()  # the callback hears the answer, not its own request
    with django_capture_on_commit_callbacks(execute=True):
        approval_services.decide(made.json()["id"], demo["rita"], "approve", feedback="once")
    run_queued(queued)
    (answer,) = receiver.verified(services.callback_secret(demo["alice"].pk))
    assert answer["type"] == "approval.decided" and answer["data"]["feedback"] == "once"
    assert answer["data"]["final_arguments"] == {"email": "a@example.com"}
    # the agent's own thread and run, as it gave them, so it can find the conversation to wake
    assert (answer["data"]["thread"], answer["data"]["run"]) == ("crm-conversation-7", "crm-run-3")
    assert WebhookDelivery.objects.get().endpoint is None
    with django_capture_on_commit_callbacks(execute=True):
        alice.post(f"/api/approvals/{made.json()['id']}/outcome/", {"outcome": "failed", "detail": "CRM said 500"},
                   format="json")
    run_queued(queued)
    headers, body = receiver.received[-1]
    outcome = Webhook(hook["secret"]).verify(body, headers)
    assert outcome["type"] == "tool.outcome" and outcome["data"]["outcome"] == "failed"
    assert outcome["data"]["approval"] == made.json()["id"] and outcome["data"]["detail"] == "CRM said 500"


def test_only_admins_manage_endpoints_and_the_secret_is_shown_once(demo, api, receiver):
    assert api("finn").post("/api/webhooks/", {"url": receiver.url, "events": []}, format="json").status_code == 403
    assert api("finn").get("/api/webhooks/").status_code == 403
    admin = api("admin")
    created = admin.post("/api/webhooks/", {"url": receiver.url, "events": ["approval.decided"]}, format="json")
    assert created.status_code == 201 and created.json()["secret"].startswith("whsec_")
    pk = created.json()["id"]
    assert "secret" not in admin.get(f"/api/webhooks/{pk}/").json()
    assert all("secret" not in row for row in admin.get("/api/webhooks/").json()["results"])
    changed = admin.patch(f"/api/webhooks/{pk}/", {"events": ["approval.expired"]}, format="json")
    assert changed.status_code == 200 and "secret" not in changed.json() and changed.json()["events"] == ["approval.expired"]
    assert admin.delete(f"/api/webhooks/{pk}/").status_code == 204


@pytest.mark.parametrize("url", ["ftp://example.com/hook", "javascript:alert(1)", "not a url", "http:///nohost",
                                 "https://example.com/" + "a" * 2100])
def test_a_url_that_is_not_http_is_400(demo, api, url):
    answer = api("admin").post("/api/webhooks/", {"url": url, "events": []}, format="json")
    assert answer.status_code == 400 and "url" in answer.json().get("fields", answer.json())
    assert not WebhookEndpoint.objects.exists()


def test_an_unknown_event_type_is_400(demo, api, receiver):
    answer = api("admin").post("/api/webhooks/", {"url": receiver.url, "events": ["approval.lunch"]}, format="json")
    assert answer.status_code == 400


def test_internal_addresses_are_refused_unless_allowed(demo, settings, endpoint, receiver, queued,
                                                       django_capture_on_commit_callbacks):
    settings.AGUI_WEBHOOK_ALLOWED_NETWORKS = []
    with django_capture_on_commit_callbacks(execute=True):
        transfer_request(demo["alice"])
    run_queued(queued)
    attempt = WebhookAttempt.objects.get()
    assert not receiver.received and not attempt.succeeded and "internal address" in attempt.error


def test_the_attempt_goes_to_the_address_that_was_judged(demo, settings, api, receiver, queued, monkeypatch,
                                                        django_capture_on_commit_callbacks):
    """DNS rebinding: a name that resolves to an allowed address for the check and to an internal
    one a moment later. httpx resolved the name again to connect, so an outside agent's callback_url
    reached the loopback receiver; the attempt now connects to the address the check judged (here
    127.0.0.2, where nothing listens), with the URL's host as Host and TLS server name."""
    import socket

    settings.AGUI_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.2/32"]
    real, port, answers = socket.getaddrinfo, receiver.server.server_port, iter(["127.0.0.2"])

    def rebinding(host, *args, **kwargs):
        if host != "hooks.rebind.test":
            return real(host, *args, **kwargs)
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers, "127.0.0.1"), port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with django_capture_on_commit_callbacks(execute=True):
        made = api("alice").post("/api/approvals/", {
            "tool_name": "lights_off", "arguments": {}, "schema": {"type": "object"},
            "callback_url": f"http://hooks.rebind.test:{port}/hook"}, format="json")
        assert made.status_code == 201, made.content
        approval_services.decide(made.json()["id"], demo["rita"], "reject", feedback="not now")
    run_queued(queued)
    attempt = WebhookAttempt.objects.get()
    assert not receiver.received and not attempt.succeeded
    assert "Connect" in attempt.error, attempt.error  # refused at 127.0.0.2, not sent on to 127.0.0.1


def test_a_pinned_attempt_keeps_the_urls_host_port_and_path(demo, settings, endpoint, receiver, queued,
                                                              django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        transfer_request(demo["alice"])
    run_queued(queued)
    (headers, _body), = receiver.received
    assert headers["Host"] == f"127.0.0.1:{receiver.server.server_port}"
    assert WebhookAttempt.objects.get().succeeded


def test_admin_shows_attempts_and_replays(demo, client, endpoint, receiver, queued,
                                          django_capture_on_commit_callbacks):
    receiver.codes = [500]
    with django_capture_on_commit_callbacks(execute=True):
        transfer_request(demo["alice"])
    run_queued(queued)
    delivery = WebhookDelivery.objects.get()
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status="failed")
    client.force_login(demo["admin"])
    page = client.get(f"/admin/webhooks/webhookdelivery/{delivery.pk}/change/").content.decode()
    assert "the receiver answered 500" in page and "approval.requested" in page
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/admin/webhooks/webhookdelivery/", {"action": "replay", "_selected_action": [delivery.pk]})
    run_queued(queued)
    delivery.refresh_from_db()
    assert delivery.status == "succeeded"


def test_admin_add_form_shows_the_secret_once(demo, client, receiver):
    client.force_login(demo["admin"])
    answer = client.post("/admin/webhooks/webhookendpoint/add/", {"url": receiver.url, "events": ["approval.decided"],
                                                                   "description": "", "is_active": "on"})
    hook = WebhookEndpoint.objects.get()
    assert answer.status_code == 200 and hook.secret in answer.content.decode() and hook.events == ["approval.decided"]
    assert hook.secret not in str(answer.cookies)  # not carried in a message cookie
    page = client.get(f"/admin/webhooks/webhookendpoint/{hook.pk}/change/").content.decode()
    assert hook.secret not in page
    bad = client.post("/admin/webhooks/webhookendpoint/add/", {"url": "ftp://x/", "is_active": "on"})
    assert bad.status_code == 200 and WebhookEndpoint.objects.count() == 1


def test_our_own_tool_calls_outcome_is_sent_when_recorded(demo, api, receiver, queued,
                                                         django_capture_on_commit_callbacks):
    """agents.runtime.execution.finish records a call's result: tool.outcome follows on commit."""
    from agents import services as agent_services
    from agents.models import Run, ToolCall
    from agents.runtime import execution

    secret = api("admin").post("/api/webhooks/", {"url": receiver.url, "events": ["tool.outcome"]},
                               format="json").json()["secret"]
    thread = agent_services.create_thread(demo["alice"], "banking")
    run = Run.objects.create(thread=thread, status=Run.Status.RUNNING)
    msg = agent_services.add_message(thread, "assistant", "", run=run, tool_calls=[
        {"id": "call-w", "type": "function", "function": {"name": "transfer_money", "arguments": "{}"}}])
    ToolCall.objects.create(id="call-w", run=run, thread=thread, message=msg, name="transfer_money", arguments={},
                            status=ToolCall.Status.EXECUTING, approval_id="apr_w")
    with django_capture_on_commit_callbacks(execute=True):
        assert execution.finish("call-w", ToolCall.Status.SUCCEEDED, "sent")
    run_queued(queued)
    (message,) = receiver.verified(secret)
    assert message["type"] == "tool.outcome"
    assert message["data"] == {"tool_name": "transfer_money", "outcome": "succeeded", "tool_call": "call-w",
                               "thread": thread.pk, "run": run.pk, "approval": "apr_w"}
    assert WebhookDelivery.objects.get().approval_ref == "apr_w"


def test_a_request_policy_answers_at_once_is_sent_as_decided(demo, settings, api, endpoint, receiver, queued,
                                                             django_capture_on_commit_callbacks):
    """An outside agent's call that policy runs (never) or blocks (deny) is decided when it is made:
    endpoints and its callback_url hear approval.decided, as for a reviewer's decision."""
    settings.AGUI_WEBHOOK_CALLBACK_SECRET = ""
    _, secret = endpoint
    approval_services.save_policy("crm.lookup", {"mode": "never", "approver_kind": "requester"}, demo["admin"])
    approval_services.save_policy("crm.drop_table", {"mode": "deny", "approver_kind": "requester"}, demo["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        ok = api("alice").post("/api/approvals/", {"tool_name": "crm.lookup", "arguments": {"q": "x"}}, format="json")
        no = api("alice").post("/api/approvals/", {"tool_name": "crm.drop_table", "arguments": {},
                                                   "callback_url": receiver.url + "/cb"}, format="json")
    assert ok.status_code == no.status_code == 201
    run_queued(queued)
    heard = {True: set(), False: set()}  # by the admins' endpoint / by the request's callback_url
    for headers, body in receiver.received:
        for key in (secret, services.callback_secret(demo["alice"].pk)):
            try:
                message = Webhook(key).verify(body, headers)
            except WebhookVerificationError:
                continue
            heard[key == secret].add((message["data"]["id"], message["type"], message["data"]["status"]))
            break
        else:
            raise AssertionError("a message neither secret verifies")
    assert heard[True] == {(ok.json()["id"], "approval.decided", "approved"),
                           (no.json()["id"], "approval.decided", "denied")}
    assert heard[False] == {(no.json()["id"], "approval.decided", "denied")}


def test_a_request_withdrawn_by_a_policy_change_is_sent_as_decided(demo, settings, api, endpoint, receiver, queued,
                                                                   django_capture_on_commit_callbacks):
    """A pending outside request that a policy saved later blocks is withdrawn (cancelled): that is its
    answer, so its callback_url and the endpoints hear approval.decided with status cancelled and the
    reason. Nothing was sent before: an agent waiting on its callback waited for ever."""
    settings.AGUI_WEBHOOK_CALLBACK_SECRET = ""
    _, secret = endpoint
    with django_capture_on_commit_callbacks(execute=True):
        made = api("alice").post("/api/approvals/", {
            "tool_name": "crm.wipe", "arguments": {"table": "contacts"}, "callback_url": receiver.url + "/cb",
            "schema": {"type": "object", "properties": {"table": {"type": "string"}}}}, format="json")
    assert made.status_code == 201 and made.json()["status"] == "pending", made.content
    run_queued(queued)
    receiver.received.clear()  # the endpoint's approval.requested
    with django_capture_on_commit_callbacks(execute=True):
        approval_services.save_policy("crm.wipe", {"mode": "deny", "approver_kind": "requester"}, demo["admin"])
    assert ApprovalRequest.objects.get(pk=made.json()["id"]).status == "cancelled"
    run_queued(queued)
    heard = _heard(receiver, endpoint=secret, callback=services.callback_secret(demo["alice"].pk))
    reason = "The policy now blocks this call"
    for who in ("endpoint", "callback"):
        (message,) = heard[who]
        assert (message["type"], message["data"]["id"], message["data"]["status"]) == (
            "approval.decided", made.json()["id"], "cancelled"), who
        assert message["data"]["feedback"].startswith(reason) and message["data"]["final_arguments"] is None


def _heard(receiver, **secrets):
    """The messages received, by the name of the secret that verifies each (one must)."""
    heard = {name: [] for name in secrets}
    for headers, body in receiver.received:
        for name, key in secrets.items():
            try:
                heard[name].append(Webhook(key).verify(body, headers))
                break
            except WebhookVerificationError:
                continue
        else:
            raise AssertionError("a message no secret verifies")
    return heard


@pytest.mark.parametrize("url", [
    "http://100.64.0.1/hook", "http://[::ffff:10.0.0.1]/hook", "http://169.254.169.254/",
    # IPv6 forms of internal IPv4 addresses a gateway forwards to (is_global holds for each):
    "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/", "http://[64:ff9b:1::a00:1]/",  # NAT64
    "http://[2002:7f00:1::]:9377/",  # 6to4 of 127.0.0.1
    "http://[::a9fe:a9fe]/",  # IPv4-compatible
    "http://[::ffff:0:a9fe:a9fe]/latest/", "http://[::ffff:0:a00:1]/",  # SIIT's IPv4-translated form
    "http://[fec0::1]/",  # site-local: deprecated, still routed inside some networks
])
def test_every_address_that_is_not_global_is_internal(settings, url):
    """Shared (carrier-grade NAT) space was let through: it is neither private nor reserved to
    Python, but it is not global either (agui_project/destinations.py). So were NAT64, 6to4 and
    IPv4-compatible forms of internal addresses."""
    from webhooks.services import destination_refused

    settings.AGUI_WEBHOOK_ALLOWED_NETWORKS = ["192.168.0.0/16"]
    assert "an internal address (AGUI_WEBHOOK_ALLOWED_NETWORKS)" in (destination_refused(url) or "")


def test_a_global_ipv6_address_and_an_allowed_loopback_stay_allowed(settings):
    from webhooks.services import destination_refused

    settings.AGUI_WEBHOOK_ALLOWED_NETWORKS = ["::1/128"]
    assert destination_refused("http://[2606:4700:4700::1111]/hook") is None
    assert destination_refused("http://[::1]:8000/hook") is None


def test_an_endpoint_switched_off_gets_none_of_its_pending_retries(demo, api, endpoint, receiver, queued,
                                                                   django_capture_on_commit_callbacks):
    """The admin's box reads "Active (unticked: nothing is sent here)": a message already failing and
    waiting for its next attempt is not sent either; a corrected URL takes the retries that remain."""
    hook, secret = endpoint
    receiver.codes = [500]
    with django_capture_on_commit_callbacks(execute=True):
        transfer_request(demo["alice"])
    delivery = WebhookDelivery.objects.get()
    tasks.deliver(delivery.pk)
    assert len(receiver.received) == 1 and WebhookDelivery.objects.get().status == "pending"
    assert api("admin").patch(f"/api/webhooks/{hook.pk}/", {"is_active": False}, format="json").status_code == 200
    WebhookDelivery.objects.filter(pk=delivery.pk).update(next_attempt_at=timezone.now())
    attempt = tasks.deliver(delivery.pk) or WebhookAttempt.objects.filter(delivery=delivery).last()
    assert len(receiver.received) == 1  # nothing more came
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.next_attempt_at is None
    assert attempt.error == "not sent: the endpoint is switched off" and attempt.response_status is None


def test_an_endpoints_retries_go_to_its_url_as_it_is_now(demo, api, endpoint, receiver, queued,
                                                         django_capture_on_commit_callbacks):
    hook, secret = endpoint
    old_url = receiver.url
    with django_capture_on_commit_callbacks(execute=True):
        transfer_request(demo["alice"])
    delivery = WebhookDelivery.objects.get()
    moved = api("admin").patch(f"/api/webhooks/{hook.pk}/", {"url": old_url.replace("/hook", "/moved")},
                               format="json")
    assert moved.status_code == 200, moved.content
    tasks.deliver(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == "succeeded" and delivery.url.endswith("/moved")
    assert receiver.received[0][0]["webhook-id"] == delivery.message_id


def test_replaying_a_delivery_still_being_sent_is_a_409_in_the_apis_error_shape(demo, api, endpoint, receiver, queued,
                                                                                django_capture_on_commit_callbacks):
    """Every API error is {"message", "code"?}: the replay's refusal was DRF's bare {"detail"} (in
    English whatever the caller's language), which a client reading `message` and `code` could not read."""
    with django_capture_on_commit_callbacks(execute=True):
        transfer_request(demo["alice"])
    delivery = WebhookDelivery.objects.get()  # pending: its first attempt is queued
    answer = api("admin").post(f"/api/webhook-deliveries/{delivery.pk}/replay/")
    assert answer.status_code == 409
    assert answer.json() == {"message": "this delivery is still being sent", "code": "delivery_pending"}
    assert api("admin").post("/api/webhook-deliveries/999999/replay/").json()["message"]


def test_an_endpoints_description_is_changed_by_patch_and_put(demo, api, endpoint):
    """PATCH {"description"} answered 200 and showed the old description: update_endpoint was never given it."""
    hook, _ = endpoint
    admin = api("admin")
    changed = admin.patch(f"/api/webhooks/{hook.pk}/", {"description": "CRM sync"}, format="json")
    assert changed.status_code == 200 and changed.json()["description"] == "CRM sync"
    assert WebhookEndpoint.objects.get(pk=hook.pk).description == "CRM sync"
    replaced = admin.put(f"/api/webhooks/{hook.pk}/", {"url": hook.url, "events": [], "description": "billing"},
                         format="json")
    assert replaced.status_code == 200 and WebhookEndpoint.objects.get(pk=hook.pk).description == "billing"


def test_a_request_a_policy_change_routes_elsewhere_is_sent(demo, endpoint, receiver, queued,
                                                            django_capture_on_commit_callbacks):
    """An admin gave large transfers to two of treasury: the pending request moved, its quorum and risk
    rose, finance's approvals stopped counting, and an integrator mirroring requests heard nothing (its
    copy still said finance, one approval, high risk). It now gets approval.rerouted with who decides."""
    from django.contrib.auth.models import Group

    hook, secret = endpoint
    with django_capture_on_commit_callbacks(execute=True):
        req = transfer_request(demo["alice"], amount=5000.0)
    Group.objects.create(name="treasury")
    with django_capture_on_commit_callbacks(execute=True):
        approval_services.save_policy("transfer_money", {
            "mode": "conditional", "approver_kind": "group", "approver_group": Group.objects.get(name="finance"),
            "conditions": [{"name": "large", "when": {"path": "args.amount", "op": "gt", "value": 1000},
                            "action": "gate", "route": {"group": "treasury", "approvals": 2, "risk": "critical"}},
                           {"name": "the rest", "action": "gate"}]}, demo["admin"])
    run_queued(queued)
    messages = receiver.verified(secret)
    assert [m["type"] for m in messages] == ["approval.requested", "approval.rerouted"]
    assert messages[0]["data"]["deciders"] == "finance" and messages[0]["data"]["required_approvals"] == 1
    rerouted = messages[1]["data"]
    assert rerouted["id"] == req.pk and rerouted["status"] == "pending"
    assert (rerouted["deciders"], rerouted["required_approvals"], rerouted["risk"]) == ("treasury", 2, "critical")


def test_an_outside_agents_callback_hears_its_request_was_rerouted(api, demo, receiver, queued, settings,
                                                                    django_capture_on_commit_callbacks):
    from django.contrib.auth.models import Group

    settings.AGUI_WEBHOOK_CALLBACK_SECRET = ""
    with django_capture_on_commit_callbacks(execute=True):
        made = api("alice").post("/api/approvals/", {
            "tool_name": "transfer_money", "callback_url": receiver.url,
            "arguments": {"from_account": "1234567890", "to_account": "0987654321", "amount": 5000.0}}, format="json")
    assert made.status_code == 201, made.content
    Group.objects.create(name="treasury")
    with django_capture_on_commit_callbacks(execute=True):
        approval_services.save_policy("transfer_money", {
            "mode": "always", "approver_kind": "group", "approver_group": Group.objects.get(name="treasury")},
            demo["admin"])
    run_queued(queued)
    (told,) = receiver.verified(services.callback_secret(demo["alice"].pk))
    assert told["type"] == "approval.rerouted" and told["data"]["deciders"] == "treasury"


def test_one_attempt_at_a_time_per_sender(demo, settings, api, receiver, queued, django_capture_on_commit_callbacks):
    """An attempt holds a worker until its receiver answers, and the workers run the agents too: any
    account may set a callback_url, and four slow ones held every worker while chats waited. A
    sender's next delivery waits its turn (not counted as an attempt); another account's goes on."""
    from datetime import timedelta

    from django.utils import timezone

    def ask(who, n):
        made = api(who).post("/api/approvals/", {
            "tool_name": "crm.delete_contact", "arguments": {"n": n}, "schema": {"type": "object"},
            "callback_url": f"{receiver.url}/{who}/{n}"}, format="json")
        assert made.status_code == 201, made.content
        with django_capture_on_commit_callbacks(execute=True):
            assert api(who).post(f"/api/approvals/{made.json()['id']}/withdraw/").status_code == 200
        return WebhookDelivery.objects.get(approval_ref=made.json()["id"])

    first, second, bobs = ask("alice", 1), ask("alice", 2), ask("bob", 1)
    queued.clear()
    in_flight = timezone.now() + timedelta(seconds=30)  # alice's first is being attempted by another worker
    WebhookDelivery.objects.filter(pk=first.pk).update(claimed_until=in_flight)
    assert services.deliver(second.pk) is None and services.deliver(bobs.pk).succeeded
    second.refresh_from_db()
    assert (second.status, second.attempts, second.claimed_until) == ("pending", 0, None)  # waits, uncounted
    assert queued == [(second.pk, services.TURN_SECONDS)]
    WebhookDelivery.objects.filter(pk=first.pk).update(claimed_until=None)  # its attempt ended
    WebhookDelivery.objects.filter(pk=second.pk).update(next_attempt_at=timezone.now())
    assert services.deliver(second.pk).succeeded
    assert len(receiver.received) == 2 and WebhookDelivery.objects.get(pk=first.pk).attempts == 0


def test_an_older_deliverys_retry_waits_for_a_newer_ones_attempt(demo, api, receiver, queued,
                                                                 django_capture_on_commit_callbacks):
    """The turn goes by who claimed first, not by id: a slow receiver got an older delivery's retry
    while a newer one's attempt was still open, two workers held by one sender."""
    from datetime import timedelta

    from django.utils import timezone

    def ask(n):
        made = api("alice").post("/api/approvals/", {
            "tool_name": "crm.delete_contact", "arguments": {"n": n}, "schema": {"type": "object"},
            "callback_url": f"{receiver.url}/alice/{n}"}, format="json")
        with django_capture_on_commit_callbacks(execute=True):
            assert api("alice").post(f"/api/approvals/{made.json()['id']}/withdraw/").status_code == 200
        return WebhookDelivery.objects.get(approval_ref=made.json()["id"])

    older, newer = ask(1), ask(2)
    queued.clear()
    WebhookDelivery.objects.filter(pk=newer.pk).update(claimed_until=timezone.now() + timedelta(seconds=5))
    assert services.deliver(older.pk) is None  # its retry came due meanwhile: it waits its turn
    assert queued == [(older.pk, services.TURN_SECONDS)] and receiver.received == []
    # two claimed in the same instant: the lower id goes on, the other waits; never both, never neither
    both = timezone.now() + timedelta(seconds=40)
    WebhookDelivery.objects.filter(pk__in=[older.pk, newer.pk]).update(claimed_until=both)
    assert not services._sender_busy(WebhookDelivery.objects.get(pk=older.pk), timezone.now())
    assert services._sender_busy(WebhookDelivery.objects.get(pk=newer.pk), timezone.now())
