"""Every change to webhooks: endpoints, deliveries (created on commit of the event, then attempted by
Celery with exponential backoff), attempts, replays. Views, tasks and the admin call these.

Deliveries follow Standard Webhooks: headers webhook-id (the delivery's message id, the same on every
retry and replay so receivers can drop duplicates), webhook-timestamp (of the attempt) and
webhook-signature (`v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, by the `standardwebhooks`
library). An endpoint's messages are signed with its own secret; a request's callback_url with the
secret of the account whose request it answers (derived from AGUI_WEBHOOK_CALLBACK_SECRET, else from
SECRET_KEY: see callback_secret).
"""

import base64
import contextlib
import hashlib
import hmac
import json
import logging
import socket
import threading
import time
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import httpx
from celery import current_app, signature
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _
from standardwebhooks.webhooks import Webhook

from agui_project import destinations
from agui_project.queries import Prepared
from approvals.models import ApprovalRequest

from .models import EVENT_TYPES, WebhookAttempt, WebhookDelivery, WebhookEndpoint

log = logging.getLogger(__name__)

DELIVER_TASK = "webhooks.tasks.deliver"  # by name: tasks import this module
SWEEP_GRACE_SECONDS = 30  # a due delivery this late has lost its countdown task: the beat sends it


class InvalidWebhook(ValueError):
    def __init__(self, errors):
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()))
        self.errors = errors


def check_url(url):
    """An http(s) URL with a host, not longer than AGUI_WEBHOOK_MAX_URL_LENGTH; the reason, or None."""
    if not isinstance(url, str) or not url:
        return _("a URL is required")
    if len(url) > settings.AGUI_WEBHOOK_MAX_URL_LENGTH:
        return _("at most %(limit)s characters") % {"limit": settings.AGUI_WEBHOOK_MAX_URL_LENGTH}
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError:
        return _("not a valid URL")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return _("must be an http:// or https:// URL with a host")
    return None


def _clean(url, events):
    errors = {}
    problem = check_url(url)
    if problem:
        errors["url"] = [problem]
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        errors["events"] = [_("a list of event types")]
    else:
        unknown = sorted(set(events) - set(EVENT_TYPES))
        if unknown:
            errors["events"] = [_("unknown event types: %(unknown)s (known: %(known)s)") % {
                "unknown": ", ".join(unknown), "known": ", ".join(EVENT_TYPES)}]
    if errors:
        raise InvalidWebhook(errors)
    return url, sorted(set(events))


def create_endpoint(*, url, events, created_by=None, description=""):
    url, events = _clean(url, events)
    return WebhookEndpoint.objects.create(url=url, events=events, created_by=created_by, description=description[:200])


def update_endpoint(endpoint, *, url=None, events=None, is_active=None, description=None):
    """Changes what is given (None: kept)."""
    url, events = _clean(endpoint.url if url is None else url, endpoint.events if events is None else events)
    endpoint.url, endpoint.events = url, events
    if is_active is not None:
        endpoint.is_active = bool(is_active)
    if description is not None:
        endpoint.description = description[:200]
    endpoint.save()
    return endpoint


def callback_secret(user_id):
    """The secret of callback_url deliveries answering the requests of account `user_id`: one per
    account. With one site-wide secret, whoever received one account's callbacks (an outside agent's
    operator) held what signs every account's, and could send another account's agent a callback that
    verified, deciding its request ("approved") as nobody had. Derived (HMAC) from
    AGUI_WEBHOOK_CALLBACK_SECRET, else SECRET_KEY: stable across restarts, nothing stored, and one
    account's secret reveals neither the key nor another's. `GET /api/webhooks/callback-secret/` gives
    an account its own; `manage.py webhook_callback_secret <username>` prints it."""
    key = (settings.AGUI_WEBHOOK_CALLBACK_SECRET or settings.SECRET_KEY).encode()
    raw = hmac.new(key, b"agui-webhook-callback:%d" % user_id, hashlib.sha256).digest()
    return "whsec_" + base64.b64encode(raw).decode()


def secret_of(delivery):
    """An endpoint's own secret; for a callback_url, the secret of the account whose request it
    answers (None: it names none, and nothing is sent)."""
    if delivery.endpoint_id:
        return delivery.endpoint.secret
    requester = ApprovalRequest.objects.filter(pk=delivery.approval_ref).values_list(
        "requester_id", flat=True).first() if delivery.approval_ref else None
    return callback_secret(requester) if requester is not None else None


# --- emitting ---------------------------------------------------------------------------------


def enqueue(delivery_id, countdown=0):
    try:
        signature(DELIVER_TASK, args=(delivery_id,), app=current_app).apply_async(countdown=countdown)
    except Exception:  # the broker is down: the row waits, and the beat sweep sends it
        log.exception("webhook delivery %s not queued; the sweep will send it", delivery_id)


# read after every decision and tool outcome: compiled once (agui_project/queries.Prepared)
_ACTIVE = Prepared(WebhookEndpoint, lambda: WebhookEndpoint.objects.filter(is_active=True), arity=0)


def emit(event_type, data, *, approval_ref="", callback_url=""):
    """Record one delivery per endpoint that wants `event_type` (and one to callback_url), then
    queue their first attempt once the rows are committed. Returns the deliveries."""
    now = timezone.now()
    payload = {"type": event_type, "timestamp": now.isoformat(), "data": data}
    targets = [(e, e.url) for e in _ACTIVE.all() if e.wants(event_type)]
    if callback_url and not check_url(callback_url):
        targets.append((None, callback_url))
    if not targets:
        return []
    with transaction.atomic():
        rows = [WebhookDelivery.objects.create(endpoint=e, url=url, event_type=event_type, payload=payload,
                                               approval_ref=str(approval_ref)[:64], next_attempt_at=now)
                for e, url in targets]
        for row in rows:
            transaction.on_commit(lambda pk=row.pk: enqueue(pk))
    return rows


# --- attempts ---------------------------------------------------------------------------------


def backoff_seconds(attempts):
    """After the n-th failed attempt: base * 2^(n-1), capped."""
    return min(settings.AGUI_WEBHOOK_BACKOFF_SECONDS * 2 ** max(attempts - 1, 0), settings.AGUI_WEBHOOK_BACKOFF_MAX_SECONDS)


def _claim(delivery_id, now):
    """Only one attempt of a delivery at a time (a countdown task and the sweep may both come)."""
    lease = now + timedelta(seconds=settings.AGUI_WEBHOOK_TIMEOUT_SECONDS + 30)
    free = Q(claimed_until__isnull=True) | Q(claimed_until__lt=now)
    return WebhookDelivery.objects.filter(free, pk=delivery_id, status=WebhookDelivery.Status.PENDING,
                                          next_attempt_at__lte=now).update(claimed_until=lease) == 1


def destination_refused(url):
    """SSRF guard (agui_project/destinations.py): a host that resolves to an address that is not
    global (loopback, private, link-local, reserved...) is refused unless it is inside
    AGUI_WEBHOOK_ALLOWED_NETWORKS. Checked before each attempt."""
    return _destination(url)[0]


def _destination(url):
    """(why refused, or None; destinations.Pinned: the attempt goes to the address judged)."""
    return destinations.pinned(url, settings.AGUI_WEBHOOK_ALLOWED_NETWORKS, "AGUI_WEBHOOK_ALLOWED_NETWORKS")


class _Deadline:
    """The whole attempt's time limit. httpx's timeout bounds each read, not the answer: a receiver
    that sends its status line, headers or body a byte at a time, each within the timeout, held the
    attempt (and its worker) for as long as it liked, and after the claim's lease the sweep sent the
    same delivery again to another worker. When the time is up, the attempt's socket (noted by
    httpcore's trace hook once connected, and again once TLS wraps it) is shut down, which ends any
    read or write under way."""

    def __init__(self, seconds):
        self.passed = False
        self._sock = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._pass)
        self._timer.daemon = True

    def __enter__(self):
        self._timer.start()
        return self

    def __exit__(self, *exc):
        self._timer.cancel()

    def trace(self, event, info):
        # the TLS socket replaces the plain one, which wrapping detaches (shutting that down would do nothing)
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            with self._lock:
                self._sock = info["return_value"].get_extra_info("socket")
                if self.passed:
                    self._shut()

    def _pass(self):
        with self._lock:
            self.passed = True
            self._shut()

    def _shut(self):
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)


def _post(delivery, body):
    """One HTTP attempt: (status code or None, the start of the body, error)."""
    problem, pin = _destination(delivery.url)
    if problem:
        return None, "", problem
    secret = secret_of(delivery)
    if secret is None:
        return None, "", "not sent: it answers no request, so there is no account to sign it for"
    sent_at = datetime.now(UTC)
    headers = {
        "content-type": "application/json",
        "user-agent": "agui-inbox-webhooks",
        "webhook-id": delivery.message_id,
        "webhook-timestamp": str(int(sent_at.timestamp())),
        "webhook-signature": Webhook(secret).sign(delivery.message_id, sent_at, body),
    }
    limit, timeout = settings.AGUI_WEBHOOK_RESPONSE_BODY_CHARS, settings.AGUI_WEBHOOK_TIMEOUT_SECONDS
    deadline = _Deadline(timeout)
    try:
        with deadline, httpx.Client(timeout=timeout, follow_redirects=False) as client:
            with client.stream("POST", pin.url, content=body.encode(), headers={**headers, **pin.headers},
                               extensions={"trace": deadline.trace, **pin.extensions}) as response:
                kept = b""
                for chunk in response.iter_bytes():  # read no more than we keep
                    kept += chunk
                    if len(kept) >= limit:
                        break
                return response.status_code, kept[:limit].decode("utf-8", "replace"), ""
    except Exception as exc:  # noqa: BLE001  (any failure is this attempt's error, never a stuck claim)
        if deadline.passed:
            return None, "", f"no complete answer within {timeout:g} s"
        return None, "", f"{type(exc).__name__}: {exc}"[:500]


# seconds a delivery waits for its sender's attempt in flight before it asks again
TURN_SECONDS = 2


def _sender_busy(delivery, now):
    """Whether another delivery of the same sender is being attempted: the same endpoint, or for a
    callback_url the same account's requests. An attempt holds a worker until its receiver answers
    (AGUI_WEBHOOK_TIMEOUT_SECONDS at most), and workers run the agents too: any account may set a
    callback_url, and four slow ones held every worker, the chats waiting behind them.

    Claimed before this one, that is: leases are all as long, so the claims' ends order them (the
    id where two are equal), and of two claimed at once one goes on. Deferring only to lower ids let
    an older delivery's retry start beside a newer one's attempt."""
    mine = delivery.claimed_until
    flying = WebhookDelivery.objects.filter(
        Q(claimed_until__lt=mine) | Q(claimed_until=mine, pk__lt=delivery.pk),
        status=WebhookDelivery.Status.PENDING, claimed_until__gt=now).exclude(pk=delivery.pk)
    if delivery.endpoint_id:
        return flying.filter(endpoint_id=delivery.endpoint_id).exists()
    requester = ApprovalRequest.objects.filter(pk=delivery.approval_ref).values("requester_id")
    return flying.filter(endpoint=None, approval_ref__in=ApprovalRequest.objects.filter(
        requester_id__in=requester).values("pk")).exists()


def deliver(delivery_id):
    """Attempt a due delivery once; record the attempt; on failure schedule the next one with
    exponential backoff until AGUI_WEBHOOK_MAX_ATTEMPTS, then mark it failed. Returns the attempt
    (None when the delivery was not due, already done, being attempted elsewhere, or waiting its
    turn behind its sender's attempt in flight: one at a time, not counted as an attempt)."""
    now = timezone.now()
    if not _claim(delivery_id, now):
        return None
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    if _sender_busy(delivery, now):
        WebhookDelivery.objects.filter(pk=delivery.pk).update(
            claimed_until=None, next_attempt_at=now + timedelta(seconds=TURN_SECONDS))
        enqueue(delivery.pk, countdown=TURN_SECONDS)
        return None
    switched_off = delivery.endpoint_id is not None and not delivery.endpoint.is_active
    if delivery.endpoint_id:  # an endpoint's messages go where it is now (an admin corrected or moved it)
        delivery.url = delivery.endpoint.url
    body = json.dumps(delivery.payload, separators=(",", ":"), sort_keys=True)
    started = time.monotonic()
    if switched_off:  # "unticked: nothing is sent here": its retries and replays neither
        code, text, error = None, "", "not sent: the endpoint is switched off"
    else:
        code, text, error = _post(delivery, body)
    latency = int((time.monotonic() - started) * 1000)
    ok = code is not None and 200 <= code < 300
    if code is not None and not ok and not error:
        error = f"the receiver answered {code}"
    attempt = WebhookAttempt.objects.create(delivery=delivery, started_at=now, latency_ms=latency,
                                            response_status=code, response_body=text, error=error, succeeded=ok)
    delivery.attempts += 1
    delivery.claimed_until = None
    if ok:
        delivery.status, delivery.delivered_at, delivery.next_attempt_at = WebhookDelivery.Status.SUCCEEDED, timezone.now(), None
    elif switched_off or delivery.attempts >= settings.AGUI_WEBHOOK_MAX_ATTEMPTS:
        delivery.status, delivery.next_attempt_at = WebhookDelivery.Status.FAILED, None
        log.warning("webhook delivery %s to %s failed %s times: %s", delivery.pk, destinations.where_it_goes(delivery.url),
                    delivery.attempts, error)
    else:
        wait = backoff_seconds(delivery.attempts)
        delivery.next_attempt_at = timezone.now() + timedelta(seconds=wait)
        transaction.on_commit(lambda: enqueue(delivery.pk, countdown=wait))
    delivery.save(update_fields=["url", "attempts", "claimed_until", "status", "delivered_at", "next_attempt_at"])
    return attempt


def due_delivery_ids(limit=200):
    """Pending deliveries whose next attempt is overdue by more than the grace: their task was lost."""
    cutoff = timezone.now() - timedelta(seconds=SWEEP_GRACE_SECONDS)
    return list(WebhookDelivery.objects.filter(status=WebhookDelivery.Status.PENDING, next_attempt_at__lte=cutoff)
                .order_by("next_attempt_at").values_list("pk", flat=True)[:limit])


def replay(delivery_id):
    """Send a delivery again (same webhook-id), with a fresh retry budget; its attempts are kept."""
    with transaction.atomic():
        updated = WebhookDelivery.objects.filter(pk=delivery_id).exclude(status=WebhookDelivery.Status.PENDING).update(
            status=WebhookDelivery.Status.PENDING, attempts=0, next_attempt_at=timezone.now(), claimed_until=None)
        if updated:
            transaction.on_commit(lambda: enqueue(delivery_id))
    return bool(updated)
